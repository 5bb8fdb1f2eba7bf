"""Moondream3 (``moondream3.py``, ``Moondream3ForCausalLM`` and ``HfMoondream``, vLLM 0.27.1-0.33.0):
the model as ``Moondream3ForCausalLM.__init__`` builds it on one rank, from vLLM's own
``Moondream3Config`` (``transformers_utils/configs/moondream3.py``: the file's ``config.text``,
``config.text.moe`` and ``config.vision`` objects over the config classes' defaults), in the model
dtype unless said:

* on every pipeline stage (``Moondream3TextModel`` builds them outside ``make_layers``): ``wte``
  (``VocabParallelEmbedding`` ``[vocab padded / TP, dim]``), ``post_ln`` (LayerNorm ``[dim]``,
  weight and bias) and the untied ``lm_head`` (``ParallelLMHead`` with its bias, ``[vocab padded /
  TP, dim]`` + ``[vocab padded / TP]``; the class ties nothing);
* per decoder layer of the stage: ``ln`` (LayerNorm ``[dim]`` + bias); ``Moondream3Attention``:
  ``qkv_proj`` (``QKVParallelLinear`` with bias: heads / TP, KV heads / TP or one replicated),
  ``out_proj`` (``RowParallelLinear`` ``[dim, dim / TP]``, its bias whole), the tau parameters
  ``tau_alpha`` ``[heads / TP]``, ``tau_wq`` and ``tau_wv`` ``[heads / TP, 3 x dim]`` (split by
  heads, the full ``3 x dim`` width on every rank), vLLM's ``Attention`` scale buffers; the MLP:
  below ``moe.start_layer`` ``Moondream3TextMLP`` (``fc1`` ``[ff_dim / TP, dim]`` + bias, ``fc2``
  ``[dim, ff_dim / TP]`` + bias whole), from it ``Moondream3TextMoE``: the router ``gate``
  (``ReplicatedLinear``, ``GateLinear`` on 0.31+, ``[E, dim]`` + ``[E]``), the rank's
  ``E / TP`` whole experts (``fc1_weight`` ``[E / TP, 2 x expert_inner_dim, dim]``, ``fc2_weight``
  ``[E / TP, dim, expert_inner_dim]``: the ``w13`` / ``w2`` of ``weights.experts_bytes``), and two
  buffers: the int32 ``_expert_map`` ``[E]`` and the float32 ``_fused_w1_bias`` ``[E / TP, 2 x
  expert_inner_dim]``;
* one rotary table for the stage's layers (``get_rope``'s shared cache): ``[max_context, 32]``
  (``partial_rotary_factor`` ``32 / head_dim``);
* the image tower (``_mark_tower_model``: dropped by ``--language-model-only`` or an image limit
  of 0; on 0.33 on the first pipeline stage alone, ``compose.towers_on_stage``):
  ``Moondream3VisionEncoder`` (``patch_emb`` ``nn.Linear`` ``[enc_dim, 3 x P x P]`` + bias,
  ``pos_emb`` ``[1, (crop_size // P)^2, enc_dim]``, ``enc_n_layers`` blocks sharded as
  ``towers.vit_block``, ``post_ln``) and ``Moondream3VisionProjection`` (``fc1`` ``[proj_inner_dim
  / TP, 2 x enc_dim]`` + bias, ``fc2`` ``[dim, proj_inner_dim / TP]`` + bias whole).

Refused by name: a quantized checkpoint, checkpoint headers (not mapped), expert parallelism (the
class splits experts over TP only; not recorded), ``moe.n_experts`` TP does not divide (the class
keeps ``n_experts // TP`` experts per rank, dropping the rest), heads or widths TP does not divide.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, config_only, towers_on_stage
from dryboot.vllm.model_executor.models.towers import linear, tensors, vit_block
from dryboot.vllm.models.wrappers import _moondream3_text

#: ``Moondream3TextConfig``'s defaults of what the weights read
TEXT_DEFAULTS: dict[str, Any] = {
    "dim": 2048,
    "ff_dim": 8192,
    "n_layers": 24,
    "vocab_size": 51200,
    "max_context": 4096,
    "n_heads": 32,
    "n_kv_heads": 32,
}
#: ``Moondream3TextConfig``'s defaults of its ``moe`` object
MOE_DEFAULTS: dict[str, Any] = {"start_layer": 4, "n_experts": 64, "expert_inner_dim": 1024}
#: ``Moondream3VisionConfig``'s defaults of what the tower reads
VISION_DEFAULTS: dict[str, Any] = {
    "enc_dim": 1152,
    "enc_patch_size": 14,
    "enc_n_layers": 27,
    "enc_ff_dim": 4304,
    "enc_n_heads": 16,
    "proj_inner_dim": 8192,
    "crop_size": 378,
}
#: the rotary dimensions ``Moondream3Attention`` asks of ``get_rope`` (``32 / head_dim`` of each head)
ROTARY = 32


def _object(parent: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """``parent[key]`` as vLLM's config class reads it (absent or null: ``{}``).

    :raises InputError: not an object (named ``where``)."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError("config.json", where, "must be an object (Moondream3Config reads it)")
    return value


def sections(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The text, MoE and vision fields of a Moondream3 ``config.json`` over vLLM's defaults
    (``config.text``, ``config.text.moe``, ``config.vision``).

    :raises InputError: one of those not an object, a field read not a non-negative integer."""
    root = _object(config, "config", "config")
    text = _object(root, "text", "config.text")
    sub = (
        ({**TEXT_DEFAULTS, **text}, TEXT_DEFAULTS, "config.text"),
        ({**MOE_DEFAULTS, **_object(text, "moe", "config.text.moe")}, MOE_DEFAULTS, "config.text.moe"),
        ({**VISION_DEFAULTS, **_object(root, "vision", "config.vision")}, VISION_DEFAULTS, "config.vision"),
    )
    out = []
    for values, defaults, where in sub:
        for key in defaults:
            v = values[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InputError("config.json", f"{where}.{key}", f"missing or not a non-negative integer ({v!r})")
        out.append({k: values[k] for k in defaults})
    return out[0], out[1], out[2]


def rotary_width(head_dim: int) -> int:
    """The rotary table's columns: ``get_rope``'s ``int(head_dim x (32 / head_dim))`` dimensions,
    cosines and sines of half of them rounded up each."""
    rotary = int(head_dim * (ROTARY / head_dim))
    return 2 * -(-rotary // 2)


def vision_counts(v: Mapping[str, Any], dim: int, tp: int) -> list[int]:
    """The image tower and projector's tensors on one rank, in elements (module docstring).

    :raises InputError: ``enc_n_heads`` not dividing ``enc_dim`` (the QKV width would not be
        ``3 x enc_dim``: not modelled) or TP; ``enc_ff_dim`` / ``proj_inner_dim`` TP does not divide."""
    d, p, heads = v["enc_dim"], v["enc_patch_size"], v["enc_n_heads"]
    if heads < 1 or d % heads:
        raise InputError(
            "config.json", "config.vision.enc_n_heads", f"must divide config.vision.enc_dim ({d}): not modelled"
        )
    W._divide(heads, tp, "the vision tower's enc_n_heads")
    if p < 1:
        raise InputError("config.json", "config.vision.enc_patch_size", "must be positive")
    pi_r = W._divide(v["proj_inner_dim"], tp, "the vision projection's proj_inner_dim")
    counts = [*linear(d, 3 * p * p), (v["crop_size"] // p) ** 2 * d]
    counts += vit_block(d, v["enc_ff_dim"], tp, whose="the vision tower's") * v["enc_n_layers"] + [d, d]
    return counts + linear(pi_r, 2 * d) + linear(dim, pi_r)


def _text_rank(w: W._Walk, t: Mapping[str, Any], moe: Mapping[str, Any], par: W.Parallel, ab: int) -> None:
    """The text model and LM head on ``par``'s rank and stage (module docstring)."""
    tp, h = par.tp, t["dim"]
    hd = h // t["n_heads"]
    nq_r = W._divide(t["n_heads"], tp, "config.text.n_heads")
    nkv_r = W.kv_heads_per_rank(t["n_kv_heads"], tp, "config.text.n_kv_heads")
    vocab_r = W.padded_vocab_per_rank(t["vocab_size"], tp)
    ff_r = W._divide(t["ff_dim"], tp, "config.text.ff_dim")
    layers = W.pp_layers(t["n_layers"], par)
    moe_layers = [li for li in layers if li >= moe["start_layer"]]
    e = moe["n_experts"]
    e_r = 0
    if moe_layers:
        if e < 1:
            raise InputError("config.json", "config.text.moe.n_experts", "must be positive where MoE layers are built")
        e_r = W._divide(e, tp, "config.text.moe.n_experts (moondream3.py keeps n_experts // TP whole experts per rank)")
    w.own("embedding", vocab_r * h * ab)
    w.own("norm", h * ab)
    w.own("norm", h * ab)
    w.own("lm_head", vocab_r * h * ab)
    w.own("lm_head", vocab_r * ab)
    qkv = (nq_r + 2 * nkv_r) * hd
    for li in layers:
        w.own("norm", h * ab)
        w.own("norm", h * ab)
        w.own("attention", qkv * h * ab)
        w.own("bias", qkv * ab)
        w.own("attention", h * nq_r * hd * ab)
        w.own("bias", h * ab)
        w.own("tau", nq_r * ab)
        w.own("tau", nq_r * 3 * h * ab)
        w.own("tau", nq_r * 3 * h * ab)
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
        if li in moe_layers:
            inner = moe["expert_inner_dim"]
            w.own("router", e * h * ab)
            w.own("router", e * ab)
            for kind, nbytes in W.experts_bytes(W.Quant(), e_r, h, inner, ab):
                w.own(kind, nbytes)
            w.own("expert map", 4 * e, buffer=True)
            w.own("expert bias", 4 * e_r * 2 * inner, buffer=True)
        else:
            w.own("mlp", ff_r * h * ab)
            w.own("bias", ff_r * ab)
            w.own("mlp", h * ff_r * ab)
            w.own("bias", h * ab)
    if layers:
        w.own("rotary", t["max_context"] * rotary_width(hd) * ab, buffer=True)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage of Moondream3 (module docstring).

    :raises InputError: as the module docstring lists, and ``wrappers._moondream3_text``'s
        refusals (heads not dividing ``dim``, a head under 32 rotary dimensions)."""
    arch = str(config["architectures"][0])
    config_only(config, args)
    if W.quant_from_config(config, args.hf_quant).method is not None:
        raise InputError(
            "quantization_config", "quant_method", f"quantized {arch} layouts are not modelled (unquantized only)"
        )
    if par.expert_parallel:
        raise InputError(
            "--enable-expert-parallel",
            None,
            f"{arch} under expert parallelism is not modelled (Moondream3TextMoE splits its experts over TP)",
        )
    _moondream3_text(dict(config))  # the attention geometry's refusals, as the planner reads it
    t, moe, v = sections(config)
    ab = W.model_dtype_bytes(config, args.dtype)
    w = W._Walk(None, par.vllm_version)
    _text_rank(w, t, moe, par, ab)
    weights = w.result()
    # FlashInfer's KV counter (0.33.0): a multimodal-prefix LM, whose layers FlashInfer does not
    # serve (FlashAttention takes them, or the Triton / FlashInfer composite at its head sizes)
    heads = [(t["n_heads"] // par.tp, t["dim"] // t["n_heads"], False)] * len(W.pp_layers(t["n_layers"], par))
    W.flashinfer_counter_layers(weights, par, args.max_num_batched_tokens, heads, mm_prefix=True)
    if args.no_tower or not towers_on_stage(arch, par):
        return weights
    return tensors("vision", vision_counts(v, t["dim"], par.tp), ab, into=weights)


_FAMILY = Family(_walk, ("image",))
FAMILIES: dict[str, Family] = {"Moondream3ForCausalLM": _FAMILY, "HfMoondream": _FAMILY}
