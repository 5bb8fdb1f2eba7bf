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
from dataclasses import replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import qwen3_vl
from dryboot.vllm.model_executor.models.compose import (
    Family,
    WalkArgs,
    _text,
    config_only,
    merged,
    quant_scope_refusal,
    vision_language,
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
        raise InputError(
            "config.json",
            "ple_layer_ids",
            f"{ARCH} with PLE layers: weights not modelled (Qwen4ExpPLELayer's n-gram embedding tables, "
            "Qwen4ExpNGramEmbedding, with its CPU offload, and its projections and convolution)",
        )
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


WRAPPER = "Qwen4ExpForConditionalGeneration"
#: the releases whose wrapper is recorded on the meta device (``data/weights/qwen4-exp-vl/``)
WRAPPER_RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: transformers' ``Qwen4ExpVisionConfig`` defaults (5.19 / 5.20, what 0.32+ read the file with);
#: it has no ``deepstack_visual_indexes`` field
VISION_DEFAULTS: dict[str, Any] = {
    **qwen3_vl.VISION_CONFIG_DEFAULTS,
}


#: what vLLM's own ``Qwen4ExpVisionConfig`` (a ``Qwen3VLVisionConfig``: 0.29-0.31) adds to those
OWN_CLASS_VISION_DEFAULTS: dict[str, Any] = {**VISION_DEFAULTS, "deepstack_visual_indexes": [8, 16, 24]}


def wrapper_vision(config: Mapping[str, Any], version: str = WRAPPER_RELEASES[-1]) -> dict[str, Any]:
    """The wrapper's ``vision_config`` as release ``version``'s ``Qwen4ExpVisionConfig`` reads it:
    :data:`VISION_DEFAULTS` under the file's keys (transformers' class, 0.32 on), or
    :data:`OWN_CLASS_VISION_DEFAULTS` (vLLM's own, 0.29-0.31: Qwen3-VL's three deepstack levels).

    :raises InputError: no ``vision_config`` object."""
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        raise InputError("config.json", "vision_config", f"{WRAPPER} needs a vision_config object")
    own = not rules_for(version).qwen3_next_hf_config_class
    return {**(OWN_CLASS_VISION_DEFAULTS if own else VISION_DEFAULTS), **vision}


def _wrapper_checks(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> None:
    """What the wrapper's ``__init__`` (0.33.0) asserts before building anything.

    :raises InputError: ``vision_config.deepstack_visual_indexes`` absent (no field of
        ``Qwen4ExpVisionConfig``) unless the tower is off under ``--language-model-only`` (read
        for ``use_deepstack`` otherwise: vLLM's AttributeError, recorded; a zero image and video
        limit alone does not skip it); under pipeline parallelism a later stage starting before
        layer ``len(deepstack_visual_indexes)`` (vLLM's assertion, recorded)."""
    vision = wrapper_vision(config, par.vllm_version)
    levels = vision.get("deepstack_visual_indexes")
    lm_only = args.no_tower and not {"image", "video"} <= args.zero_modalities
    if levels is None and not lm_only:
        raise InputError(
            "config.json",
            "vision_config.deepstack_visual_indexes",
            f"{WRAPPER} reads vision_config.deepstack_visual_indexes, a field Qwen4ExpVisionConfig does not "
            "default (vLLM's AttributeError building the wrapper): set it ([] for no deepstack level)",
        )
    if par.pp > 1 and isinstance(levels, list):
        text = config.get("text_config")
        n = W._int(text if isinstance(text, Mapping) else {}, "num_hidden_layers")
        start = min(W.pp_layers(n, replace(par, pp_rank=r)).start for r in range(1, par.pp))
        if start < len(levels):
            raise InputError(
                "--pipeline-parallel-size",
                str(par.pp),
                f"{WRAPPER}: a later pipeline stage starts at layer {start}, before len(deepstack_visual_indexes) "
                f"= {len(levels)} (vLLM's assertion)",
            )


def _wrapper_family() -> Family:
    """``Qwen4ExpForConditionalGeneration`` (``nvidia/model.py``): Qwen4-Exp's text model (its
    walk, :func:`_walk`, over ``text_config``) and, under ``_mark_tower_model`` (dropped by
    ``--language-model-only`` or a zero image and video limit; on 0.33 built on the first
    pipeline stage alone), Qwen3-VL's vision tower (``Qwen3_VisionTransformer``,
    :func:`qwen3_vl.vision_tower`, over :func:`wrapper_vision`) with the deepstack feature
    buffers (:func:`qwen3_vl.deepstack_buffers`). Unquantized only; releases other than
    :data:`WRAPPER_RELEASES` refused."""

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        if par.vllm_version not in WRAPPER_RELEASES:
            raise InputError(
                "config.json",
                "architectures",
                f"{WRAPPER}'s vision tower is recorded on vLLM {', '.join(WRAPPER_RELEASES)} only, not "
                f"{par.vllm_version} (its text model alone is sized: Qwen4ExpForCausalLM)",
            )
        _wrapper_checks(config, par, args)
        vision = wrapper_vision(config, par.vllm_version)
        inner = vision_language(Family(_walk), qwen3_vl.vision_tower, tower_of=lambda _: vision)
        with_levels = {**config, "vision_config": vision}
        return qwen3_vl.with_deepstack(
            inner, lambda c: c.get("text_config"), lambda c: c.get("vision_config"), ("image", "video")
        ).walk(with_levels, par, args)

    return Family(walk, ("image", "video"))


FAMILIES: dict[str, Family] = {ARCH: Family(_walk), WRAPPER: _wrapper_family()}
