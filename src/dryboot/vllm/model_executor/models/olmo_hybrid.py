"""OLMo-Hybrid (``olmo_hybrid.py``, ``OlmoHybridForCausalLM``; vLLM 0.27.1-0.33.0): Gated DeltaNet
layers beside OLMo attention layers, a gated MLP on every layer; the embedding, final norm and LM
head on every pipeline stage (no ``PPMissingLayer``), the head tied to the embedding when
``tie_word_embeddings`` (one parameter).

* A ``linear_attention`` layer (``layers/mamba/gdn/olmo_gdn_linear_attn.py``,
  ``OlmoHybridGatedDeltaNetAttention``): ``input_layernorm`` and ``post_attention_layernorm``
  ``[H]``; ``in_proj_qkvg`` ``[(2 Dk + 2 Dv) / TP, H]`` (one ``MergedColumnParallelLinear``),
  ``b_proj`` and ``a_proj`` ``[Hv / TP, H]`` (two ``ColumnParallelLinear``), the fused ``conv1d``
  ``[(2 Dk + Dv) / TP, 1, K]``, ``dt_bias`` and ``A_log`` ``[Hv / TP]`` (model dtype), ``o_norm``
  (``RMSNormGated`` ``[dv]``, built in the config's ``torch_dtype``, the model dtype where the
  config names none) and ``o_proj`` ``[H, Dv / TP]``; ``Dk = Hk x dk``, ``Dv = Hv x dv``.
* A ``full_attention`` layer (``OlmoHybridAttention``): ``qkv_proj`` over heads of
  ``hidden_size // num_attention_heads`` (``head_dim`` is not read), ``o_proj``, the q/k RMSNorms
  over the whole projections (``[H]`` and ``[kv_heads x head_dim]``, replicated), vLLM's
  ``Attention`` scale buffers, ``post_attention_layernorm`` and ``post_feedforward_layernorm``
  (no norm before attention). The rotary table (one ``cos_sin_cache`` ``[max_position_embeddings,
  head_dim]`` in the model dtype for the stage's attention layers) follows the config class:
  vLLM's own ``OlmoHybridConfig`` (0.27.1-0.31.0) keeps ``rope_parameters`` as the config gives it
  (none by default: no table; ``OlmoHybridAttention`` builds one when it names a ``rope_theta``);
  transformers' (0.32.0+, switch ``hf_config_class_architectures``) defaults it to a
  ``rope_theta`` of 10000, so every attention layer has one.
* The MLP: ``gate_up_proj`` ``[2 I / TP, H]``, ``down_proj`` ``[H, I / TP]``.

``layer_types`` and the ``linear_*`` defaults are ``OlmoHybridConfig``'s (transformers 5.x), as the
geometry reads them (``dryboot.vllm.models.olmo_hybrid``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized
from dryboot.vllm.versions import rules_for

#: ``OlmoHybridConfig``'s defaults for the keys the walk reads (transformers 5.x)
_DEFAULTS: dict[str, Any] = {
    "vocab_size": 100352,
    "hidden_size": 3840,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 30,
    "max_position_embeddings": 65536,
    "tie_word_embeddings": False,
    "linear_conv_kernel_dim": 4,
}
_LINEAR = "linear_attention"


def _prepare(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` over the class defaults, with what ``OlmoHybridConfig.__post_init__`` derives:
    ``layer_types`` (every fourth layer full attention, the last where that leaves none), the
    linear heads (the attention heads), ``linear_key_head_dim`` (``int(0.75 H / Hk)``),
    ``linear_value_head_dim`` (twice that), ``num_key_value_heads`` (the attention heads)."""
    out = {**_DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
    n = W._int(out, "num_hidden_layers")
    if out.get("layer_types") is None:
        types = ["full_attention" if i % 4 == 3 else _LINEAR for i in range(n)]
        if "full_attention" not in types:
            types[-1] = "full_attention"
        out["layer_types"] = types
    heads = W._int(out, "num_attention_heads")
    out.setdefault("num_key_value_heads", heads)
    out.setdefault("linear_num_key_heads", heads)
    out.setdefault("linear_num_value_heads", heads)
    if "linear_key_head_dim" not in out:
        out["linear_key_head_dim"] = int(0.75 * W._int(out, "hidden_size") / W._int(out, "linear_num_key_heads"))
    out.setdefault("linear_value_head_dim", 2 * W._int(out, "linear_key_head_dim"))
    return out


def _rope(config: Mapping[str, Any], version: str) -> bool:
    """Whether ``OlmoHybridAttention`` builds a rotary embedding on release ``version`` (module
    docstring).

    :raises InputError: a top-level ``rope_theta`` / ``rope_scaling``, or ``rope_parameters``
        without a ``rope_theta`` (how the config classes convert them is not recorded: not modelled)."""
    if config.get("rope_theta") is not None or config.get("rope_scaling") is not None:
        raise InputError(
            "config.json", "rope_theta", "OLMo-Hybrid's rope_theta outside rope_parameters is not modelled"
        )
    rope = config.get("rope_parameters")
    if rope is not None and not (isinstance(rope, Mapping) and rope.get("rope_theta") is not None):
        raise InputError(
            "config.json", "rope_parameters", "OLMo-Hybrid's rope_parameters without a rope_theta are not modelled"
        )
    return rope is not None or "OlmoHybridForCausalLM" in rules_for(version).hf_config_class_architectures


def _o_norm_bytes(config: Mapping[str, Any], ab: int) -> int:
    """Bytes per element of ``o_norm``: the config's ``torch_dtype`` (``dtype``), else the model's.

    :raises InputError: a config dtype dryboot does not model."""
    name = config.get("torch_dtype") or config.get("dtype")
    if name is None:
        return ab
    key = str(name).replace("torch.", "")
    if key not in W.DTYPE_BYTES:
        raise InputError("config.json", "torch_dtype", f"{name} is not a dtype dryboot models")
    return W.DTYPE_BYTES[key]


def _linear_attention(w: W._Walk, config: Mapping[str, Any], tp: int, h: int, ab: int) -> None:
    """One Gated DeltaNet layer's mixer on the rank (module docstring)."""
    nk, nv = W._int(config, "linear_num_key_heads"), W._int(config, "linear_num_value_heads")
    dk, dv = W._int(config, "linear_key_head_dim"), W._int(config, "linear_value_head_dim")
    kd = W._divide(nk * dk, tp, "the linear attention's key width")
    vd = W._divide(nv * dv, tp, "the linear attention's value width")
    nv_r = W._divide(nv, tp, "linear_num_value_heads")
    kernel = W._int(config, "linear_conv_kernel_dim")
    w.own("linear attention", (2 * kd + 2 * vd) * h * ab)
    w.own("linear attention", nv_r * h * ab)
    w.own("linear attention", nv_r * h * ab)
    w.own("linear attention", (2 * kd + vd) * kernel * ab)
    w.own("linear attention", nv_r * ab)
    w.own("linear attention", nv_r * ab)
    w.own("norm", dv * _o_norm_bytes(config, ab))
    w.own("linear attention", h * vd * ab)


def _attention(w: W._Walk, config: Mapping[str, Any], tp: int, h: int, ab: int) -> None:
    """One OLMo attention layer on the rank (module docstring)."""
    nq, nkv = W._int(config, "num_attention_heads"), W._int(config, "num_key_value_heads")
    if nq == 0 or h % nq:
        raise InputError("config.json", "hidden_size", f"not a multiple of {nq} attention heads: not modelled")
    hd = h // nq
    nq_r, nkv_r = W._divide(nq, tp, "num_attention_heads"), W.kv_heads_per_rank(nkv, tp)
    w.own("attention", (nq_r + 2 * nkv_r) * hd * h * ab)
    w.own("norm", nkv * hd * ab)
    w.own("norm", h * ab)
    w.own("attention scales", 16, buffer=True)
    w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
    w.own("attention", h * nq_r * hd * ab)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, a layer type other than
        ``linear_attention`` / ``full_attention``, sizes TP does not divide (as vLLM's layers
        refuse them)."""
    raw, ab = unquantized(config, args)
    config = _prepare(raw)
    tp = par.tp
    h = W._int(config, "hidden_size")
    types = config["layer_types"]
    n = W._int(config, "num_hidden_layers")
    if not isinstance(types, list) or len(types) != n or any(t not in (_LINEAR, "full_attention") for t in types):
        raise InputError("config.json", "layer_types", f"must list linear_attention or full_attention for {n} layers")
    # vLLM's config check refuses attention heads TP does not divide before any layer is built
    W._divide(W._int(config, "num_attention_heads"), tp, "num_attention_heads")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    i_r = W._divide(W._int(config, "intermediate_size"), tp, "intermediate_size")
    w = W._Walk(None, par.vllm_version)
    w.own("embedding", vocab_r * h * ab)  # every stage builds the embedding, the norm and the head
    w.own("norm", h * ab)
    if not config.get("tie_word_embeddings"):
        w.own("lm_head", vocab_r * h * ab)
    layers = W.pp_layers(n, par)
    for li in layers:
        if types[li] == _LINEAR:
            _linear_attention(w, config, tp, h, ab)
        else:
            _attention(w, config, tp, h, ab)
        w.own("norm", h * ab)
        w.own("norm", h * ab)
        w.own("mlp", 2 * i_r * h * ab)
        w.own("mlp", h * i_r * ab)
    if _rope(config, par.vllm_version) and any(types[li] != _LINEAR for li in layers):
        hd = h // W._int(config, "num_attention_heads")
        w.own("rotary", W._rotary_bytes(config, hd, ab), buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"OlmoHybridForCausalLM": Family(walk)}
