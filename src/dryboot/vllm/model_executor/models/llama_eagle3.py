"""The drafters' own weights (``--speculative-config``): what the proposer's ``load_model`` adds
to the last pipeline stage's ``Model loading took`` (vLLM builds the drafter inside the same
``DeviceMemoryProfiler`` as the target, ``v1/spec_decode/llm_base_proposer.py``).

Modelled: EAGLE-3 heads as the class vLLM's registry names for them builds them (the head
config's architecture rewritten as ``EAGLEConfig`` does, ``Eagle3<arch>``): ``llama_eagle3.py``
``Eagle3LlamaForCausalLM`` (Llama layers; ``LlamaForCausalLMEagle3``, ``Eagle3MiniMaxM2``,
``Eagle3Qwen2_5vl``, ``Eagle3Qwen3vl``) or ``qwen3_eagle3.py`` ``Eagle3Qwen3ForCausalLM`` (Qwen3
layers: q/k norms ``[head_dim]``, no o_proj / MLP bias), per rank, in the target's dtype:

* ``num_hidden_layers`` layers: ``qkv_proj`` over ``2 H`` inputs in the first (the embedding and
  the hidden state), ``H`` in the others, ``[(heads / TP + 2 kv_r) x head_dim, in]``, ``o_proj``
  ``[H, heads x head_dim / TP]``, ``gate_up_proj`` ``[2 I / TP, H]``, ``down_proj`` ``[H, I / TP]``,
  three RMSNorms ``[H]`` (``input_layernorm``, ``hidden_norm``, ``post_attention_layernorm``), the
  attention layer's six float32 scalars; biases with ``attention_bias`` (qkv; Llama's o_proj also
  with ``bias``) and ``mlp_bias`` (Llama's);
* with aux hidden states (``eagle_config.use_aux_hidden_state``, default on): ``fc`` ``[H, n_aux x
  target_hidden_size]`` (replicated; ``target_hidden_size`` defaults to the head's own ``H``;
  ``n_aux`` from ``num_aux_hidden_states`` (Qwen3's also ``num_aux_layers``) or the aux layer ids,
  else 3), ``input_norm`` ``[n_aux x target_hidden_size]`` with ``norm_before_fc``, ``fc_norm``
  ``n_aux x [target_hidden_size]`` with ``fc_norm``; the final norm ``[H]``;
* ``draft_id_to_target_id`` ``[draft_vocab]`` int64 (through 0.29 always; from 0.30 only for a
  draft vocabulary other than the target's); ``mask_hidden`` ``[1, fc input]`` with
  ``parallel_drafting``;
* a rotary table ``[positions, head_dim]`` over ``max(max_position_embeddings, the target's
  max_model_len)`` (``SpeculativeConfig._maybe_override_draft_max_position_embeddings``), unless
  ``get_rope``'s cache returns the target's own table (same positions, size, base, scaling and
  rotary fraction; a Gemma-3 target's per-layer-type tables never); an ``mrope`` head's is the
  default table;
* the embedding ``[pad64(vocab) / TP, H]`` and the LM head ``[pad64(draft_vocab) / TP, H]``,
  each **own or shared with the target's**: vLLM decides at load time
  (``_maybe_share_embeddings`` / ``_maybe_share_lm_head``): a checkpoint without the tensor
  (``process_eagle_weight``: a name containing ``embed_tokens`` / ``lm_head``) shares the
  target's; one with it keeps its own unless ``torch.equal`` finds it identical to the target's
  (only possible at the same shape); the embedding is shared only at the target's width and only
  without pipeline parallelism.

From the config alone the choice is unknown: an interval (``low``: both shared, ``high``: both
own). With the drafter checkpoint's tensor names it is decided where vLLM decides it from names,
and where the shapes differ (``torch.equal`` is then false); an own tensor of the target's shape
stays an interval (vLLM compares values).

DFlash drafters (``qwen3_dflash.py``) follow the same sharing rules (:func:`_dflash`), EAGLE-1
heads too (``models/llama_eagle.py``, no LM head of their own); MTP layers are the target's
(``models/mtp.py``, always shared, decided); Medusa heads (``models/medusa.py``) share nothing.
Not modelled (refused by name): other drafters (``deepseek_eagle3.py``'s EAGLE-3 heads, other
EAGLE-1 classes), a quantized drafter; a head vLLM's registry has no class for is refused as vLLM
refuses it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.models.registry import (
    DEEPSEEK_MTP_MODEL_TYPES,
    drafter_architecture,
    in_release_registry,
    is_draft_model,
    registry_file,
)

#: the architectures vLLM builds as ``Eagle3LlamaForCausalLM`` (``EAGLEConfig``'s rewrites included)
EAGLE3_LLAMA = frozenset({"LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM", "LlamaForCausalLM", "Qwen3ForCausalLM"})


@dataclass(frozen=True)
class DrafterWeights:
    """The drafter's weights on the last stage's rank: ``low`` (embedding and LM head shared with
    the target's) and ``high`` (both its own) as far as the inputs leave it open; equal when
    decided. ``how``: what decided it, or why it is open."""

    low: W.RankWeights
    high: W.RankWeights
    how: str

    @property
    def decided(self) -> bool:
        return self.low.allocated_bytes == self.high.allocated_bytes


def _opt(config: Mapping[str, Any], key: str, default: int) -> int:
    """An optional non-negative integer field (``default`` when absent or null)."""
    return default if config.get(key) is None else W._int(config, key)


def _positive(config: Mapping[str, Any], key: str) -> int:
    v = W._int(config, key)
    if v == 0:
        raise InputError("config.json", key, "must be positive, got 0")
    return v


def _head_dim(config: Mapping[str, Any]) -> int:
    """``head_dim``, else ``hidden_size / num_attention_heads``."""
    if config.get("head_dim") is not None:
        return W._int(config, "head_dim")
    return W._int(config, "hidden_size") // _positive(config, "num_attention_heads")


def _ids(config: Mapping[str, Any], key: str) -> list[Any]:
    v = config.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise InputError("config.json", key, f"must be a list of layer indices, got {v!r}")
    return v


def _rope_key(config: Mapping[str, Any], positions: int, hd: int) -> tuple[Any, ...]:
    """What ``get_rope``'s cache tells tables apart by: positions, size, base and scaling."""
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    theta = config.get("rope_theta")
    if theta is None:
        theta = (rope if isinstance(rope, Mapping) else {}).get("rope_theta", 10000)
    if isinstance(theta, bool) or not isinstance(theta, (int, float)):
        raise InputError("config.json", "rope_theta", f"must be a number, got {theta!r}")
    scaling = (
        tuple(sorted((k, str(v)) for k, v in rope.items() if k != "rope_theta")) if isinstance(rope, Mapping) else ()
    )
    partial = config.get(
        "partial_rotary_factor", (rope if isinstance(rope, Mapping) else {}).get("partial_rotary_factor")
    )
    # per-layer-type rope parameters (Gemma-3's rope_local_base_freq): get_rope's key holds that
    # layer type's own dictionary, never a head's
    per_type = config.get("rope_local_base_freq") is not None
    return positions, hd, float(theta), scaling, str(partial or 1.0), per_type


def _mrope_as_default(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """``config`` with a multimodal RoPE named ``mrope`` read as transformers reads it: the
    ``default`` rope type with its ``mrope_section`` (the table is the plain one)."""
    out = dict(config)
    for key in ("rope_parameters", "rope_scaling"):
        rope = config.get(key)
        if isinstance(rope, Mapping) and "mrope" in (rope.get("rope_type"), rope.get("type")):
            out[key] = {**{k: v for k, v in rope.items() if k != "type"}, "rope_type": "default"}
    return out


#: drafter methods whose walk lives in a module that builds on this one (``llama_eagle``: EAGLE-1),
#: registered by that module at its import (the loader imports it): method -> walk
DRAFTER_WALKS: dict[str, Callable[..., DrafterWeights]] = {}


def drafter_weights(
    target_config: Mapping[str, Any],
    draft_config: Mapping[str, Any],
    method: str,
    par: W.Parallel,
    draft_tensors: Collection[str] | None = None,
    *,
    max_model_len: int,
    dtype: str = "auto",
    parallel_drafting: bool = False,
    num_speculative_tokens: int | None = None,
    vllm_version: str = "0.28.0",
    hf_quant: Mapping[str, Any] | None = None,
) -> DrafterWeights:
    """The drafter's own weights per rank of the last pipeline stage (vLLM 0.28.0's proposer
    ``load_model``), in bytes and 512-byte allocator blocks (:class:`DrafterWeights`).

    :param draft_tensors: the drafter checkpoint's tensor names (safetensors headers), or ``None``.
    :param max_model_len: the target's ``max_model_len`` (the drafter's rotary table spans at
        least it).
    :param parallel_drafting: ``--speculative-config``'s ``parallel_drafting`` (an EAGLE-3 head
        then holds a ``mask_hidden`` buffer ``[1, fc input]``).
    :param num_speculative_tokens: ``--speculative-config``'s (a Medusa drafter builds that many
        heads).
    :param vllm_version: the release (0.27.1, 0.28.0, 0.30.0 and 0.33.0 recorded): 0.27's
        attention layers hold three float32 range scalars more (a draft model with other than
        attention layers is refused there); from 0.30 an EAGLE-3 head builds
        ``draft_id_to_target_id`` only when its draft vocabulary differs from the target's; 0.33
        has no Medusa drafter (refused, as vLLM refuses the method).
    :param hf_quant: the target's ``hf_quant_config.json`` (ModelOpt's older form), which an MTP
        drafter's layers are quantized by when ``config.json`` has no ``quantization_config``.
    :raises InputError: a drafter or a drafter field whose weights are not modelled (named).
    """
    if (target_config.get("architectures") or [None])[0] == "DeepseekV4ForCausalLM":
        # with an EAGLE or MTP drafter the DeepSeek-V4 target holds one more buffer
        # (``_mtp_hidden_buffer``, [max_num_batched_tokens, hc_mult x hidden]) that its walk leaves out
        raise InputError(
            "--speculative-config",
            "method",
            "a DeepSeek-V4 target's drafter weights and its MTP hidden-state buffer are not modelled",
        )
    if method == "mtp" or method.endswith("_mtp"):
        from dryboot.vllm.model_executor.models.mtp import mtp_weights  # at call: only an MTP drafter needs it

        w = mtp_weights(target_config, par, dtype=dtype, hf_quant=hf_quant, vllm_version=vllm_version)
        dw = DrafterWeights(w, w, "the target's MTP layers; embedding and LM head shared with the target")
        if not W.attention_range_blocks(vllm_version):
            return dw
        text = target_config.get("text_config") or target_config
        n = next((W._int(text, k) for k in ("mtp_num_hidden_layers", "num_nextn_predict_layers") if text.get(k)), 1)
        return _with_ranges(dw, n)
    if method == "medusa":
        if not in_release_registry("MedusaModel", vllm_version):
            raise InputError(
                "--speculative-config",
                "method",
                f"vLLM {vllm_version} has no Medusa drafter (its SpeculativeConfig refuses method medusa)",
            )
        from dryboot.vllm.model_executor.models.medusa import medusa_weights  # at call: Medusa drafters only

        w = medusa_weights(target_config, draft_config, par, dtype=dtype, num_speculative_tokens=num_speculative_tokens)
        return DrafterWeights(w, w, "Medusa heads: their own blocks and LM heads (vLLM shares nothing)")
    if method == "draft_model":
        dw = _draft_model(target_config, draft_config, par, dtype)
        if not W.attention_range_blocks(vllm_version):
            return dw
        text = draft_config.get("text_config") or draft_config
        kinds = set(text.get("layer_types") or ["full_attention"])
        if not kinds <= {"full_attention", "sliding_attention"}:
            raise InputError(
                "--speculative-config",
                "model",
                f"a draft model with {', '.join(sorted(kinds))} layers on vLLM {vllm_version} is not modelled",
            )
        return _with_ranges(dw, W._int(text, "num_hidden_layers"))
    ranges = W.attention_range_blocks(vllm_version) > 0  # 0.27's attention layers: q/k/v_range scalars too
    if method in DRAFTER_WALKS:
        walk = DRAFTER_WALKS[method]
        dw = walk(target_config, draft_config, par, draft_tensors, max_model_len=max_model_len, dtype=dtype)
        return _with_ranges(dw, W._int(draft_config, "num_hidden_layers")) if ranges else dw
    archs = list(draft_config.get("architectures") or [])
    if method == "dflash" and archs[:1] == ["DFlashDraftModel"]:
        config = {**QWEN3_DEFAULTS, **draft_config}
        dw = _dflash(target_config, config, par, draft_tensors, dtype)
        return _with_ranges(dw, W._int(config, "num_hidden_layers")) if ranges else dw
    if method != "eagle3":
        raise InputError(
            "--speculative-config",
            "method",
            f"the drafter's weights ({method}, {archs[0] if archs else 'no architectures'}) are not modelled "
            "(EAGLE-1, EAGLE-3, DFlash, MTP, Medusa and draft models are)",
        )
    dw = _eagle3(
        target_config,
        draft_config,
        par,
        draft_tensors,
        max_model_len=max_model_len,
        dtype=dtype,
        parallel_drafting=parallel_drafting,
        own_d2t=_release(vllm_version) < (0, 30),
        vllm_version=vllm_version,
    )
    return _with_ranges(dw, W._int(draft_config, "num_hidden_layers")) if ranges else dw


def _with_ranges(dw: DrafterWeights, layers: int) -> DrafterWeights:
    """``dw`` plus vLLM 0.27's three float32 ``q_range`` / ``k_range`` / ``v_range`` scalars per
    attention layer (one 512-byte block each)."""
    low, high = _copy(dw.low), _copy(dw.high)
    for r in (low, high):
        for _ in range(W.ATTENTION_RANGE_BLOCKS * layers):
            r.add("attention scales", 4)
    return DrafterWeights(low, high, dw.how)


#: the file of each vLLM EAGLE-3 head class (vLLM 0.28.0's registry) -> the decoder layer it builds:
#: Llama's, or Qwen3's (q/k norms, no o_proj / MLP bias)
EAGLE3_LAYOUTS: Mapping[str, str] = {
    "llama_eagle3.py": "llama",
    "qwen3_eagle3.py": "qwen3",
    "deepseek_eagle3.py": "mla",
}


#: the builder of ``deepseek_eagle3.py``'s MLA heads (:func:`register_mla_head`): that module reads
#: this one's helpers, so this one does not import it (the models package imports every module)
_MLA_HEAD: list[Callable[..., DrafterWeights]] = []


def register_mla_head(builder: Callable[..., DrafterWeights]) -> None:
    """Set the builder :func:`drafter_weights` calls for an EAGLE-3 head of ``deepseek_eagle3.py``."""
    _MLA_HEAD[:] = [builder]


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:2] if p.isdigit())


def _flag(config: Mapping[str, Any], key: str) -> bool:
    v = config.get(key)
    if v is not None and not isinstance(v, bool):
        raise InputError("config.json", key, f"must be true or false, got {v!r}")
    return bool(v)


def _eagle3(
    target_config: Mapping[str, Any],
    draft_config: Mapping[str, Any],
    par: W.Parallel,
    draft_tensors: Collection[str] | None,
    *,
    max_model_len: int,
    dtype: str,
    parallel_drafting: bool = False,
    own_d2t: bool = True,
    vllm_version: str = "0.28.0",
) -> DrafterWeights:
    """An EAGLE-3 head as vLLM's class for its architecture builds it (:data:`EAGLE3_LAYOUTS`;
    the module text lists the tensors)."""
    archs = list(draft_config.get("architectures") or [])
    if not archs:
        raise InputError("--speculative-config", "architectures", "the EAGLE-3 head's config names no architecture")
    # EAGLEConfig's rewrite (of DeepSeekMTPModel for a DeepSeek-V3 model_type: SpeculativeConfig's
    # hf_config_override); vLLM's refusal of a name its registry lacks
    mtp = draft_config.get("model_type") in DEEPSEEK_MTP_MODEL_TYPES
    arch = drafter_architecture(
        "eagle3", "DeepSeekMTPModel" if mtp else str(archs[0]), "--speculative-config", vllm_version
    )
    built_by = registry_file(arch) if is_draft_model(arch) else None
    layout = EAGLE3_LAYOUTS.get(built_by or "")
    if built_by is not None and layout is None:
        raise InputError(
            "--speculative-config",
            "architectures",
            f"the drafter's weights ({arch}, vLLM's {built_by}) are not modelled "
            "(EAGLE-3 heads of llama_eagle3.py, qwen3_eagle3.py and deepseek_eagle3.py are)",
        )
    if layout is None:
        raise InputError(
            "--speculative-config", "architectures", f"{arch} is no EAGLE-3 head class of vLLM's: not modelled"
        )
    if layout == "mla":
        if not _MLA_HEAD:  # pragma: no cover - the package imports deepseek_eagle3, which registers it
            raise InputError("--speculative-config", "architectures", f"{arch}: MLA EAGLE-3 heads are not modelled")
        return _MLA_HEAD[0](
            target_config,
            draft_config,
            par,
            draft_tensors,
            max_model_len=max_model_len,
            dtype=dtype,
            parallel_drafting=parallel_drafting,
            own_d2t=own_d2t,
            vllm_version=vllm_version,
        )
    if "quantization_config" in draft_config:
        raise InputError(
            "--speculative-config", "quantization_config", "a quantized drafter's weights are not modelled"
        )
    eagle = draft_config.get("eagle_config") or {}
    if not isinstance(eagle, Mapping):
        raise InputError("config.json", "eagle_config", "must be an object")
    tp = par.tp
    ab = W.model_dtype_bytes(target_config, dtype)
    h = W._int(draft_config, "hidden_size")
    heads = _positive(draft_config, "num_attention_heads")
    kv = _opt(draft_config, "num_key_value_heads", heads)
    hd = _head_dim(draft_config)
    inter = W._int(draft_config, "intermediate_size")
    vocab = W._int(draft_config, "vocab_size")
    draft_vocab = _opt(draft_config, "draft_vocab_size", vocab)
    qkv_bias = _flag(draft_config, "attention_bias")
    if layout == "llama":
        # LlamaDecoderLayer: o_proj's bias is attention_bias or bias; the MLP's is mlp_bias
        o_bias = qkv_bias or _flag(draft_config, "bias")
        mlp_bias = _flag(draft_config, "mlp_bias")
    else:
        o_bias = mlp_bias = False
    core = W.RankWeights(source="config")
    for i in range(W._int(draft_config, "num_hidden_layers")):
        # the first layer's qkv_proj reads the embedding and the hidden state side by side (2 H)
        _attention_mlp_layer(
            core,
            h=h,
            qkv_in=2 * h if i == 0 else h,
            heads=heads,
            kv=kv,
            hd=hd,
            inter=inter,
            tp=tp,
            ab=ab,
            qk_norm=layout == "qwen3",
            qkv_bias=qkv_bias,
            o_bias=o_bias,
            mlp_bias=mlp_bias,
        )
        core.add("norm", h * ab)  # hidden_norm
    use_aux = eagle.get("use_aux_hidden_state", True)
    fc_in = h
    if use_aux:
        h_t = _opt(draft_config, "target_hidden_size", h)
        n_aux = _eagle3_aux(draft_config, eagle, layout)
        fc_in = n_aux * h_t
        norm_before_fc = eagle.get("norm_before_fc", draft_config.get("norm_before_fc"))
        if norm_before_fc:
            core.add("norm", fc_in * ab)  # input_norm over the concatenated hidden states
        if _flag(draft_config, "fc_norm"):
            for _ in range(n_aux):
                core.add("norm", h_t * ab)  # fc_norm, one per target hidden state
        core.add("fc", h * fc_in * ab)
    core.add("norm", h * ab)
    target = target_config.get("text_config") or target_config
    # own_d2t: built whatever the vocabularies (through 0.29); else only when they differ
    if own_d2t or draft_vocab != W._int(target, "vocab_size"):
        core.add("draft_id_to_target_id", draft_vocab * 8)
    if parallel_drafting:
        core.add("mask_hidden", fc_in * ab, buffer=True)
    positions = max(_opt(draft_config, "max_position_embeddings", 0), max_model_len)
    target = target_config.get("text_config") or target_config
    t_hd = _head_dim(target)
    t_positions = _opt(target, "max_position_embeddings", 0)
    rope = _mrope_as_default(draft_config)
    if _rope_key(rope, positions, hd) != _rope_key(target, t_positions, t_hd):
        core.add("rotary", W._rotary_bytes({**rope, "max_position_embeddings": positions}, hd, ab), buffer=True)
    return _with_embedding_and_head(core, target, par, draft_tensors, h=h, vocab=vocab, draft_vocab=draft_vocab, ab=ab)


def _eagle3_aux(config: Mapping[str, Any], eagle: Mapping[str, Any], layout: str) -> int:
    """How many target hidden states ``fc`` concatenates: Llama's class reads
    ``num_aux_hidden_states``, else ``eagle_config.eagle_aux_hidden_state_layer_ids``; Qwen3's
    ``num_aux_layers``, ``num_aux_hidden_states``, then the layer ids at the top level or in
    ``eagle_config``; both 3 when none is given."""
    keys = ("num_aux_hidden_states",) if layout == "llama" else ("num_aux_layers", "num_aux_hidden_states")
    for key in keys:
        if config.get(key) is not None:
            return _positive(config, key)
    ids = _ids(eagle, "eagle_aux_hidden_state_layer_ids")
    if layout != "llama":
        ids = _ids(config, "eagle_aux_hidden_state_layer_ids") or ids
    return len(ids) or 3


def _with_embedding_and_head(
    core: W.RankWeights,
    target: Mapping[str, Any],
    par: W.Parallel,
    draft_tensors: Collection[str] | None,
    *,
    h: int,
    vocab: int,
    draft_vocab: int,
    ab: int,
    has_head: bool = True,
) -> DrafterWeights:
    """``core`` plus the drafter's embedding and LM head, each own, shared or open (vLLM's
    ``_maybe_share_embeddings`` / ``_maybe_share_lm_head``; the module text). ``has_head``: the
    drafter's class builds an LM head (EAGLE-1's computes logits with the target's)."""
    tp = par.tp

    def pad(n: int) -> int:
        return W.padded_vocab_per_rank(n, tp, "the drafter's padded vocabulary")

    h_t = W._int(target, "hidden_size")
    embed_bytes = pad(vocab) * h * ab
    head_bytes = pad(draft_vocab) * h * ab
    t_vocab = W._int(target, "vocab_size")
    same_embed = h == h_t and pad(vocab) == pad(t_vocab)
    same_head = h == h_t and pad(draft_vocab) == pad(t_vocab)
    # each part: True own, False shared, None open
    if draft_tensors is None:
        embed: bool | None = None if (h == h_t and par.pp == 1) else True
        head: bool | None = None
        how = "from the config alone: whether the drafter keeps its own embedding and LM head is decided at load time"
    else:
        names = list(draft_tensors)
        has_embed = any("embed_tokens" in n for n in names)
        has_head = any("lm_head" in n for n in names)
        embed = True if (par.pp > 1 or h != h_t) else (None if has_embed and same_embed else has_embed)
        head = None if has_head and same_head else has_head
        how = "from the drafter checkpoint's tensor names" + (
            ""
            if embed is not None and head is not None
            else " (an own tensor of the target's shape: vLLM compares values)"
        )
    if not has_head:
        head = False
    low, high = _copy(core), _copy(core)
    for part, nbytes, kind in ((embed, embed_bytes, "embedding"), (head, head_bytes, "lm_head")):
        if part is not False:
            high.add(kind, nbytes)
        if part is True:
            low.add(kind, nbytes)
    return DrafterWeights(low, high, how)


#: transformers' ``Qwen3Config`` defaults for the fields a DFlash drafter's layers read (a config
#: that leaves them out, as the reference deployment's drafter does, gets these from vLLM)
QWEN3_DEFAULTS: Mapping[str, Any] = {
    "vocab_size": 151936,
    "hidden_size": 4096,
    "intermediate_size": 22016,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "head_dim": 128,
    "max_position_embeddings": 32768,
}


def _attention_mlp_layer(
    r: W.RankWeights,
    *,
    h: int,
    qkv_in: int,
    heads: int,
    kv: int,
    hd: int,
    inter: int,
    tp: int,
    ab: int,
    qk_norm: bool,
    norms: int = 2,
    qkv_bias: bool = False,
    o_bias: bool = False,
    mlp_bias: bool = False,
) -> None:
    """One decoder layer: ``qkv_proj`` over ``qkv_in`` inputs, ``o_proj``, optional
    ``q_norm`` / ``k_norm`` ``[head_dim]``, ``gate_up_proj`` / ``down_proj``, ``norms`` layer norms
    (EAGLE-1's first layer drops its ``input_layernorm``) and the attention layer's six float32
    scalars; the biases where asked (column-parallel ones split over TP, row-parallel ones
    ``[H]`` whole)."""
    heads_r = W._divide(heads, tp, "the drafter's attention heads")
    if kv >= tp:
        kv_r = W._divide(kv, tp, "the drafter's KV heads")
    else:
        kv_r = 1  # one KV head replicated per rank below TP
    inter_r = W._divide(inter, tp, "the drafter's intermediate size")
    r.add("attention", (heads_r + 2 * kv_r) * hd * qkv_in * ab)
    r.add("attention", h * heads_r * hd * ab)
    if qkv_bias:
        r.add("attention", (heads_r + 2 * kv_r) * hd * ab)
    if o_bias:
        r.add("attention", h * ab)
    if mlp_bias:
        r.add("mlp", 2 * inter_r * ab)
        r.add("mlp", h * ab)
    if qk_norm:
        r.add("norm", hd * ab)
        r.add("norm", hd * ab)
    r.add("mlp", 2 * inter_r * h * ab)
    r.add("mlp", h * inter_r * ab)
    for _ in range(norms):
        r.add("norm", h * ab)
    for _scale in range(6):
        r.add("attention scales", 4)


def _aux_layers(config: Mapping[str, Any]) -> int:
    """How many target hidden states ``fc`` takes (``get_eagle3_aux_layers_from_config``: the
    first of ``eagle_aux_hidden_state_layer_ids``, ``dflash_config.target_layer_ids``,
    ``dspark_target_layer_ids``, ``target_layer_ids``, ``dflash_config`` / ``eagle_config``
    ``layer_ids``; else every draft layer)."""
    dflash = config.get("dflash_config") or {}
    eagle = config.get("eagle_config") or {}
    if not isinstance(dflash, Mapping) or not isinstance(eagle, Mapping):
        raise InputError("config.json", "dflash_config", "must be an object")
    for ids in (
        _ids(config, "eagle_aux_hidden_state_layer_ids"),
        _ids(dflash, "target_layer_ids"),
        _ids(config, "dspark_target_layer_ids"),
        _ids(config, "target_layer_ids"),
        _ids(dflash, "layer_ids"),
        _ids(eagle, "layer_ids"),
    ):
        if ids:
            return len(ids)
    return W._int(config, "num_hidden_layers")


def _dflash(
    target_config: Mapping[str, Any],
    config: Mapping[str, Any],
    par: W.Parallel,
    draft_tensors: Collection[str] | None,
    dtype: str,
) -> DrafterWeights:
    """A DFlash drafter (``qwen3_dflash.py`` ``DFlashQwen3ForCausalLM``): per layer Qwen3's
    attention (``qkv_proj`` over ``H``, q/k norms) and MLP; ``fc`` ``[H, n_aux x
    target_hidden_size]`` (the draft's ``target_hidden_size``, else its own ``H``; replicated),
    ``hidden_norm``, ``norm``, ``mask_embedding`` ``[H]``; ``draft_id_to_target_id``
    ``[draft_vocab]`` int64 only when the draft vocabulary differs from the target's; one
    rotary table ``[max_position_embeddings, head_dim]`` (no raise to the target's length:
    vLLM raises it for EAGLE only) unless the target's is the same table; the embedding and LM
    head as EAGLE-3's."""
    dflash = config.get("dflash_config") or {}
    if not isinstance(dflash, Mapping):
        raise InputError("config.json", "dflash_config", "must be an object")
    if config.get("attention_bias") or dflash.get("attention_sink_bias") or config.get("add_swa_attention_sink_bias"):
        raise InputError("--speculative-config", "attention_bias", "this DFlash drafter's layout is not modelled")
    if dflash.get("use_aux_hidden_state") is False or "quantization_config" in config:
        raise InputError("--speculative-config", "dflash_config", "this DFlash drafter's layout is not modelled")
    tp = par.tp
    ab = W.model_dtype_bytes(target_config, dtype)
    target = target_config.get("text_config") or target_config
    h = W._int(config, "hidden_size")
    heads = _positive(config, "num_attention_heads")
    hd = _head_dim(config)
    core = W.RankWeights(source="config")
    core.add("mask_embedding", h * ab)
    for _ in range(W._int(config, "num_hidden_layers")):
        _attention_mlp_layer(
            core,
            h=h,
            qkv_in=h,
            heads=heads,
            kv=_opt(config, "num_key_value_heads", heads),
            hd=hd,
            inter=W._int(config, "intermediate_size"),
            tp=tp,
            ab=ab,
            qk_norm=True,
        )
    core.add("fc", h * _aux_layers(config) * _opt(config, "target_hidden_size", h) * ab)
    core.add("norm", h * ab)
    core.add("norm", h * ab)
    vocab = W._int(config, "vocab_size")
    draft_vocab = _opt(config, "draft_vocab_size", vocab)
    if draft_vocab != W._int(target, "vocab_size"):
        core.add("draft_id_to_target_id", draft_vocab * 8)
    positions = W._int(config, "max_position_embeddings")
    # set_default_rope_theta: 1e6 where the drafter's config gives none
    rope = {**config, "rope_theta": 1000000 if config.get("rope_theta") is None else config["rope_theta"]}
    t_hd = _head_dim(target)
    if _rope_key(rope, positions, hd) != _rope_key(target, _opt(target, "max_position_embeddings", 0), t_hd):
        core.add("rotary", W._rotary_bytes(config, hd, ab), buffer=True)
    return _with_embedding_and_head(core, target, par, draft_tensors, h=h, vocab=vocab, draft_vocab=draft_vocab, ab=ab)


def _draft_model(
    target_config: Mapping[str, Any], draft_config: Mapping[str, Any], par: W.Parallel, dtype: str
) -> DrafterWeights:
    """A whole draft model (``v1/spec_decode/draft_model.py``: it shares nothing with the target,
    its ``_maybe_share_*`` do nothing), built at the target's TP in the target's dtype: the walk
    of its config (pipeline stage: the whole model), less its rotary table when ``get_rope``'s
    cache hands back the target's (same positions, size, base and scaling). Decided."""
    target = target_config.get("text_config") or target_config
    text = draft_config.get("text_config") or draft_config
    if dtype == "auto":  # the draft ModelConfig takes the target's dtype
        name = str(target.get("torch_dtype") or target.get("dtype") or target_config.get("torch_dtype") or "bfloat16")
        dtype = "bfloat16" if name.replace("torch.", "") == "float32" else name.replace("torch.", "")
    w = W.rank_weights(draft_config, W.Parallel(tp=par.tp), dtype=dtype, language_model_only=True)
    ab = W.model_dtype_bytes(target_config, dtype)
    hd = _head_dim(text)
    t_hd = _head_dim(target)
    positions = _opt(text, "max_position_embeddings", 0)
    if _rope_key(text, positions, hd) == _rope_key(target, _opt(target, "max_position_embeddings", 0), t_hd):
        table = W._rotary_bytes(text, hd, ab)
        w = _copy(w)
        w.buffer_bytes -= table
        w.allocated_bytes -= -(-table // W.ALLOC_ROUND) * W.ALLOC_ROUND
    return DrafterWeights(w, w, "a draft model: its own weights whole (vLLM shares nothing with the target)")


def _copy(r: W.RankWeights) -> W.RankWeights:
    return W.RankWeights(r.param_bytes, r.buffer_bytes, r.allocated_bytes, dict(r.by_kind), r.source, list(r.notes))
