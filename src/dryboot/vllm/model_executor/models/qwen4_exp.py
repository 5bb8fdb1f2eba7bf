"""Qwen4-Exp's plain layout (``Qwen4ExpForCausalLM`` without QSA or PLE layers: vLLM 0.29.0-0.33.0
``vllm/models/qwen4_exp/nvidia/model.py``): Qwen3-Next's layers (Gated DeltaNet mixers,
``Qwen3NextAttention`` with its output gate, ``Qwen3NextSparseMoeBlock`` / ``Qwen3NextMLP``; the
embedding and LM head on every stage) without their RMSNorms (no ``input_layernorm`` /
``post_attention_layernorm``, no final ``norm``), the hidden state kept as ``hc_count`` streams.

Per layer two hyper-connection modules (``attn_hyper_connection``, ``mlp_hyper_connection``:
``nvidia/hyperconnection.py`` ``GatedResidual``), each ``hc_norm`` ``[hc x H]``, the merged
``input_mix_weight_down_block_inject`` ``[r + hc + pad, hc x H]`` (``pad`` rounds ``r + hc`` up to a
multiple of 16) and ``input_mix_weight_up`` ``[hc x H, r]`` (``r = hc_lowrank``); on the last stage
the final ``hyper_connection_mixer`` (no injection): ``hc_norm`` ``[hc x H]``,
``input_mix_weight_down`` ``[r, hc x H]``, ``input_mix_weight_up`` ``[hc x H, r]``. All replicated
(``disable_tp`` / ``ReplicatedLinear``), unquantized, and bfloat16 whatever the model dtype
(``params_dtype=torch.bfloat16``).

Refused by name: QSA layers (``indexer_*``), PLE layers (``ple_layer_ids``), layer types other than
``linear_attention`` / ``full_attention``, ``hc_count`` <= 1, quantized checkpoints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, _text, config_only, merged
from dryboot.vllm.models import qwen4_exp as plan
from dryboot.vllm.versions import rules_for

ARCH = "Qwen4ExpForCausalLM"
#: bytes per element of the hyper-connection weights (``params_dtype=torch.bfloat16``)
HC_BYTES = 2


def _prepare(config: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The config as the release's ``Qwen4ExpTextConfig`` reads it, with its ``layer_types``
    spelled out for the Qwen3-Next walk: absent, every 4th layer is attention (vLLM's own class,
    0.29-0.31) or every ``full_attention_interval``-th (transformers' class, 0.32 on).

    :raises InputError: QSA fields, PLE layers, other layer types (or a ``layer_types`` of another
        length), ``full_attention_interval`` < 1, ``hc_count`` <= 1, ``hc_lowrank`` < 1 (named)."""
    out: dict[str, Any] = {**plan._DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
    qsa = [k for k in plan.QSA_FIELDS if out.get(k) is not None]
    if qsa:
        raise InputError("config.json", qsa[0], f"{ARCH} with {', '.join(qsa)} (QSA layers): weights not modelled")
    if out.get("ple_layer_ids"):
        raise InputError("config.json", "ple_layer_ids", f"{ARCH} with PLE layers: weights not modelled")
    n = W._int(out, "num_hidden_layers")
    types = out.get("layer_types")
    if not isinstance(types, list):
        every = 4
        if rules_for(version).qwen3_next_hf_config_class:
            every = W._int(out, "full_attention_interval", 4)
            if every < 1:
                raise InputError("config.json", "full_attention_interval", f"must be positive, got {every}")
        types = ["linear_attention" if (i + 1) % every else "full_attention" for i in range(n)]
    if len(types) != n:
        raise InputError("config.json", "layer_types", f"{len(types)} entries for {n} layers")
    other = sorted(set(map(str, types)) - set(plan.PLAIN_LAYER_TYPES))
    if other:
        raise InputError("config.json", "layer_types", f"{ARCH} layer types {other}: weights not modelled")
    if W._int(out, "hc_count") <= 1:
        raise InputError("config.json", "hc_count", f"Qwen4Exp requires hc_count > 1, got {out['hc_count']}")
    if W._int(out, "hc_lowrank") < 1:
        raise InputError("config.json", "hc_lowrank", "hc_lowrank must be positive")
    out["layer_types"] = list(types)
    return out


def _less(w: W.RankWeights, kind: str, nbytes: int) -> None:
    """Undo :meth:`RankWeights.add` of one parameter of ``nbytes`` (a Qwen3-Next norm this
    layout lacks)."""
    rounded = -(-nbytes // W.ALLOC_ROUND) * W.ALLOC_ROUND
    w.param_bytes -= nbytes
    w.by_kind[kind] -= nbytes
    w.allocated_bytes -= rounded
    w.load_segment_bytes -= W.load_segment_bytes(nbytes) - rounded


def hyper_connections(config: Mapping[str, Any], par: W.Parallel) -> W.RankWeights:
    """The stage's hyper-connection weights (replicated on every rank, bfloat16): two
    ``GatedResidual`` per layer, the final mixer on the last stage."""
    h, hc, r = W._int(config, "hidden_size"), W._int(config, "hc_count"), W._int(config, "hc_lowrank")
    wide = hc * h
    pad = -(r + hc) % 16
    w = W.RankWeights()
    for _ in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        for _module in ("attn_hyper_connection", "mlp_hyper_connection"):
            w.add("norm", wide * HC_BYTES)
            w.add("hyper_connection", (r + hc + pad) * wide * HC_BYTES)
            w.add("hyper_connection", wide * r * HC_BYTES)
    if par.pp_rank == par.pp - 1:
        w.add("norm", wide * HC_BYTES)
        w.add("hyper_connection", r * wide * HC_BYTES)
        w.add("hyper_connection", wide * r * HC_BYTES)
    return w


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank: Qwen3-Next's walk over the prepared config, less its norms, plus the
    hyper-connection weights.

    :raises InputError: see :func:`_prepare`; a quantized checkpoint (not modelled)."""
    config_only(config, args)
    if W.quant_from_config(config, args.hf_quant).method is not None:
        raise InputError("quantization_config", "quant_method", f"quantized {ARCH} layouts are not modelled")
    prepared = _prepare(config, par.vllm_version)
    w = _text(prepared, "Qwen3NextForCausalLM", par, args)
    norm = W._int(prepared, "hidden_size") * W.model_dtype_bytes(prepared, args.dtype)
    for _ in W.pp_layers(W._int(prepared, "num_hidden_layers"), par):
        _less(w, "norm", norm)  # input_layernorm
        _less(w, "norm", norm)  # post_attention_layernorm
    if par.pp_rank == par.pp - 1:
        _less(w, "norm", norm)  # the final norm
    return merged(w, hyper_connections(prepared, par))


FAMILIES: dict[str, Family] = {ARCH: Family(_walk)}
#: the multimodal wrapper (planned through its text model): its vision tower is not sized here
UNSIZED: dict[str, str] = {
    "Qwen4ExpForConditionalGeneration": (
        "its Qwen3_VisionTransformer tower (Qwen3-VL's, with the wrapper's deepstack buffers) beside Qwen4-Exp's "
        "text model is not sized (the text model alone is: Qwen4ExpForCausalLM, and --language-model-only is not "
        "read for this wrapper)"
    ),
}
