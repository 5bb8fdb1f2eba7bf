"""Step5 (``Step5ForCausalLM``; vLLM 0.33.0's ``vllm/models/step5/nvidia``, config class vLLM's
own ``Step5Config``, ``transformers_utils/configs/step5.py``, model_type ``step5``).

* vLLM refuses a config without a ``sparse_config`` section (``Step5DecoderLayer``); with it
  enabled (the default) each ``full_attention`` layer is a DSA layer keeping its KV, a region
  summary cache and a CSA tail ring, laid out by 0.33.0's repeat-pattern packing
  (:mod:`dryboot.vllm.kv_cache_utils.repeat_packed`); with ``enabled: false`` the layers are plain
  sliding-window and full-attention layers on vLLM's usual groups.
* A layer's type is ``layer_types_with_mtp`` (else ``layer_types``) at its index, the
  even-numbered layers sliding without either; it slides when the config has a
  ``sliding_window`` and its type is ``sliding_attention``. Every layer keeps
  ``num_attention_groups`` KV heads of ``head_dim`` (else ``hidden_size / heads``); a sliding
  layer's query heads are ``swa_num_attention_heads`` when given.
* ``sparse_config`` is planned with the keys ``enabled``, ``index_tp_size``,
  ``sparse_indexer_num_heads`` and ``topk`` only (the others are not verified); vLLM's checks on
  those keys and on the DSA layers' geometry are made here (``config.py``
  ``get_step5_sparse_config``, ``model.py`` ``_validate_step5_dsa_parallel_geometry``).

Its multimodal wrapper (``Step5ForConditionalGeneration``, ``step5/nvidia/vl.py``: vLLM's own
``Step5VLConfig``, model_type ``step5_vl``) is read through these rules on its ``text_config``
(:data:`dryboot.vllm.models.wrappers.WRAPPERS`), its perception-encoder tower's tensor-parallel
checks made first (:func:`verify`). Its MTP drafter (``Step5MTP``) is not planned.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.backends import BACKENDS, AttentionBackend
from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.config.resolve import EngineConfig
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_utils.repeat_packed import DSA_HEAD, POLICY, PackedLayers, Step5Caches
from dryboot.vllm.models.common import geometry, num_layers

SLIDING = "sliding_attention"
FULL = "full_attention"
#: the ``sparse_config`` keys dryboot plans (each checked as vLLM checks it); any other is refused
SPARSE_KEYS = frozenset({"enabled", "index_tp_size", "sparse_indexer_num_heads", "topk"})
#: ``Step5SparseConfig``'s defaults of those keys
SPARSE_DEFAULTS = {"index_tp_size": 4, "sparse_indexer_num_heads": 16, "topk": 512}
#: indexer query heads per provider group the DSA indexer takes (``config.py``)
INDEXER_HEADS_PER_PROVIDER = (2, 4)
#: query heads per KV group the DSA kernels take (``_validate_step5_dsa_parallel_geometry``)
Q_PER_KV = (4, 8, 16)
_PP = (
    "Step5 with sparse_config disabled under pipeline parallelism is not verified against vLLM 0.33.0's engine "
    "start (its DSA layout is)"
)
#: KV cache dtypes a DSA layer builds (``Step5DSAAttentionImpl``: a quantized cache only as E4M3
#: fp8; float16 is refused against the model's bfloat16 before it)
DSA_KV_DTYPES = frozenset({"auto", "bfloat16", "float16", "float32", "fp8", "fp8_e4m3"})


def defaults(f: ConfigFields) -> dict[str, Any]:
    """``Step5Config``'s cache-relevant defaults (``max_position_embeddings``: ``max_seq_len``)."""
    seq = f.get("max_seq_len") if f.given("max_seq_len") else 4096
    return {
        "hidden_size": 5120,
        "num_attention_heads": 40,
        "num_attention_groups": 8,
        "num_hidden_layers": 48,
        "max_seq_len": 4096,
        "max_position_embeddings": seq,
        "att_impl_type": "GQA",
        "use_head_wise_attn_gate": False,
        "num_nextn_predict_layers": 0,
        "use_moe_router_bias": False,
        "need_fp32_gate": False,
        "moe_num_experts": 16,
    }


def _sparse(f: ConfigFields) -> dict[str, int] | None:
    """The enabled ``sparse_config`` section, ``None`` when disabled.

    :raises InputError: no section (vLLM's NotImplementedError), an old section name, a key
        dryboot does not plan, or a value vLLM refuses."""
    for old in ("step5_sparse_config", "step3p5_sparse_config"):
        if f.get(old) is not None:
            raise InputError(
                f.source,
                f.where(old),
                f"NotImplementedError: Step5 reads the sparse layout from sparse_config; {old} is unsupported.",
            )
    section = f.get("sparse_config")
    if section is None:
        raise InputError(
            f.source,
            f.where("sparse_config"),
            "NotImplementedError: Step5 requires a checkpoint with a sparse_config section; dense-only checkpoints "
            "are not supported.",
        )
    if not isinstance(section, dict):
        raise InputError(f.source, f.where("sparse_config"), "must be an object")
    enabled = section.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise InputError(
            f.source,
            f.where("sparse_config"),
            f"ValueError: Step5 sparse_config.enabled must be a bool, got {enabled!r}.",
        )
    if enabled is False:
        return None
    other = sorted(set(section) - SPARSE_KEYS)
    if other:
        raise InputError(
            f.source,
            f.where("sparse_config"),
            f"keys {other}: Step5's DSA layers are planned with {sorted(SPARSE_KEYS)} only (the others are not "
            "verified against vLLM 0.33.0)",
        )
    values: dict[str, int] = {}
    for key, default in SPARSE_DEFAULTS.items():
        value = section.get(key)
        if value in (None, ""):
            value = default
        if not isinstance(value, int) or isinstance(value, bool):
            raise InputError(f.source, f.where("sparse_config"), f"{key} {value!r}: an integer expected")
        values[key] = value
    topk, tp_groups, heads = values["topk"], values["index_tp_size"], values["sparse_indexer_num_heads"]
    if not 1 <= topk <= 1024:
        raise InputError(
            f.source, f.where("sparse_config"), f"ValueError: Step5 DSA requires topk in [1, 1024], got {topk}."
        )
    if tp_groups <= 0:
        raise InputError(
            f.source,
            f.where("sparse_config"),
            f"ValueError: Step5 sparse indexer index_tp_size must be positive, got {tp_groups}.",
        )
    if heads <= 0 or heads % tp_groups:
        raise InputError(
            f.source,
            f.where("sparse_config"),
            "ValueError: Step5 sparse_indexer_num_heads must be positive and divisible by index_tp_size, got "
            f"sparse_indexer_num_heads={heads}, index_tp_size={tp_groups}.",
        )
    if heads // tp_groups not in INDEXER_HEADS_PER_PROVIDER:
        raise InputError(
            f.source,
            f.where("sparse_config"),
            "ValueError: Step5 DSA indexer requires sparse_indexer_num_heads / index_tp_size in (2, 4), got "
            f"{heads // tp_groups} ({heads} / {tp_groups}).",
        )
    return values


def _layer_types(f: ConfigFields, n: int) -> list[str]:
    """Each decoder layer's type.

    :raises InputError: a list shorter than the layers and MTP layers (``Step5Config``'s ValueError),
        or a type other than sliding and full attention (not modelled)."""
    types = f.get("layer_types_with_mtp") or f.get("layer_types")
    if not types:
        return [SLIDING if i % 2 == 0 else FULL for i in range(n)]
    total = n + f.integer("num_nextn_predict_layers", default=0, minimum=0)
    if not isinstance(types, list) or len(types) < total:
        raise InputError(
            f.source,
            f.where("layer_types"),
            "ValueError: Step5 layer_types must include the dense stack and every MTP layer: expected at least "
            f"{total} entries",
        )
    bad = sorted({str(t) for t in types[:n]} - {SLIDING, FULL})
    if bad:
        raise InputError(f.source, f.where("layer_types"), f"{bad}: only {SLIDING} and {FULL} layers are modelled")
    return [str(t) for t in types[:n]]


def _moe_layers(f: ConfigFields, n: int) -> set[int]:
    """The decoder layers built with ``Step5MoE`` (``_get_step5_moe_layer_indices``:
    ``moe_layers_enum``, else ``moe_layer_list``, else layers 1 on, whatever ``use_moe`` says).

    :raises InputError: indices that are not integers, repeat, disagree between the two keys or
        fall outside the layers and MTP layers (vLLM's ValueError)."""
    total = n + f.integer("num_nextn_predict_layers", default=0, minimum=0)
    found: list[set[int]] = []
    for key in ("moe_layers_enum", "moe_layer_list"):
        value = f.get(key)
        if value is None:
            continue
        raw = value.split(",") if isinstance(value, str) else value
        try:
            indices = [int(x) for x in raw if str(x).strip()]
        except (TypeError, ValueError):
            raise InputError(
                f.source, f.where(key), f"ValueError: Step5 {key} must contain integer layer indices."
            ) from None
        if len(indices) != len(set(indices)):
            raise InputError(f.source, f.where(key), f"ValueError: Step5 {key} contains duplicate layer indices.")
        found.append(set(indices))
    if len(found) == 2 and found[0] != found[1]:
        raise InputError(
            f.source,
            f.where("moe_layer_list"),
            "ValueError: Step5 moe_layers_enum and moe_layer_list describe different layers.",
        )
    layers = found[0] if found else set(range(1, n))
    bad = sorted(i for i in layers if not 0 <= i < total)
    if bad:
        raise InputError(
            f.source,
            f.where("moe_layers_enum"),
            f"ValueError: Step5 MoE layer indices must be in [0, {total}), got {bad}.",
        )
    return layers


def _check_moe(f: ConfigFields, layers: set[int], n: int) -> None:
    """``Step5MoE``'s refusals of the config where a decoder layer is built with it.

    :raises InputError: no router bias or no fp32 gate (vLLM's ValueError), a SwiGLU limit other
        than 7.0 on an MoE layer (not modelled)."""
    if not any(i < n for i in layers):
        return
    if f.get("use_moe_router_bias") is not True:
        raise InputError(
            f.source,
            f.where("use_moe_router_bias"),
            "ValueError: Step5 MoE currently requires use_moe_router_bias=true.",
        )
    if f.get("need_fp32_gate") is not True:
        raise InputError(
            f.source,
            f.where("need_fp32_gate"),
            "ValueError: Step5 MoE requires need_fp32_gate=true for stable router logits.",
        )
    limits = f.get("swiglu_limits") or []
    if any(limits[i] not in (None, 0, 7.0) for i in layers if i < min(n, len(limits))):
        raise InputError(f.source, f.where("swiglu_limits"), "a SwiGLU limit other than 7.0: not modelled")


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """:raises InputError: what vLLM refuses of the config (named with its words) or dryboot
    does not plan (``attention_other_setting``, sparse_config keys it does not check, a DSA
    config without a sliding or a DSA layer, ...)."""
    n = num_layers(f)
    if f.get("att_impl_type") != "GQA":
        raise InputError(f.source, f.where("att_impl_type"), f"{f.get('att_impl_type')}: only GQA is modelled")
    if f.get("attention_other_setting"):
        raise InputError(
            f.source, f.where("attention_other_setting"), "per-type attention heads are not verified for Step5"
        )
    if f.get("quantization_config") is not None:
        raise InputError(
            f.source, f.where("quantization_config"), "a quantized Step5 checkpoint is not verified against vLLM 0.33.0"
        )
    sparse = _sparse(f)
    types = _layer_types(f, n)
    moe = _moe_layers(f, n)
    window = f.opt_int("sliding_window") if f.get("sliding_window") is not None else None
    sliding = [t == SLIDING and window is not None for t in types]
    heads, kv = f.integer("num_attention_heads"), f.integer("num_attention_groups")
    head_dim = f.opt_int("head_dim") or f.integer("hidden_size") // heads
    swa_heads = f.opt_int("swa_num_attention_heads") or heads
    kinds = tuple(LayerKind.SLIDING if s else LayerKind.FULL for s in sliding)
    caches = None
    if sparse is not None:
        if all(sliding):
            raise InputError(
                f.source,
                f.where("layer_types"),
                "sparse_config enabled without a full_attention (DSA) layer: not verified against vLLM 0.33.0",
            )
        if head_dim not in (128, DSA_HEAD):
            raise InputError(
                f.source,
                f.where("head_dim"),
                f"ValueError: Step5 DSA supports attention head dimensions 128 or 192, got {head_dim}.",
            )
        if head_dim != DSA_HEAD:
            raise InputError(
                f.source,
                f.where("head_dim"),
                f"NotImplementedError: Step5 DSA kernels require head_size 192, got {head_dim}.",
            )
        if f.get("use_head_wise_attn_gate") is not True:
            raise InputError(
                f.source,
                f.where("use_head_wise_attn_gate"),
                "NotImplementedError: Step5 DSA layers require use_head_wise_attn_gate=true.",
            )
        caches = Step5Caches(
            dsa_layers=tuple(not s for s in sliding),
            num_kv_heads=kv,
            head_dim=head_dim,
            sliding_window=window,
            num_attention_heads=heads,
            index_tp_size=sparse["index_tp_size"],
            indexer_heads=sparse["sparse_indexer_num_heads"],
        )
    _check_moe(f, moe, n)
    return geometry(
        f,
        architecture,
        "step5",
        kinds,
        heads=(heads, kv, head_dim),
        sliding_window=window,
        num_mtp_layers=f.integer("num_nextn_predict_layers", default=0, minimum=0),
        mtp_kind=None,
        extra_attention_heads=(swa_heads,) if swa_heads != heads and any(sliding) else (),
        moe_experts=("moe_num_experts", f.integer("moe_num_experts")) if any(i < n for i in moe) else None,
        pp_refusal=_PP,
        family_extra=caches,
    )


def groups_per_rank(total: int, tp: int, what: str) -> int:
    """Groups one rank sees (``_step5_groups_per_rank``): ``total / TP``, or one where TP is a
    multiple of ``total``; read by the planner and the weights walk.

    :raises InputError: neither divides the other (vLLM's ValueError)."""
    if total % tp == 0:
        return total // tp
    if tp % total == 0:
        return 1
    raise InputError(
        "--tensor-parallel-size",
        str(tp),
        f"ValueError: Step5 tensor parallel size {tp} is incompatible with group count {total}: one must divide "
        f"the other ({what}).",
    )


#: the wrapper's tower dimension whose check vLLM words apart (``PerceptionEncoderVisionAttention``
#: asserts on its heads with this message; the other dimensions are ``divide``'s)
TOWER_HEADS = "vision_config.heads"


def verify_tower(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """The wrapper's perception-encoder frontend, which ``Step3p7ForConditionalGeneration``
    builds before its language model: TP must divide each block's attention heads, its MLP width
    and the projector's output (``model.parallel.tower_heads``, in that order; none for the text
    model; under ``--mm-encoder-tp-mode data`` one TP does not divide is refused before, by
    :func:`dryboot.vllm.models.encoder_tp.data_mode_towers`: that mode is not recorded).

    :raises InputError: naming the dimension and vLLM's AssertionError."""
    tp = tensor_parallel_size
    for path, size in model.parallel.tower_heads:
        if size % tp:
            words = (
                "embed_dim must be divisible by num_heads"
                if path == TOWER_HEADS
                else f"{size} is not divisible by {tp}"
            )
            raise InputError(
                model.source,
                path,
                f"{size} at tensor parallel size {tp}: AssertionError: {words} ({model.architecture}'s "
                "perception-encoder frontend, built before the language model)",
            )


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """The wrapper's tower (:func:`verify_tower`), then the KV heads against TP
    (``Step5Attention``), and a DSA config's parallel geometry
    (``_validate_step5_dsa_parallel_geometry``).

    :raises InputError: naming vLLM's reason."""
    verify_tower(model, tensor_parallel_size)
    tp, kv = tensor_parallel_size, model.num_kv_heads
    experts = model.parallel.moe_experts
    if experts is not None and tp > experts[1]:
        raise InputError(
            model.source,
            experts[0],
            f"ValueError: Tensor parallel size {tp} is greater than the number of experts {experts[1]}.",
        )
    if tp > 1 and (kv % tp if kv >= tp else tp % kv):
        raise InputError(
            "--tensor-parallel-size",
            str(tp),
            f"{model.source}: ValueError: Step5 KV heads ({kv}) can neither be split across nor replicated over "
            f"{tp} ranks",
        )
    caches = extra_of(model, Step5Caches)
    if caches is None:
        return
    heads = caches.num_attention_heads
    if caches.index_tp_size != kv:
        raise InputError(
            model.source,
            "sparse_config",
            "ValueError: Step5 DSA provider groups must align with attention KV groups: "
            f"{caches.index_tp_size} != {kv}",
        )
    local_kv = groups_per_rank(kv, tp, "num_attention_groups")
    if groups_per_rank(caches.index_tp_size, tp, "index_tp_size") != local_kv:
        raise InputError(
            "--tensor-parallel-size", str(tp), "ValueError: local DSA provider groups must align with local KV groups"
        )
    flag, where = "--tensor-parallel-size", str(tp)
    if heads % tp:
        raise InputError(
            flag,
            where,
            "ValueError: Step5 attention heads must be divisible by tensor parallel size: "
            f"num_heads={heads}, tp_size={tp}.",
        )
    local_q = heads // tp
    if local_q % local_kv:
        raise InputError(
            flag, where, f"ValueError: {local_q} local Q heads do not divide into {local_kv} local KV groups."
        )
    if local_q // local_kv not in Q_PER_KV:
        raise InputError(
            flag,
            where,
            "ValueError: Step5 DSA kernels require 4, 8, or 16 local query heads per KV group, got "
            f"{local_q // local_kv} (num_heads={heads}, tp_size={tp}).",
        )


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """Step5's layers pin their backends (``Step5Attention``: STEP5_DSA for a DSA layer,
    FLASH_ATTN's ``Step5SplitKVFlashAttentionBackend`` for every other), whatever
    ``--attention-backend`` names (recorded on 0.33.0 with FLASHINFER named).

    :raises InputError: a quantized KV cache other than E4M3 fp8 on a DSA config (vLLM's
        NotImplementedError, before any backend is chosen for it)."""
    dtype = args.kv_cache_dtype or "auto"
    if extra_of(model, Step5Caches) is not None and dtype not in DSA_KV_DTYPES:
        raise InputError(
            "--kv-cache-dtype",
            dtype,
            f"{model.architecture}: NotImplementedError: Step5 DSA supports E4M3 FP8 KV cache only",
        )
    if dtype not in DSA_KV_DTYPES:
        raise InputError(
            "--kv-cache-dtype",
            dtype,
            f"{model.architecture}: its FLASH_ATTN layers with this KV cache are not verified against vLLM 0.33.0",
        )
    return args.evolve(attention_backend=None) if args.attention_backend is not None else args


def attention_backend(model: ModelGeometry, requested: str | None) -> AttentionBackend | None:
    """The backend Step5's layers are handed (``Step5Attention``): FLASH_ATTN's for the plain
    layers (a DSA config's DSA layers take STEP5_DSA in its own plan)."""
    return BACKENDS["FLASH_ATTN"]


def kv_cache_layout(model: ModelGeometry) -> str:
    """Step5's DSA caches take 0.33.0's repeat-pattern packing; a disabled sparse_config the groups."""
    return POLICY if extra_of(model, Step5Caches) is not None else "grouped"


def backend_assumption(model: ModelGeometry) -> str | None:
    """``Step5Attention``: a DSA layer hands itself the STEP5_DSA backend, the sliding ones
    FLASH_ATTN (``Step5SplitKVFlashAttentionBackend``)."""
    return (
        "Step5's layers choose their own attention (a DSA layer STEP5_DSA, every other FLASH_ATTN), whatever "
        "--attention-backend names"
    )


def packed_layers(cfg: EngineConfig, log: list[str]) -> PackedLayers:
    """Step5's DSA caches for the repeat-packed planner: the block and KV bytes the release takes
    (``repeat_packed.check_engine_config``), every cache's spec (``step5_specs``: KV heads per
    rank), the tail rings checked, the groups, the ``extract_hidden_states`` cache a group of its
    own last, and the pipeline stages' layers.

    :raises InputError: what vLLM refuses of them or was not verified (named)."""
    from dryboot.vllm.kv_cache_utils import packed as P  # at call: the hidden-state cache's spec
    from dryboot.vllm.kv_cache_utils import repeat_packed as R

    model, args = cfg.model, cfg.args
    caches = R.step5_caches(model)
    block, kv_bytes = R.check_engine_config(cfg, log)
    prefix = model.naming.layer_prefix
    specs = R.step5_specs(caches, block, max(1, caches.num_kv_heads // args.tensor_parallel_size), kv_bytes, prefix)
    R.check_ring(specs)
    _, hidden = P.drafter_layers(cfg, block)  # extract_hidden_states: a group of its own, last
    groups = R.group_specs(specs) + tuple((n,) for n, _ in hidden)
    specs.update((n, replace(spec, backend="HIDDEN_STATE")) for n, spec in hidden)
    stages = R.stage_layers(specs, caches, args, prefix)
    return PackedLayers(specs, groups, stages, block, R.DSA, cfg.kv_cache_dtype, len(specs) - len(hidden))
