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
``linear_attention`` / ``full_attention``, ``hc_count`` <= 1; GPTQ on 0.32.0 / 0.33.0 (vLLM
refuses it: :data:`WHY_GPTQ`), and quantized checkpoints of a method, release, GPU or parallelism
not recorded (:data:`QUANT_METHODS`, :data:`QUANT_RELEASES`, :data:`QUANT_SMS`, pipeline / expert parallelism).

Quantized (vLLM 0.29.0-0.33.0; SM 8.6 / 8.9 / 9.0 / 10.0): the Qwen3-Next layers take the
checkpoint's method as Qwen3-Next's walk models them, the hyper-connection weights stay bfloat16
(their ``quant_config=None``), as do the embedding and the LM head.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import (
    Family,
    WalkArgs,
    _text,
    config_only,
    merged,
    quant_scope_refusal,
)
from dryboot.vllm.models import qwen4_exp as plan
from dryboot.vllm.versions import rules_for

ARCH = "Qwen4ExpForCausalLM"
#: bytes per element of the hyper-connection weights (``params_dtype=torch.bfloat16``)
HC_BYTES = 2
#: the releases and GPUs (``major * 10 + minor``) whose quantized layouts after loading are recorded
#: against vLLM (``tests/fidelity/quant_cases_qwen4exp.py``)
QUANT_RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
QUANT_SMS = (86, 89, 90, 100)
#: the methods recorded (plain fp8, compressed-tensors W8A8 / NVFP4 / W4A16, AWQ, GPTQ)
QUANT_METHODS = ("fp8", "compressed-tensors", "awq", "gptq")
#: the releases that refuse a GPTQ checkpoint of Qwen4-Exp (:data:`WHY_GPTQ`; 0.29.0-0.31.0 load it)
GPTQ_REFUSED_RELEASES = ("0.32.0", "0.33.0")
#: GPTQ on 0.32.0 / 0.33.0: vLLM reads the quantized modules from the checkpoint (``maybe_update_config``) and maps them
#: through the model's ``hf_to_vllm_mapper`` (``q_proj`` / ``k_proj`` / ``v_proj`` onto ``qkv_proj``),
#: after which the attention's shards match unevenly and vLLM refuses the checkpoint
WHY_GPTQ = (
    "vLLM 0.32.0 / 0.33.0 refuse GPTQ checkpoints of Qwen4Exp: the attention's q/k/v names mapped onto qkv_proj "
    "before the quantized modules are matched ('Detected some but not all shards of ...self_attn.qkv_proj are "
    "quantized')"
)


def _prepare(config: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The config as the release's ``Qwen4ExpTextConfig`` reads it, with its ``layer_types``
    spelled out for the Qwen3-Next walk: absent, every 4th layer is attention (vLLM's own class,
    0.29-0.31) or every ``full_attention_interval``-th (transformers' class, 0.32 on).

    :raises InputError: QSA fields, PLE layers, other layer types (or a ``layer_types`` of another
        length), ``full_attention_interval`` < 1, ``hc_count`` <= 1, ``hc_lowrank`` < 1 (named)."""
    out: dict[str, Any] = {**plan._DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
    qsa = [k for k in plan.QSA_FIELDS if out.get(k) is not None]
    if qsa:
        raise InputError(
            "config.json",
            qsa[0],
            f"{ARCH} with {', '.join(qsa)} (QSA layers: Qwen4ExpQSAAttention, its QKV and replicated indexer Q/K "
            "in one Qwen4ExpQSAQKVIndexerLinear, the indexer's norms and its top-k index buffer, "
            "qwen4_exp/nvidia/qsa.py): weights not modelled (the KV cache geometry is planned on 0.33.0)",
        )
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


def _refuse_quantized(quant: W.Quant, par: W.Parallel) -> None:
    """What of a quantized Qwen4-Exp is not checked against vLLM, named.

    :raises InputError: GPTQ on 0.32.0 / 0.33.0 (vLLM refuses it, :data:`WHY_GPTQ`), a method not recorded
        (:data:`QUANT_METHODS`), a release or GPU not recorded, pipeline or expert parallelism."""
    if quant.method == "gptq" and par.vllm_version in GPTQ_REFUSED_RELEASES:
        why: str | None = WHY_GPTQ
    elif quant.method not in QUANT_METHODS:
        why = f"{quant.method} layouts of {ARCH} are not recorded (only {', '.join(QUANT_METHODS)})"
    else:
        why = quant_scope_refusal(ARCH, quant.method, par, QUANT_RELEASES, QUANT_SMS)
    if why:
        raise InputError("quantization_config", "quant_method", why)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank: Qwen3-Next's walk over the prepared config, less its norms, plus the
    hyper-connection weights. Quantized, the Gated DeltaNet, attention and MoE layers take the
    checkpoint's method as Qwen3-Next's do (vLLM passes them the model's ``quant_config``); the
    hyper-connection projections (``quant_config=None``), the embedding and the LM head (none
    passed) stay unquantized, the former bfloat16 whatever the model dtype.

    :raises InputError: see :func:`_prepare`; a quantized checkpoint on a release, GPU or
        parallelism not recorded (:func:`_refuse_quantized`), or what Qwen3-Next's walk refuses."""
    config_only(config, args)
    quant = W.quant_from_config(config, args.hf_quant)
    if quant.method is not None:
        _refuse_quantized(quant, par)
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
