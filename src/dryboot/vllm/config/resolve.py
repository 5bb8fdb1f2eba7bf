"""Engine flags resolved once, as ``EngineArgs.create_engine_config`` and ``VllmConfig``
resolve them (``vllm/engine/arg_utils.py``, ``vllm/config/``): the model dtype, the KV cache
dtype and backend, the maximum model length, the mamba cache mode, the speculative drafter
(an MTP module included) and the tensor-parallel head checks. Later stages read these values;
none re-reads a flag.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from dryboot.errors import InputError
from dryboot.vllm.backends import (
    BACKENDS,
    CACHE_ONLY_ATTN,
    COMPOSITE_BACKENDS,
    DEEPSEEK_V32_INDEXER,
    DIFFKV_BACKENDS,
    FA4_HD256_HEAD,
    FLASHINFER_MLA_SPARSE_SM90,
    INKLING_SCONV,
    MINIMAX_M3_SPARSE,
    MINIMAX_M3_SPARSE_INDEXER,
    AttentionBackend,
    AttentionSelectorConfig,
    KernelBlock,
    backend_table,
    custom_backend,
    default_backend,
    fa4_hd256_backend,
    fa4_hd256_fallback_reason,
    invalid_reasons,
    is_quantized_kv_cache,
    priorities,
    uses_fa4_hd256_kernel,
)
from dryboot.vllm.config.hf import LayerKind, ModelGeometry, modelopt_mixed_refusal
from dryboot.vllm.config.scheduler import encoder_decoder_batched_tokens, verify_max_model_len
from dryboot.vllm.distributed import (
    check_dcp_divides_tp,
    check_dcp_kv_heads,
    check_drafter_pp,
    check_pipeline_parallel,
    check_tensor_parallel,
    check_world_size,
)
from dryboot.vllm.dtypes import (
    KV_CACHE_DTYPES,
    SPARSE_MLA_ONLY_KV_CACHE_DTYPES,
    CustomKVCacheDtype,
    torch_dtype_of,
)
from dryboot.vllm.engine_args import EngineArgs, supports_async_scheduling
from dryboot.vllm.fp8_utils import check_block_shards
from dryboot.vllm.model_executor.model_loader.safetensors import checkpoint_tensor_names
from dryboot.vllm.models.drafter_as_model import drafter_as_model_refusal
from dryboot.vllm.models.dspark import DSPARK_TARGET_BACKEND_MODEL_TYPES
from dryboot.vllm.models.gemma import MTP_ARCHITECTURE, share_with_target
from dryboot.vllm.models.registry import (
    absent_from_release,
    drafter_architecture,
    family_for,
    family_of,
    is_draft_model,
    release_registry_file,
)
from dryboot.vllm.spec_decode_embed import EMBED_SHARING_METHODS, drafter_embedding_refusal, last_stage_embedding
from dryboot.vllm.versions import (
    VersionRules,
    known_model_types,
    rules_for,
    unverified_reason,
    version_key,
)


@dataclass(frozen=True)
class Drafter:
    """A speculative-decoding draft model whose layers join the KV cache.

    :param model: the drafter's geometry (its ``config.json``).
    :param method: vLLM's ``--speculative-config`` ``method`` (``dflash``, ``eagle``, ``mtp``...).
    :param kv_cache_dtype: the drafter's KV cache dtype (``None``: the target's).
    :param attention_backend: the speculative config's ``attention_backend`` (``None``: as
        :func:`drafter_backend_name` reads the release's proposer, the target's or an auto-selection).
    :param block_size: its layers' starting block (``None``: the version's rule).
    :param layer_prefix: the module prefix of its layers in reports (``drafter.layers``).
    """

    model: ModelGeometry
    method: str = "draft_model"
    kv_cache_dtype: str | None = None
    attention_backend: str | None = None
    block_size: int | None = None
    layer_prefix: str = "drafter.layers"


#: Model types vLLM 0.28.0 refuses to run in float16 (``_FLOAT16_NOT_SUPPORTED_MODELS``).
FLOAT16_NOT_SUPPORTED = frozenset({"gemma2", "gemma3", "gemma3_text", "glm4"})


def model_dtype_of(model: ModelGeometry, args: EngineArgs, *, quant_checked: bool = True) -> str:
    """``--dtype`` resolved: ``auto`` takes the config's dtype, float32 served as bfloat16.
    ``quant_checked``: also check the quantization method's activation dtypes
    (:func:`_check_quant_act_dtype`; ``False``: ModelConfig's own checks only).

    :raises InputError: float16 for a model type vLLM runs only in bfloat16/float32
        (``_check_valid_dtype``), or for an mxfp4 checkpoint (bfloat16 only).
    """
    dtype = ("bfloat16" if model.dtype == "float32" else model.dtype) if args.dtype == "auto" else None
    dtype = dtype or torch_dtype_of(args.dtype, model.dtype)
    if dtype == "float16" and model.model_type in FLOAT16_NOT_SUPPORTED:
        raise InputError(
            "--dtype",
            args.dtype,
            f"The model type {model.model_type!r} does not support float16. Reason: Numerical instability. "
            "Please use bfloat16 or float32 instead.",
        )
    if quant_checked:
        _check_quant_act_dtype(model, args, dtype)
    return dtype


def _check_quant_act_dtype(model: ModelGeometry, args: EngineArgs, dtype: str) -> None:
    """The quantization method's activation dtypes (``VllmConfig._get_quantization_config``, in
    ``__post_init__``): mxfp4 takes bfloat16 only.

    :raises InputError: float16 for an mxfp4 checkpoint, naming ``--dtype``."""
    if dtype == "float16" and model.quant.quant_method == "mxfp4":
        raise InputError(
            "--dtype",
            args.dtype,
            f"{model.source}: torch.float16 is not supported for quantization method mxfp4 (supported: torch.bfloat16)",
        )


def _refuse_diffkv_cache(backend: str, kv_cache_dtype: str, model: ModelGeometry) -> None:
    """A KV cache dtype the DiffKV backend a model hands its layers does not declare (its
    layers take ``--kv-cache-dtype``: MiMo-V2 from 0.32). ``FlashAttentionImpl.__init__`` refuses
    fp8_e5m2 (``flash_attn_supports_kv_cache_dtype``); other quantized caches are built without
    the selector's check, with pages dryboot does not model.

    :raises InputError: naming ``--kv-cache-dtype``.
    """
    if backend == "FLASH_ATTN_DIFFKV" and kv_cache_dtype == "fp8_e5m2":
        raise InputError(
            "--kv-cache-dtype",
            kv_cache_dtype,
            f"FlashAttention does not support fp8_e5m2 kv-cache on this device. ({model.source}: "
            f"{model.architecture}'s {backend} layers, vLLM's FlashAttentionImpl)",
        )
    raise InputError(
        "--kv-cache-dtype",
        kv_cache_dtype,
        f"{model.source}: {model.architecture} hands its layers {backend}, which vLLM builds with this cache "
        "without checking it; that layout is not modelled",
    )


def backend_for(
    name: str | None, kv_cache_dtype: str, model: ModelGeometry, args: EngineArgs, rules: VersionRules, flag: str
) -> AttentionBackend:
    if not any(k.is_attention for k in model.kinds):
        # no attention layer is built, so no backend is selected or validated
        return BACKENDS[name] if name in BACKENDS else BACKENDS["FLASH_ATTN_MLA" if model.use_mla else "FLASH_ATTN"]
    # the indexer's key cache has its own fixed backend: the selection serves the other layers
    head_size = max(
        model.attention(k).head_dim
        for k in model.kinds
        if k.is_attention and k not in (LayerKind.MLA_INDEXER, LayerKind.MM3_SPARSE, LayerKind.MM3_INDEXER)
    )
    gpu = args.device
    family_of(model).check_backend(model, args)
    handed = family_of(model).handed_backend(model, args, name)
    if handed is not None:
        if gpu.capability[0] != 9 and not family_of(model).handed_on_every_gpu(model):
            # the model's own choice (DeepSeek-V4's FlashMLA layers, MiMo-V2's DiffKV) is read
            # from vLLM for Hopper only
            raise InputError(
                "--gpu",
                gpu.name,
                f"{model.source}: {model.architecture} chooses its layers' attention backend itself "
                f"({handed.name} on SM 9.x); dryboot does not model that choice on SM "
                f"{gpu.capability[0]}.{gpu.capability[1]}",
            )
        declared = handed.kv_cache_dtypes
        if handed.name in DIFFKV_BACKENDS and declared is not None and kv_cache_dtype not in declared:
            _refuse_diffkv_cache(handed.name, kv_cache_dtype, model)
        return handed
    fa4 = rules.fa4_fp8_block if gpu.capability[0] == 9 else None
    fp8 = kv_cache_dtype in ("fp8", "fp8_e4m3") and args.custom_dtype(kv_cache_dtype) is None
    # 0.31+ on SM 9.0: a multimodal-prefix LM's fp8 layers at head size 512 are served by the
    # Triton/FlashAttention composite (TRITON_FLASH_ATTN), whose kernel pages are FlashAttention 4's;
    # a --block-size they do not divide precludes it, and Triton serves the layer
    # ModelConfig.is_mm_prefix_lm is off where multimodal inputs are configuration-disabled
    # (_supports_multimodal_for_mm_prefix: "Disabled mm_prefix attention mode ...")
    mm_prefix = model.attn.mm_prefix_lm and not args.language_model_only
    precluded = (
        mm_prefix
        and gpu.capability == (9, 0)
        and args.block_size is not None
        and fa4 is not None
        and args.block_size % fa4 != 0
    )
    # a multimodal-prefix LM's layers on SM 9.x try the Triton/FlashAttention composite first (0.30+),
    # whose causal half reads FlashAttention's pages; FlashAttention itself refuses their fp8 cache
    # on SM 9.0 (0.31+: "SM90 FP8 KV with mm_prefix requires Triton")
    composite = (
        name is None
        and mm_prefix
        and not model.attn.encoder_only_attention
        and rules.mm_prefix_composites
        and gpu.capability[0] == 9
        and not model.attn.attention_sinks
    )
    fa_refuses = mm_prefix and rules.fa_quantized_mm_prefix_sm90 and gpu.capability == (9, 0)
    fa4_serves = fp8 and name in (None, "FLASH_ATTN") and not model.use_mla and head_size == 512
    if fa4 and fa4_serves and not precluded and (composite or not fa_refuses):
        # FlashAttention 4 serves fp8 at head size 512 on SM90 with 64-token kernel pages
        # (flash_attn.py _get_sm90_fa4_fp8_kv_block_size), as the composite's causal half
        # (TRITON_FLASH_ATTN, which leads the priorities) or as FLASH_ATTN (which leads them otherwise)
        base = BACKENDS["TRITON_FLASH_ATTN" if composite else "FLASH_ATTN"]
        return AttentionBackend(
            base.name,
            (KernelBlock(fa4),),
            True,
            kv_cache_dtypes=base.kv_cache_dtypes,
            head_sizes=base.head_sizes,
            kernel_blocks_head=512,
        )
    fa4_forced = family_of(model).fa4_all_layers(model, name)
    flash_attn, hd256_ambiguous = fa4_hd256_flash_attn(model, kv_cache_dtype, args, rules, mm_prefix, fa4_forced)
    layer = AttentionSelectorConfig(
        head_size,
        kv_cache_dtype,
        args.block_size,
        model.attn.attention_sinks,
        model.sparse_mla,
        model_dtype_of(model, args) if model.sparse_mla else None,
        mm_prefix,
        fa4_forced,
        model.attn.encoder_only_attention,
        gpu.capability,
        args.flashinfer_cubin,
        model.attn.mla_dims[0] if model.attn.mla_dims else None,
        model.num_attention_heads // max(1, args.tensor_parallel_size),
        rules.mm_prefix_composites,
        model.attn.index_topk,
        rules.fa_quantized_mm_prefix_sm90,
        rules.composite_causal_fa3,
        rules.sparse_mla_fp8_e4m3_sm90,
        model.attn.mla_dims[1] if model.attn.mla_dims else None,
        rules.flashinfer_sinks_sm90,
        rules.flashinfer_sinks_sm120,
    )
    backend = _resolve_backend(
        name,
        model.use_mla,
        model.source,
        args.custom_dtype(kv_cache_dtype),
        flag,
        layer,
        rules.flashinfer_nvfp4_sm90 and gpu.capability[0] in (8, 9, 12),
        gpu.capability[0] == 10 and args.flashinfer_cubin,
        flash_attn,
    )
    check_triton_fp8(backend, kv_cache_dtype, args, flag)
    if hd256_ambiguous:
        _refuse_ambiguous_hd256(backend, model, args, flag)
    if backend.name == "FLEX_ATTENTION" and model.attn.logits_soft_cap:
        # FlexAttentionImpl.__init__, when the model is built
        raise InputError(flag, backend.name, f"{model.source}: FlexAttention does not support logits soft cap yet.")
    if backend.name == "FLEX_ATTENTION" and model.kv_sharing:
        # FlexAttentionImpl.__init__ of a layer with a kv_sharing_target_layer_name, when the model is built
        raise InputError(flag, backend.name, f"{model.source}: FlexAttention does not support kv sharing yet.")
    family_of(model).verify_backend(model, backend.name, flag)
    return backend


def fa4_hd256_flash_attn(
    model: ModelGeometry, kv_cache_dtype: str, args: EngineArgs, rules: VersionRules, mm_prefix: bool, fa4_forced: bool
) -> tuple[AttentionBackend | None, bool]:
    """FlashAttention as FA4's head-256 kernel shapes it (0.29+ on SM 10.x / 11.x:
    ``flash_attn.py`` ``get_supported_kernel_block_sizes``, ``get_preferred_block_size``), or ``None``
    where it declares its 16-multiples; and whether the model's head size for that question is
    ambiguous (heads of 256 beside narrower ones: ``ModelConfig.get_head_size`` is the model class's
    own, not read here).

    Asked for the model, FlashAttention runs FA4 by default on SM 10.x (forced elsewhere by the model's
    config hook: ``fa4_forced``, ``get_flash_attn_version``) and the head-256 kernel where the model's head
    size (the widest) is 256 and :func:`~dryboot.vllm.backends.fa4_hd256_fallback_reason` gives nothing
    (sinks are not asked here: a model with sinks keeps the 128-token pages, its layers run FA2).
    0.31+ asks each layer's spec as well, without the engine's config: a 256-wide layer on SM 10.x
    then addresses 128-token pages whatever the model's fallback (a soft-capped Gemma-2's sliding
    layers)."""
    page, cap = rules.fa4_hd256_block, args.device.capability
    if page is None or model.use_mla or cap[0] not in (10, 11):
        return None, False
    attention = [
        model.attention(k)
        for k in model.kinds
        if k.is_attention and k not in (LayerKind.MLA_INDEXER, LayerKind.MM3_SPARSE, LayerKind.MM3_INDEXER)
    ]
    heads = {a.head_dim for a in attention}
    if not heads:
        return None, False
    fallback = fa4_hd256_fallback_reason(
        soft_cap=model.attn.config_soft_cap,
        kv_cache_dtype=kv_cache_dtype,
        mm_prefix=mm_prefix,
        rswa=model.attn.full_spec_name == "rswa",
        decode_context_parallel_size=args.decode_context_parallel_size,
    )
    fa4 = cap[0] == 10 or fa4_forced
    model_level = fa4 and fallback is None and uses_fa4_hd256_kernel(max(heads), cap)
    # without the engine's config the version is the default: FA4 on SM 10.x only
    layer_level = (
        rules.fa4_hd256_layer_blocks and cap[0] == 10 and any(a.head_dim == a.head_dim_v == 256 for a in attention)
    )
    # the whole-model head size is the widest layer's only where vLLM converts the config per layer
    widest = family_of(model).head_size_is_widest(model)
    ambiguous = fa4 and fallback is None and len(heads) > 1 and max(heads) == 256 and not widest
    if not (model_level or layer_level):
        return None, ambiguous
    return fa4_hd256_backend(BACKENDS["FLASH_ATTN"], page, model_level, layer_level), ambiguous


def _refuse_ambiguous_hd256(backend: AttentionBackend, model: ModelGeometry, args: EngineArgs, flag: str) -> None:
    """FlashAttention on SM 10.x / 11.x for a model whose widest heads are 256 beside narrower ones:
    whether FA4's head-256 kernel shapes its pages follows ``ModelConfig.get_head_size``, the model
    class's own answer, which dryboot does not read.

    :raises InputError: naming the backend flag."""
    if backend.name == "FLASH_ATTN":
        heads = sorted({model.attention(k).head_dim for k in model.kinds if k.is_attention})
        raise InputError(
            flag,
            backend.name,
            f"{model.source}: heads of {heads} on SM {args.device.capability[0]}.x: whether FlashAttention's FA4 "
            "head-256 kernel (128-token pages, fa_utils.uses_fa4_hd256_kernel) shapes the blocks follows the "
            "model's own head size (ModelConfig.get_head_size), which dryboot does not model",
        )


#: the CUDA backends whose ``supports_attn_type`` accepts ``ENCODER_DECODER`` (0.27.1-0.33.0)
CROSS_ATTENTION_BACKENDS = frozenset({"FLASH_ATTN", "TRITON_ATTN"})


def check_cross_attention_backend(model: ModelGeometry, backend: AttentionBackend, named: str | None) -> None:
    """An encoder-decoder's cross-attention layers (``CrossAttention``, attention type
    ``ENCODER_DECODER``) on the backend its decoder layers got: among the CUDA backends only
    FlashAttention's and Triton's ``supports_attn_type`` accept that type
    (:data:`CROSS_ATTENTION_BACKENDS`). A named backend that refuses it fails vLLM's validation;
    vLLM's own choice of another backend for the decoder layers (the cross-attention layers then
    select theirs apart) is not modelled. ``named``: ``--attention-backend``, ``None`` when unset.

    :raises InputError: naming ``--attention-backend``.
    """
    if LayerKind.CROSS not in model.kinds or backend.name in CROSS_ATTENTION_BACKENDS:
        return
    if named is not None:
        raise InputError(
            "--attention-backend",
            backend.name,
            f"Selected backend AttentionBackendEnum.{backend.name} is not valid for this configuration. Reason: "
            f"['attention type AttentionType.ENCODER_DECODER not supported'] ({model.source}: "
            f"{model.architecture}'s cross-attention layers)",
        )
    raise InputError(
        "--attention-backend",
        backend.name,
        f"{model.source}: vLLM picks {backend.name} for {model.architecture}'s decoder layers, which does not "
        "serve its cross-attention layers (attention type ENCODER_DECODER): they select another backend "
        "apart, which is not modelled; name FLASH_ATTN or TRITON_ATTN",
    )


#: the reason vLLM's backend validation gives for a block size no kernel serves; a backend
#: failing for it alone puts the refusal on ``--block-size``
BLOCK_SIZE_REASON = "block_size not supported"


@lru_cache(maxsize=1024)
def _resolve_backend(
    name: str | None,
    use_mla: bool,
    source: str,
    custom: CustomKVCacheDtype | None,
    flag: str,
    layer: AttentionSelectorConfig,
    flashinfer_nvfp4: bool = False,
    trtllm_nvfp4: bool = False,
    flash_attn: AttentionBackend | None = None,
) -> AttentionBackend:
    """The backend serving the model's attention: ``--attention-backend``, or vLLM's choice on
    SM90 (:func:`~dryboot.vllm.backends.default_backend`; a custom cache is served by
    FlashAttention's kernels unless a backend is named); ``layer``: what the model's attention
    layers ask of it; ``flash_attn``: FlashAttention's declarations where they are not the table's
    (:func:`fa4_hd256_flash_attn`).

    :raises InputError: unknown backend, MLA mismatch, or a backend that cannot serve the
        layer (vLLM's reasons: head size, KV dtype, ``--block-size``, a multimodal prefix,
        attention sinks; :func:`~dryboot.vllm.backends.invalid_reasons`).
    """
    table = backend_table(flashinfer_nvfp4, trtllm_nvfp4, layer.sparse_sm90)
    if flash_attn is not None:
        # FA4's head-256 kernel pages (fa4_hd256_flash_attn)
        table = {**table, "FLASH_ATTN": flash_attn}
    if name is None and custom is not None:
        if layer.use_sparse:
            raise InputError(
                "--custom-kv-cache-dtype",
                custom.name,
                f"{source}: a custom KV cache for sparse MLA layers (sparse-attention indexer) is not modelled",
            )
        chosen = "FLASH_ATTN_MLA" if use_mla else "FLASH_ATTN"
    elif name is None:
        try:
            chosen = default_backend(layer, use_mla, table)
        except ValueError as exc:
            blamed = any(invalid_reasons(table[n], layer) == [BLOCK_SIZE_REASON] for n in priorities(layer, use_mla))
            flag_, value = ("--block-size", str(layer.block_size)) if blamed else ("--attention-backend", None)
            raise InputError(flag_, value, f"{source}: {exc}") from None
    else:
        chosen = name
        if name in COMPOSITE_BACKENDS:
            raise InputError(
                flag,
                name,
                f"{source}: a composite backend vLLM 0.30+ picks itself for a multimodal-prefix LM (SM 10.x: "
                "TRITON_FLASHINFER, SM 9.x: TRITON_FLASH_ATTN); named as a flag it is not modelled",
            )
    if chosen not in table:
        # vLLM's words (AttentionBackendEnum's lookup: a name the release does not ship, e.g.
        # FLASHINFER_MLA_SPARSE_SM90 before 0.30); the options listed are those dryboot models
        raise InputError(flag, chosen, f"Unknown attention backend: '{chosen}'. Valid options are: {', '.join(table)}")
    backend = table[chosen]
    if backend.is_mla != use_mla:
        what = "an MLA" if use_mla else "a non-MLA"
        raise InputError(flag, chosen, f"{source} is {what} model; pick a matching backend")
    if custom is not None:
        return custom_backend(custom, backend)
    reasons = invalid_reasons(backend, layer)
    if reasons:
        block_only = reasons == [BLOCK_SIZE_REASON]
        raise InputError(
            "--block-size" if block_only else flag,
            str(layer.block_size) if block_only else chosen,
            f"Selected backend AttentionBackendEnum.{chosen} is not valid for this configuration. "
            f"Reason: {reasons} ({source}: head size {layer.head_size}, KV cache dtype {layer.kv_cache_dtype})",
        )
    return backend


def check_triton_fp8(backend: AttentionBackend, kv_cache_dtype: str, args: EngineArgs, flag: str) -> None:
    """The Triton backends' fp8 refusal below SM 8.9, raised when the layer is built
    (``TritonAttentionImpl.__init__``, ``TritonMLAImpl.__init__``; docs/gpu-rules.md §3).

    :raises InputError: an ``fp8*`` KV cache on TRITON_ATTN / TRITON_MLA on a GPU below SM 8.9.
    """
    gpu = args.device
    base = backend.name.split("+")[0]
    if base not in ("TRITON_ATTN", "TRITON_MLA") or not kv_cache_dtype.startswith("fp8"):
        return
    if gpu.capability >= (8, 9) or args.custom_dtype(kv_cache_dtype) is not None:
        return
    what = "Triton MLA" if base == "TRITON_MLA" else "Triton attention"
    major, minor = gpu.capability
    raise InputError(
        flag,
        backend.name,
        f"FP8 KV cache is not supported by the {what} backend on {gpu.device_name} (compute capability "
        f"{major}.{minor}); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype bfloat16.",
    )


def mtp_drafter(model: ModelGeometry, method: str) -> Drafter:
    """The MTP module of ``model`` as a drafter: its ``num_mtp_layers`` layers, each of the
    target's ``mtp_kind`` with the target's heads (``SpeculativeConfig.hf_config_override``
    and the family's ``*_mtp.py``).

    :raises InputError: the checkpoint carries no MTP layers, or MTP layers of a kind not
        modelled (``mtp_kind`` unset).
    """
    if model.mtp.num_mtp_layers and model.mtp.mtp_kind is None:
        raise InputError(
            "--speculative-config",
            f"method={method}",
            f"the MTP module of {model.architecture} ({model.mtp.num_mtp_layers} layers) is not modelled",
        )
    if not model.mtp.num_mtp_layers or model.mtp.mtp_kind is None:
        raise InputError(
            "--speculative-config",
            f"method={method}",
            f"{model.source} has no multi-token-prediction layers vLLM builds as a drafter "
            f"({model.architecture}, model_type {model.model_type!r})",
        )
    n = model.mtp.num_mtp_layers
    named = MTP_LAYER_NAMES.get(model.architecture) or MTP_LAYER_NAMES.get(model.family)
    prefix = named[0] if named else "mtp.layers"
    first = None if named is None else model.num_decoder_layers if named[1] else 0
    if model.sparse_mla:
        # every MTP layer of a sparse MLA model builds its indexer (deepseek_v2.py: the
        # index_topk_freq / index_topk_pattern skips govern only the backbone layers)
        kinds = (LayerKind.MLA_INDEXER, model.mtp.mtp_kind) * n
        mtp = model.evolve(
            layer_kinds=kinds, layer_prefix="mtp.layers", decoder_layers=tuple(i // 2 for i in range(2 * n))
        )
        if first is not None:
            names = tuple(
                f"{prefix}.{first + i}.self_attn.{suffix}" for i in range(n) for suffix in ("indexer.k_cache", "attn")
            )
            mtp = mtp.evolve(layer_names=names)
    else:
        mtp = model.evolve(layer_kinds=(model.mtp.mtp_kind,) * n, layer_prefix="mtp.layers")
        if model.mtp.mtp_layer_names is not None:
            mtp = mtp.evolve(layer_names=model.mtp.mtp_layer_names)
        elif first is not None:
            mtp = mtp.evolve(layer_names=tuple(f"{prefix}.{first + i}.self_attn.attn" for i in range(n)))
    return Drafter(model=mtp, method=method, layer_prefix="mtp.layers")


#: How the MTP module of a family's (or an architecture's) checkpoints names its layers, where
#: the family sets no ``mtp_layer_names`` of its own: (module prefix, whether the
#: numbering starts after the target's ``num_hidden_layers`` (``deepseek_mtp.py``:
#: ``model.layers.<num_hidden_layers + i>``) or at 0 (``qwen3_next_mtp.py``, ``qwen3_5_mtp.py``:
#: ``mtp.layers.<i>``)). Each layer's attention is its ``self_attn.attn``.
MTP_LAYER_NAMES: dict[str, tuple[str, bool]] = {
    "deepseek": ("model.layers", True),
    "qwen3_next": ("mtp.layers", False),
    "Glm4MoeForCausalLM": ("model.layers", True),  # glm4_moe_mtp.py
    "Ernie4_5_MoeForCausalLM": ("model.layers", True),  # ernie_mtp.py
}
#: Draft models whose decoder layers vLLM numbers after the target's (``start_layer_id`` =
#: the target's ``num_hidden_layers``: ``llama_eagle.py``, ``llama_eagle3.py``,
#: ``qwen3_eagle3.py``, ``qwen3_dflash.py``), by ``--speculative-config`` method
EAGLE_NUMBERED_METHODS = frozenset({"eagle", "eagle3", "dflash"})


def name_drafter_layers(target: ModelGeometry, drafter: Drafter) -> Drafter:
    """``drafter`` with its layers named as vLLM names them (the keys of their KV cache specs,
    and the names its log lines print):

    - an EAGLE / EAGLE-3 / DFlash head of the Llama family, or an MLA EAGLE-3 head
      (``deepseek_eagle3.py``): ``model.layers.<N + i>.self_attn.attn``, ``N`` the target's
      ``num_hidden_layers`` (the head's ``start_layer_id``);
    - ``draft_model``: the draft model's own names under ``draft_model.``
      (``DraftModelProposer._get_model``: ``get_model(..., prefix="draft_model")``).

    Other drafters keep their names (MTP modules are named by :func:`mtp_drafter`).
    """
    m = drafter.model
    if drafter.method in EAGLE_NUMBERED_METHODS and m.family in ("llama", "deepseek") and m.naming.layer_names is None:
        n = target.num_decoder_layers
        names = tuple(f"model.layers.{n + i}.self_attn.attn" for i in range(m.num_layers))
    elif drafter.method == "draft_model":
        names = tuple(f"draft_model.{m.layer_name(i)}" for i in range(m.num_layers))
    else:
        return drafter
    return replace(drafter, model=m.evolve(layer_names=names))


#: ``SpeculativeConfig.use_eagle()``: the methods that draft from the target's hidden states
EAGLE_STYLE_METHODS = frozenset({"eagle", "eagle3", "mtp", "dflash", "dspark"})


def chunked_local_without_hybrid_manager(
    model: ModelGeometry, drafter: Drafter | None, method: str | None
) -> tuple[ModelGeometry, Drafter | None, str]:
    """``model`` and ``drafter`` as vLLM lays out their KV cache when chunked local attention
    meets an EAGLE-style drafter (``method`` in :data:`EAGLE_STYLE_METHODS`, any ``*_mtp``):
    ``VllmConfig`` turns the hybrid KV cache manager off, and ``unify_hybrid_kv_cache_specs``
    then promotes every local layer, the target's chunked ones and the drafter's sliding ones
    alike, to full attention (``_promote_local_kv_cache_specs``) where some layer is full
    attention. Returns both with their local layers full, and the note saying so (``""`` and
    both unchanged otherwise).

    :raises InputError: local layers of two kinds and no full-attention layer: nothing to
        promote them to, and vLLM fails to unify the specs (``ValueError``).
    """
    if method is None or LayerKind.CHUNKED not in model.layer_kinds:
        return model, drafter, ""
    if method not in EAGLE_STYLE_METHODS and not method.endswith("mtp"):
        return model, drafter, ""
    local = (LayerKind.CHUNKED, LayerKind.SLIDING)
    kinds = set(model.layer_kinds) | set(drafter.model.layer_kinds if drafter is not None else ())
    if len(kinds) == 1:
        return model, drafter, ""  # one uniform spec: nothing unified
    if LayerKind.FULL not in kinds:
        raise InputError(
            "--speculative-config",
            None,
            f"speculative method {method} with chunked local attention: vLLM disables the hybrid KV cache manager "
            "and cannot unify the chunked local and sliding-window layers without a full-attention layer "
            "(Failed to promote local KV cache specs to one unified type)",
        )

    def promoted(m: ModelGeometry) -> ModelGeometry:
        if not any(k in local for k in m.layer_kinds):
            return m
        return m.evolve(
            layer_kinds=tuple(LayerKind.FULL if k in local else k for k in m.layer_kinds), attention_chunk_size=None
        )

    if drafter is not None:
        drafter = replace(drafter, model=promoted(drafter.model))
    return (
        promoted(model),
        drafter,
        (
            f"speculative method {method} with chunked local attention: vLLM disables the hybrid KV cache "
            "manager and caches the local (chunked, sliding-window) layers as full attention"
        ),
    )


def hidden_state_drafter(model: ModelGeometry, args: EngineArgs) -> Drafter:
    """The cache-only layer of ``"method": "extract_hidden_states"``: one layer after the
    target's, caching ``len(eagle_aux_hidden_state_layer_ids)`` hidden states of
    ``hidden_size`` elements per token, unsplit by tensor parallelism (``ExtractHiddenStatesModel``
    and its ``CacheOnlyAttentionLayer``, ``HiddenStateCacheSpec``; the proposer's checks in
    ``v1/spec_decode/extract_hidden_states.py``).

    :raises InputError: vLLM's refusals: not exactly one speculative token, a padded drafter
        batch disabled, no layer ids, or a config without ``hidden_size``.
    """
    where = "--speculative-config"
    if args.num_speculative_tokens != 1:
        raise InputError(
            where,
            "num_speculative_tokens",
            f"extract_hidden_states proposes exactly 1 token, got {args.num_speculative_tokens} "
            "(ExtractHiddenStatesProposer asserts num_speculative_tokens == 1)",
        )
    if args.disable_padded_drafter_batch:
        raise InputError(
            where,
            "disable_padded_drafter_batch",
            "disable_padded_drafter_batch is not supported with extract_hidden_states method",
        )
    if not args.aux_hidden_state_layer_ids:
        raise InputError(
            where,
            "draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids",
            "eagle_aux_hidden_state_layer_ids must be set in the draft model config for extract_hidden_states method",
        )
    if not model.hidden_size:
        raise InputError(model.source, "hidden_size", "missing: the hidden-state cache layer is hidden_size wide")
    layer = model.evolve(
        layer_kinds=(LayerKind.HIDDEN_STATE,),
        num_kv_heads=len(args.aux_hidden_state_layer_ids),
        head_dim=model.hidden_size,
        head_dim_v=0,
        full_attention=None,
        sliding_window=None,
        attention_chunk_size=None,
        num_mtp_layers=0,
        mtp_kind=None,
        layer_prefix="cache_only_layers",
        # ExtractHiddenStatesModel names it after the target's layer count
        layer_names=(f"cache_only_layers.{model.num_decoder_layers}",),
        decoder_layers=None,
    )
    return Drafter(model=layer, method="extract_hidden_states", layer_prefix="cache_only_layers")


#: ``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`` (``vllm/config/vllm.py``, vLLM 0.28.0, CUDA).
DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = frozenset(
    {
        "DeepseekV2ForCausalLM",
        "DeepseekV4ForCausalLM",
        "GraniteMoeForCausalLM",
        "InklingForCausalLM",
        "InklingForConditionalGeneration",
        "KimiK3ForConditionalGeneration",
        "LongcatFlashNgramForCausalLM",
        "Qwen2MoeForCausalLM",
    }
)


def uses_v2_model_runner(
    model: ModelGeometry, args: EngineArgs, drafter: Drafter | None = None, rules: VersionRules | None = None
) -> bool:
    """Whether vLLM runs ``model`` on its V2 model runner (``VllmConfig.use_v2_model_runner``
    for the inputs dryboot takes). From 0.29 (``rules.v2_runner_v1_methods``): always, unless the
    speculative method is one V2 lacks. In 0.27.1/0.28.0: forced by a DFlash drafter mixing
    sliding and full layers (or a DFlash2 one); never with a speculative method V2 lacks (ngram,
    suffix, ...) or EAGLE3 under pipeline parallelism; else the default-V2 architectures, and
    other models unless hybrid, attention-free or MoE. On 0.30 / 0.31 ``--mamba-cache-mode all``
    keeps the V1 runner (``rules.v2_runner_lacks_mamba_all``): the mode as the model's config hook leaves it
    (:func:`effective_mamba_cache_mode`), which runs before vLLM asks which runner."""
    method = args.speculative_method
    v1_methods = rules.v2_runner_v1_methods if rules is not None else None
    if v1_methods is not None:
        if (
            rules is not None
            and rules.v2_runner_lacks_mamba_all
            and effective_mamba_cache_mode(model, args, rules) == "all"
        ):
            return False
        return method not in v1_methods
    if method == "dflash" and drafter is not None:
        kinds = drafter.model.layer_kinds
        sliding = sum(k is LayerKind.SLIDING for k in kinds)
        if 0 < sliding < len(kinds) or drafter.model.architecture == "DFlash2DraftModel":
            return True
    if method == "eagle3" and args.pipeline_parallel_size > 1:
        return False
    if (
        method is not None
        and method not in ("eagle", "eagle3", "mtp", "dflash", "dspark")
        and not method.endswith("mtp")
    ):
        return False
    default_v2 = model.architecture in DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
    if (model.is_hybrid and not default_v2) or model.mamba.attention_free:
        return False
    return default_v2 or model.parallel.num_experts == 0


def _drafter_embedding_refusal(
    model: ModelGeometry, args: EngineArgs, drafter: Drafter, rules: VersionRules
) -> str | None:
    """vLLM's refusal of a drafter that needs the target's input embedding where the target's last
    pipeline stage lacks it (:func:`dryboot.vllm.spec_decode_embed.drafter_embedding_refusal`; the
    V2 model runner's ``maybe_share_target_embed``), or ``None``. The drafter checkpoint's tensor
    names, where its directory holds safetensors, decide whether it carries its own embedding.

    :raises InputError: an unreadable safetensors header of the drafter."""
    if drafter.method not in EMBED_SHARING_METHODS or not uses_v2_model_runner(model, args, drafter, rules):
        return None
    args_of = (model.architecture, model.source, drafter.model.architecture, drafter.model.source, drafter.method)
    why = drafter_embedding_refusal(*args_of, None)
    if why is None or last_stage_embedding(model.architecture, model.source) is None:
        return why
    # the drafter checkpoint's own embed_tokens (process_eagle_weight) spares it the target's
    names = checkpoint_tensor_names(Path(drafter.model.source))
    return why if names is None else drafter_embedding_refusal(*args_of, names)


def v1_runner_refusal(
    model: ModelGeometry, args: EngineArgs, drafter: Drafter | None, rules: VersionRules
) -> str | None:
    """What vLLM's V1 model runner refuses of this configuration, in its words ("Model Runner V1 does not
    support: ..."), or ``None``: the V2 runner serves it, or V1 supports it (0.29+:
    ``VllmConfig._validate_v1_model_runner``; the features of ``rules.v1_runner_refuses``)."""
    if rules.v2_runner_v1_methods is None or uses_v2_model_runner(model, args, drafter, rules):
        return None
    refuses, method = rules.v1_runner_refuses, args.speculative_method
    unsupported = []
    if "dspark" in refuses and method == "dspark":
        unsupported.append("dspark speculative decoding")
    if method == "dflash" and drafter is not None:
        kinds = drafter.model.layer_kinds
        sliding = sum(k is LayerKind.SLIDING for k in kinds)
        if "mixed_dflash" in refuses and 0 < sliding < len(kinds):
            unsupported.append("mixed sliding/full dflash drafts")
        if "dflash2" in refuses and drafter.model.architecture == "DFlash2DraftModel":
            unsupported.append("dflash2 drafts")
    return f"Model Runner V1 does not support: {', '.join(unsupported)}" if unsupported else None


def async_scheduling_blocker(args: EngineArgs, rules: VersionRules) -> str | None:
    """Why vLLM cannot schedule async with this speculative config (its refusal of an explicit
    ``--async-scheduling``, in the release's wording), or ``None`` (``VllmConfig.__post_init__``).

    Before 0.33 a method outside ``ASYNC_SPECULATIVE_METHODS`` or ``disable_padded_drafter_batch``
    blocks it; from 0.33 only under the V1 model runner, which runs the release's
    ``v2_runner_v1_methods`` (switch ``async_limits_v1_runner_only``).
    """
    method = args.speculative_method
    if method is None:
        return None
    if rules.async_limits_v1_runner_only:
        # the V1 runner's methods are none of the async-capable ones
        if method in (rules.v2_runner_v1_methods or ()):
            return f"Async scheduling is not supported by the V1 model runner with {method}-based speculative decoding"
        return None
    if not supports_async_scheduling(method):
        return (
            "Currently, async scheduling is only supported with EAGLE/MTP/Draft Model/NGram GPU/DSpark kind "
            f"of speculative decoding (method {method!r})"
        )
    if args.disable_padded_drafter_batch:
        return "Async scheduling is not compatible with disable_padded_drafter_batch=True"
    return None


def async_scheduling_refusal(args: EngineArgs, blocker: str | None) -> InputError | None:
    """vLLM's refusal of an explicit ``--async-scheduling`` that ``blocker`` (:func:`resolve_async_scheduling`'s)
    blocks, or ``None``. ``VllmConfig.__post_init__`` makes it (every release) after the target's ``ModelConfig``,
    ``ParallelConfig``, ``SpeculativeConfig`` and ``SchedulerConfig``: raised there by :func:`create_engine_config`.
    """
    if args.async_scheduling and blocker is not None:
        return InputError("--async-scheduling", None, f"{blocker} (vLLM's VllmConfig refuses it)")
    return None


def resolve_async_scheduling(args: EngineArgs, rules: VersionRules) -> tuple[bool, str | None]:
    """(async scheduling on, why vLLM turns it off or ``None``), as ``VllmConfig.__post_init__``
    resolves it: the flag when given, else on unless :func:`async_scheduling_blocker` names a reason (or,
    on 0.27.1, the method is ``draft_model``: ``rules.async_default_skips_draft_model``). A given flag
    that the reason blocks is refused (:func:`async_scheduling_refusal`), not here.
    """
    blocker = async_scheduling_blocker(args, rules)
    if (
        args.async_scheduling is None
        and rules.async_default_skips_draft_model
        and args.speculative_method == "draft_model"
    ):
        # 0.27.1's default branch does not list draft_model, its explicit branch does
        blocker = blocker or "Async scheduling not supported with draft_model-based speculative decoding"
        return False, blocker
    on = args.async_scheduling if args.async_scheduling is not None else blocker is None
    return on, blocker


def max_concurrent_batches(
    model: ModelGeometry, args: EngineArgs, drafter: Drafter | None, rules: VersionRules, async_scheduling: bool
) -> int:
    """``VllmConfig.max_concurrent_batches``: 2 with async scheduling at PP = 1, PP + 1 with it on
    the V2 model runner at PP > 1, else PP (sliding windows keep that many batches' tokens)."""
    pp = args.pipeline_parallel_size
    if not async_scheduling:
        return pp
    if pp <= 1:
        return 2
    return pp + 1 if uses_v2_model_runner(model, args, drafter, rules) else pp


def limit_max_model_len_to_draft(
    model: ModelGeometry,
    args: EngineArgs,
    drafter: Drafter | None,
    rules: VersionRules,
    max_model_len: int,
    notes: list[str],
) -> int:
    """The target's ``max_model_len`` after ``VllmConfig._limit_max_model_len_to_draft`` (0.33:
    ``rules.limit_max_model_len_to_draft``): on the V2 model runner, a drafter other than a draft
    model whose RoPE types do not all only size the rotary table (its ``max_position_embeddings``
    is then not raised to the target's) lowers it to the draft's ``max_model_len``, the draft's
    derived length (a YaRN config's taken as already scaled) capped at the target's. A note says
    so, as vLLM warns. Tokens.

    :raises InputError: such a drafter whose config names no length (vLLM's 2048 assumption for
        it is not modelled)."""
    if (
        not rules.limit_max_model_len_to_draft
        or drafter is None
        or drafter.method == "draft_model"
        or drafter.model.max_len.rope_sizes_cache_only
        or not uses_v2_model_runner(model, args, drafter, rules)
    ):
        return max_model_len
    traits = drafter.model.max_len
    draft_len = traits.derived(rules.yarn_max_len_prescaled)
    if draft_len is None:
        raise InputError(
            "--speculative-config",
            "max_position_embeddings",
            f"the drafter names no maximum length: how vLLM {rules.version} limits max_model_len to it is not modelled",
        )
    if draft_len >= max_model_len:
        return max_model_len
    notes.append(
        f"The draft model's max_model_len ({draft_len}) is smaller than the target model's ({max_model_len}) and "
        f"the V2 model runner can't skip speculation for longer sequences; reducing max_model_len to {draft_len}."
    )
    return draft_len


def derive_max_model_len(model: ModelGeometry, args: EngineArgs) -> int:
    """``--max-model-len`` checked against the length the config allows, or that length when
    not given / ``-1`` (``ModelConfig._get_and_verify_max_len``; the derivation, RoPE scaling
    included, is :func:`dryboot.vllm.models.common.derived_max_model_len`). Tokens.

    From 0.30 (``yarn_max_len_prescaled``) a YaRN config's length is its
    ``max_position_embeddings`` unscaled (``MaxLenTraits.yarn_unscaled``).

    :raises InputError: a length beyond the derived one (unless ``VLLM_ALLOW_LONG_MAX_MODEL_LEN``
        is set, as vLLM allows), or no length at all.
    """
    derived = model.max_len.derived(rules_for(args.vllm_version).yarn_max_len_prescaled)
    requested = args.max_model_len
    if derived is None:
        # no length key at all: vLLM takes the flag as it is (so -1 fails its validation), else
        # assumes 2048 (and warns)
        if requested == -1:
            raise InputError(
                "--max-model-len",
                "-1",
                f"{model.source} names no maximum length to auto-fit from: max_model_len must be a positive "
                "integer, got int: -1",
            )
        return requested if requested is not None else 2048
    if requested is None or requested == -1:
        if model.max_len.default_max_model_len is not None:
            return model.max_len.default_max_model_len
        return derived
    if (
        derived is not None
        and requested > derived
        and (model.max_len.model_max_length is None or requested > model.max_len.model_max_length)
        and not args.allow_long_max_model_len
        and os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "0") not in ("1", "true", "True")
    ):
        raise InputError(
            "--max-model-len",
            str(requested),
            f"User-specified max_model_len ({requested}) is greater than the derived max_model_len "
            f"({model.max_len.max_len_key}={derived} or model_max_length={model.max_len.model_max_length} in "
            f"{model.source}); "
            "vLLM refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1",
        )
    return requested


def check_mamba_cache_mode_choice(args: EngineArgs, rules: VersionRules) -> None:
    """vLLM's argument parser on ``--mamba-cache-mode``, whatever the model (``MambaCacheMode``).

    :raises InputError: ``all`` on a release without it (0.32+)."""
    if args.mamba_cache_mode == "all" and not rules.mamba_mode_all:
        raise InputError(
            "--mamba-cache-mode",
            "all",
            f"invalid choice: 'all' (choose from 'align', 'none'): removed in vLLM {rules.version}",
        )


def check_parser_choices(args: EngineArgs, rules: VersionRules) -> None:
    """vLLM's argument parser on the choices a release lists (``--mamba-cache-mode``'s
    ``MambaCacheMode``, ``--kv-cache-dtype``'s ``CacheDType``): checked before any config is read,
    as ``vllm serve`` exits on them before it loads the model.

    :raises InputError: a choice the release does not list, naming the flag."""
    check_mamba_cache_mode_choice(args, rules)
    _check_kv_cache_dtype_choice(args, rules)


def _check_kv_cache_dtype_choice(args: EngineArgs, rules: VersionRules) -> None:
    """:raises InputError: a ``--kv-cache-dtype`` the release's ``CacheDType`` has not (its CLI parser exits)."""
    if args.kv_cache_dtype in rules.unknown_kv_cache_dtypes:
        raise InputError(
            "--kv-cache-dtype",
            args.kv_cache_dtype,
            f"vllm serve: error: argument --kv-cache-dtype: invalid choice: '{args.kv_cache_dtype}' "
            f"(vLLM {rules.version})",
        )


def resolve_mamba_cache_mode(model: ModelGeometry, args: EngineArgs, rules: VersionRules, log: list[str]) -> str:
    """``MambaModelConfig.verify_and_update_config``: prefix caching on -> ``align`` unless
    set; off -> ``none``."""
    mode = args.mamba_cache_mode or "none"
    check_mamba_cache_mode_choice(args, rules)
    if rules.mamba_cache_mode_ignored and args.mamba_cache_mode is not None:
        log.append(
            "--mamba-cache-mode is deprecated and will be removed in v0.33.0. "
            "It has no effect: Mamba prefix caching follows --enable-prefix-caching."
        )
        mode = "none"
    if args.enable_prefix_caching:
        if mode == "none":
            # 0.27.1 defaults to 'all' where the model class supports mamba prefix caching
            # (Gated DeltaNet models do not), 0.28.0+ to 'align'.
            mode = "all" if rules.mamba_default_all and model.supports_mamba_prefix_caching else "align"
            log.append(
                f"Mamba cache mode is set to '{mode}' for {model.architecture} by default "
                "when prefix caching is enabled"
            )
        if mode == "all" and not model.supports_mamba_prefix_caching:
            # Gated DeltaNet models (and LFM2) do not implement SupportsMambaPrefixCaching.
            mode = "align"
            log.append(
                "Hybrid or mamba-based model detected without support for prefix caching with Mamba cache "
                "'all' mode: falling back to 'align' mode."
            )
    elif mode != "none":
        mode = "none"
        log.append("Mamba cache mode is set to 'none' when prefix caching is disabled")
    return mode


def effective_mamba_cache_mode(model: ModelGeometry, args: EngineArgs, rules: VersionRules) -> str | None:
    """``cache_config.mamba_cache_mode`` once ``VllmConfig.try_verify_and_update_config`` has run: a model with
    mamba state resolved by :func:`resolve_mamba_cache_mode` (``all`` becomes ``none`` without prefix caching,
    ``align`` for a class without mamba prefix caching), any other model's as given (``None``: not given)."""
    if not model.has_mamba_state:
        return args.mamba_cache_mode
    return resolve_mamba_cache_mode(model, args, rules, [])


@dataclass(frozen=True)
class EngineConfig:
    """The planning-relevant part of vLLM's ``VllmConfig``, resolved once from the flags.

    ``kv_cache_dtype`` is the resolved name (``auto`` becomes the quantization config's dtype
    where it sets one); ``drafter`` includes an MTP module under ``"method": "mtp"``; ``log``
    holds the lines vLLM prints while resolving (mamba cache mode); ``notes`` the assumptions
    and caveats the figures rest on. ``async_scheduling``: ``VllmConfig``'s resolved
    ``scheduler_config.async_scheduling``. ``kv_cache_layout``: ``"grouped"`` (vLLM's KV cache
    groups), ``"packed"`` or ``"repeat-packed"`` (the model family's ``kv_cache_layout`` hook:
    DeepSeek-V4, Step5).
    """

    model: ModelGeometry
    args: EngineArgs
    rules: VersionRules
    model_dtype: str
    kv_cache_dtype: str
    backend: AttentionBackend
    max_model_len: int
    mamba_cache_mode: str
    drafter: Drafter | None
    drafter_kv_cache_dtype: str | None
    drafter_model_dtype: str | None
    drafter_backend: AttentionBackend | None
    log: tuple[str, ...]
    notes: tuple[str, ...]
    max_concurrent_batches: int
    async_scheduling: bool
    kv_cache_layout: str
    #: where ``notes`` holds the memory flags' notes (:func:`memory_notes`), as (start, end)
    memory_notes_at: tuple[int, int] = (0, 0)

    @property
    def backends(self) -> dict[str, AttentionBackend]:
        """Every backend serving a layer, by name, in the order vLLM's block line names them
        (``Platform._find_non_ssm_backends``: target first; a sparse MLA model's indexer backend before
        its MLA backend, as its layers come first; MiniMax-M3's sparse backends after a dense first
        layer's, before it where a pipeline stage starts at a sparse layer)."""
        out = {DEEPSEEK_V32_INDEXER.name: DEEPSEEK_V32_INDEXER} if LayerKind.MLA_INDEXER in self.model.kinds else {}
        out[self.backend.name] = self.backend
        if LayerKind.MM3_INDEXER in self.model.kinds:
            # MiniMax-M3: each sparse layer's indexer cache, then its main cache, in layer order beside the
            # dense layers' backend: a pipeline stage that starts at a sparse layer names them first, and
            # one without a dense layer names no other
            sparse = {
                MINIMAX_M3_SPARSE_INDEXER.name: MINIMAX_M3_SPARSE_INDEXER,
                MINIMAX_M3_SPARSE.name: MINIMAX_M3_SPARSE,
            }
            first = next(k for k in self.model.layer_kinds if k is not LayerKind.NONE)
            dense = bool(self.model.kinds - {LayerKind.NONE, LayerKind.MM3_INDEXER, LayerKind.MM3_SPARSE})
            out = {**out, **sparse} if first is not LayerKind.MM3_INDEXER else {**sparse, **(out if dense else {})}
        if LayerKind.INKLING_CONV in self.model.kinds or LayerKind.INKLING_CONV_FULL in self.model.kinds:
            # Inkling: each layer's conv state (registered first) on its own backend
            out = {INKLING_SCONV.name: INKLING_SCONV, **out}
        if self.kv_cache_layout == "grouped":
            # the backends a family's side caches bring (GLM-5.3-Flash's indexer and tail ring, 0.30.0 / 0.31.0)
            for own in family_of(self.model).block_backends(self.model, self.args, self.backend):
                out.setdefault(own.name, own)
        if self.drafter_backend is not None:
            out.setdefault(self.drafter_backend.name, self.drafter_backend)
        return out


def check_drafting_slots(args: EngineArgs, method: str) -> None:
    """The scheduler budget left after the drafter's new slots for every sequence (vLLM 0.27.1
    ``VllmConfig._set_max_num_scheduled_tokens``; slots per sequence from
    ``SpeculativeConfig.max_num_new_slots_for_drafting``: ``k - 1`` for parallel drafting,
    which DFlash and DSpark turn on, plus 1 for ``draft_model``).

    :raises InputError: when no token is left to schedule.
    """
    k = args.num_speculative_tokens
    slots = (k - 1 if method in ("dflash", "dspark") else 0) + (1 if method == "draft_model" else 0)
    left = args.resolved_max_num_batched_tokens() - slots * args.resolved_max_num_seqs()
    if left <= 0:
        raise InputError(
            "--speculative-config",
            None,
            f"max_num_scheduled_tokens is set to {left} based on the speculative decoding settings, which does "
            "not allow any tokens to be scheduled. Increase max_num_batched_tokens to accommodate the additional "
            "draft token slots, or decrease num_speculative_tokens or max_num_seqs.",
        )


#: the layer kinds whose ``layer_types`` entry is an attention name (``"full_attention"``, or
#: ``"attention"`` under legacy names): full attention and MLA (Bailing-V2.5's full layers)
_ATTENTION_LAYER_TYPES = frozenset({LayerKind.FULL, LayerKind.MLA})


#: caches that have no ``layer_types`` entry of their own: a drafter's hidden-state layer, Qwen4-Exp's
#: PLE short convolution (built before a decoder layer's mixer)
_NO_LAYER_TYPE = frozenset({LayerKind.HIDDEN_STATE, LayerKind.PLE})


def is_hybrid(model: ModelGeometry, rules: VersionRules) -> bool:
    """vLLM's ``ModelConfig.is_hybrid`` for ``model`` on ``rules``' release: its class is
    ``IsHybrid`` (``model.is_hybrid``), unless its HF config class keeps a ``layer_types``
    attribute (``MambaState.hf_layer_types``) whose every entry is an attention layer's name that
    the release accepts: ``"attention"`` on every release, ``"full_attention"`` from 0.29
    (``hybrid_full_attention_types``). Which name an attention layer has: ``"attention"`` where
    the release's transformers keeps legacy names (``legacy_layer_type_names``) and the class
    uses them (``MambaState.hf_legacy_attention_name``: Granite-4, NemotronH), else
    ``"full_attention"``. A layer of any other kind (a state layer, NemotronH's MLP / MoE
    layers: ``NONE``, a sliding window) keeps it hybrid; a drafter's hidden-state layer and
    Qwen4-Exp's PLE caches have no entry (:data:`_NO_LAYER_TYPE`)."""
    if not model.is_hybrid or not model.mamba.hf_layer_types:
        return model.is_hybrid
    decoder = [k for k in model.layer_kinds if k not in _NO_LAYER_TYPE]
    if not decoder or not all(k in _ATTENTION_LAYER_TYPES for k in decoder):
        return True
    legacy = rules.legacy_layer_type_names and model.mamba.hf_legacy_attention_name
    return not (legacy or rules.hybrid_full_attention_types)


def for_release(model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
    """``model`` as ``rules``' release reads its config (its family's ``for_release`` hook: the
    release's layers; served by its Transformers backend, no stage needs an MoE layer), then
    ``ModelConfig.is_hybrid`` (:func:`is_hybrid`): an ``IsHybrid`` class
    the release counts as no hybrid (its layers all attention) keeps no state either, so no mamba
    cache mode, hybrid block alignment or state page.

    :raises InputError: such a model that still builds a state cache (Qwen4-Exp's PLE beside
        all-attention layers): vLLM's ``MambaBase.get_kv_cache_spec`` asserts a mamba block size,
        which only a hybrid gets."""
    model = family_of(model).for_release(model, rules)
    if model.parallel.first_moe_layer is not None and str(
        release_registry_file(model.architecture, rules.version) or ""
    ).startswith("transformers"):
        # the backend's MoEMixin.recursive_replace fuses the expert blocks a stage holds and needs
        # none: a stage of dense layers builds (Mellum at TP 2 x PP 3 on 0.32.0 / 0.33.0, recorded)
        model = model.evolve(first_moe_layer=None, moe_layers=None)
    if model.is_hybrid and not is_hybrid(model, rules):
        if any(k.is_mamba for k in model.layer_kinds):
            # a state cache without a layer_types entry (Qwen4-Exp's PLE beside all-attention layers):
            # no hybrid, so no mamba block size (recorded on 0.29.0)
            raise InputError(
                model.source,
                "layer_types",
                "every entry is attention, so vLLM counts the model as no hybrid (ModelConfig.is_hybrid), yet a "
                "state layer is built: AssertionError: mamba_block_size is None (MambaBase.get_kv_cache_spec)",
            )
        model = model.evolve(
            hybrid_class=False, gdn=None, mamba2=None, mamba1=None, short_conv=None, kda=None, linear_attn=None
        )
    return model


def create_engine_config(model: ModelGeometry, args: EngineArgs, drafter: Drafter | None) -> EngineConfig:
    """Resolve the flags for ``model`` (and its drafter) as ``create_engine_config`` does: the
    stages below, in vLLM's order (so the first refusal is the one vLLM would give).

    :raises InputError: an impossible flag, or a model vLLM refuses to build with these flags
        (the message names the flag or config field and vLLM's reason).
    """
    args.validate()
    rules = rules_for(args.vllm_version)
    check_parser_choices(args, rules)  # the CLI parser, before any config is read
    async_on, async_blocker = resolve_async_scheduling(args, rules)
    async_refusal = async_scheduling_refusal(args, async_blocker)  # raised where VllmConfig makes it
    # create_engine_config resolves the checkpoint's KV cache dtype for a given ``auto``
    # (resolve_kv_cache_dtype_string) before VllmConfig runs the models' verify_and_update_config hooks
    given_kv_dtype = args.kv_cache_dtype
    args = family_of(model).engine_args(model, args)
    args.validate()
    model, args, drafter = _for_release(model, args, drafter, rules)
    notes = [*args.input_notes, *_budget_notes(args, async_blocker)]
    memory_at = (len(notes) - len(memory_notes(args)), len(notes))
    _check_release_inputs(model, args, rules)
    if args.trust_remote_code and model.config_class.auto_config:
        notes.append(
            f"--trust-remote-code: vLLM reads this config with the checkpoint's own config class (auto_map); dryboot "
            f"reads it as {model.architecture}'s config class reads it (the checkpoint's code is not run)"
        )
    # ModelConfig refuses a max_model_len before anything asks whether the model builds with these flags
    max_model_len = derive_max_model_len(model, args)
    _check_model_builds(model, args)
    check_block_shards(
        model.quant.fp8_block_shards, args.tensor_parallel_size, model.source, moe_refine=rules.fp8_moe_block_refine
    )
    drafter = _resolve_drafter(model, args, drafter, rules)
    method = args.speculative_method or (drafter.method if drafter is not None else None)
    model, drafter, hma_note = chunked_local_without_hybrid_manager(model, drafter, method)
    if hma_note:
        notes.append(hma_note)
    # SpeculativeConfig: the draft model checked with the target's pipeline size
    hidden_states = drafter is None and args.speculative_method == "extract_hidden_states"
    check_drafter_pp(
        args.pipeline_parallel_size,
        "extract_hidden_states" if hidden_states else (drafter.method if drafter else None),
        rules.pp_draft_models,
    )
    if LayerKind.CROSS in model.kinds:
        # an encoder-decoder model: no chunked prefill, its default budget and its refusal
        defaulted = args.max_num_batched_tokens is None
        args = encoder_decoder_batched_tokens(args, max_model_len)
        if defaulted:
            notes.append(
                f"max_num_batched_tokens {args.max_num_batched_tokens}: vLLM's default for an encoder-decoder model "
                "(no chunked prefill: at least max_model_len, at most max_num_seqs x max_model_len); it is also "
                "max_num_encoder_input_tokens, which sizes every cross-attention layer's blocks per request "
                "(give --max-num-batched-tokens)"
            )
    verify_max_model_len(args, max_model_len)  # SchedulerConfig, before VllmConfig
    if async_refusal is not None:
        # VllmConfig.__post_init__, before its model runner checks
        raise async_refusal
    v1_refusal = v1_runner_refusal(model, args, drafter, rules)
    if v1_refusal is not None:
        # VllmConfig.__post_init__ on the V1 model runner (a V1 speculative method, or 0.30 / 0.31's
        # --mamba-cache-mode all)
        flag = (
            "--mamba-cache-mode" if effective_mamba_cache_mode(model, args, rules) == "all" else "--speculative-config"
        )
        raise InputError(flag, None, f"{v1_refusal} (vLLM {rules.version}'s V1 model runner)")
    max_model_len = limit_max_model_len_to_draft(model, args, drafter, rules, max_model_len, notes)
    if rules.drafting_slots_per_seq and method is not None:
        check_drafting_slots(args, method)
    kv_dtype = _target_kv_cache_dtype(model, args, given_kv_dtype)
    if kv_dtype == "fp8_e4m3" and model.sparse_mla and rules.sparse_mla_fp8_e4m3_sm90:
        _check_sparse_fp8_e4m3(model, args, rules)
    log: list[str] = []
    if args.mamba_cache_mode == "all" and rules.mamba_all_deprecated:
        # CacheConfig._validate_mamba_cache_mode (0.30, 0.31), whatever the model
        log.append(
            "Mamba cache mode 'all' is deprecated and will be removed in an upcoming release. If this is a "
            "problem, please open an issue at https://github.com/vllm-project/vllm/issues."
        )
    # VllmConfig's float KV cache validator (0.33) answers before the quantization config's dtype
    # check (recorded: test_releases gptoss-f16-bf16kv)
    model_dtype = model_dtype_of(model, args, quant_checked=False)
    _check_float_kv_cache_dtype(args, model_dtype, rules)
    _check_quant_act_dtype(model, args, model_dtype)
    _check_nvfp4_mla(model, kv_dtype)
    if hidden_states:
        # the model runner builds its proposer (whose checks refuse) after the engine config
        # is validated and before the model
        drafter = hidden_state_drafter(model, args)
    target_kv_dtype = kv_dtype
    # the hidden-state proposer is built (its checks refuse) before the model; a drafter model after it
    proposer_first = drafter is not None and drafter.method == "extract_hidden_states"
    if proposer_first:
        d_dtype, d_model_dtype, d_backend = _drafter_caches(model, args, drafter, target_kv_dtype, rules)
    else:
        _drafter_kv_cache_dtype(args, drafter, target_kv_dtype)  # SpeculativeConfig's own check
    # the model is built: the target's class, then the drafter's loader
    _verify_target_builds(model, args)
    if drafter is not None and args.pipeline_parallel_size > 1 and rules.pp_draft_models:
        # the V2 runner's drafter loader on the last stage (maybe_share_target_embed), while the model is built
        embed_refusal = _drafter_embedding_refusal(model, args, drafter, rules)
        if embed_refusal is not None:
            raise InputError("--pipeline-parallel-size", str(args.pipeline_parallel_size), embed_refusal)
    kv_dtype = family_of(model).kv_cache_dtype(model, kv_dtype)
    family_of(model).verify_layers(model, args)
    # the model is built: each attention layer selects its backend, then an MLA layer its prefill
    # backend (the family's release checks)
    backend = backend_for(args.attention_backend, kv_dtype, model, args, rules, "--attention-backend")
    check_cross_attention_backend(model, backend, args.attention_backend)
    family_of(model).verify_built(model, args, backend.name)
    if model.naming.unbuildable is not None and args.pipeline_parallel_size == 1:
        # a layer the model class fails to build, after the earlier layers' backends (under pipeline
        # parallelism on its own stage: planner.plan)
        _, where, why = model.naming.unbuildable
        raise InputError(model.source, where, why)
    if not proposer_first:
        if drafter is not None and drafter.method == "draft_model":
            # the draft model's registered class is built after the target (its layers' checks too)
            family_of(drafter.model).verify_layers(drafter.model, args)
        d_dtype, d_model_dtype, d_backend = _drafter_caches(model, args, drafter, target_kv_dtype, rules)
    d_backend = drafter_flash_attn(model, drafter, d_backend, kv_dtype, args, rules)
    family_of(model).verify_release(model, rules)
    if drafter is not None and drafter.model.family == "deepseek":
        # an MLA EAGLE-3 head's layers are built the same way (deepseek_eagle3.py)
        family_of(drafter.model).verify_release(drafter.model, rules)
    return EngineConfig(
        model=model,
        args=args,
        rules=rules,
        model_dtype=model_dtype,
        kv_cache_dtype=kv_dtype,
        backend=backend,
        max_model_len=max_model_len,
        # MambaModelConfig.verify_and_update_config runs for the model class, layers or not
        mamba_cache_mode=resolve_mamba_cache_mode(model, args, rules, log) if model.has_mamba_state else "none",
        drafter=drafter,
        drafter_kv_cache_dtype=d_dtype,
        drafter_model_dtype=d_model_dtype,
        drafter_backend=d_backend,
        log=tuple(log),
        notes=tuple(notes),
        max_concurrent_batches=max_concurrent_batches(model, args, drafter, rules, async_on),
        async_scheduling=async_on,
        kv_cache_layout=family_of(model).kv_cache_layout(model),
        memory_notes_at=memory_at,
    )


def _check_sparse_fp8_e4m3(model: ModelGeometry, args: EngineArgs, rules: VersionRules) -> None:
    """An ``fp8_e4m3`` cache on a sparse MLA model (what ``auto`` becomes for a ModelOpt checkpoint with an
    FP8 KV cache) on a release that ships ``FLASHINFER_MLA_SPARSE_SM90`` (0.30+): on SM 9.x the backends'
    selection serves it (``FLASHINFER_MLA_SPARSE_SM90``'s plain fp8 rows, recorded:
    ``tests/fidelity/data/sm90-sparse-mla/``), on SM 12.x ``FLASHINFER_MLA_SPARSE_SM120`` as ``fp8_ds_mla``.

    :raises InputError: another GPU generation, or on SM 9.x a family that hands its layers another backend
        than ``FLASHINFER_MLA_SPARSE_SM90`` itself (not verified)."""
    major = args.device.capability[0]
    handed = family_of(model).handed_backend(model, args, args.attention_backend) if major == 9 else None
    if major in (9, 12) and (handed is None or handed.name == FLASHINFER_MLA_SPARSE_SM90.name):
        return
    where = f"with {handed.name}, which {model.architecture} hands its layers" if handed else f"on SM {major}.x"
    raise InputError(
        "--kv-cache-dtype",
        args.kv_cache_dtype if args.kv_cache_dtype != "auto" else "auto (fp8_e4m3: the checkpoint's KV quantization)",
        f"{model.source}: an fp8_e4m3 cache on a sparse MLA model {where} with vLLM {rules.version} is not "
        "verified (recorded: the backends' own selection on SM 9.0, FLASHINFER_MLA_SPARSE_SM120 on SM 12.x)",
    )


#: the flags that size the KV budget and nothing else the engine config resolves
MEMORY_FLAGS = ("kv_cache_memory_bytes", "non_kv_memory_bytes")


def with_memory(cfg: EngineConfig, args: EngineArgs) -> EngineConfig:
    """``cfg`` as :func:`create_engine_config` resolves it for ``args``, which differ from the
    flags ``cfg`` was resolved for in :data:`MEMORY_FLAGS` alone (checked with
    ``args.validate()`` by the caller): the same config, those flags and their notes. Nothing
    else it resolves reads them (they size the budget, which the capacity takes)."""
    resolved = cfg.args.evolve(**{name: getattr(args, name) for name in MEMORY_FLAGS})
    start, end = cfg.memory_notes_at
    notes = memory_notes(resolved)
    return replace(
        cfg,
        args=resolved,
        notes=(*cfg.notes[:start], *notes, *cfg.notes[end:]),
        memory_notes_at=(start, start + len(notes)),
    )


def _for_release(
    model: ModelGeometry, args: EngineArgs, drafter: Drafter | None, rules: VersionRules
) -> tuple[ModelGeometry, EngineArgs, Drafter | None]:
    """The models as the release reads their configs, and the release's prefix-caching default."""
    model = for_release(model, rules)
    if drafter is not None and (released := for_release(drafter.model, rules)) is not drafter.model:
        drafter = replace(drafter, model=released)
    if args.enable_prefix_caching is None:
        args = args.evolve(enable_prefix_caching=_prefix_caching_on(model, rules))
    return model, args, drafter


def prefix_caching_default(model: ModelGeometry, rules: VersionRules) -> bool:
    """Whether prefix caching is on when no flag sets it, for ``model`` as the release reads it.

    Mirrors ``ModelConfig.is_prefix_caching_supported``: on, except for attention-free models
    (and, before 0.28, hybrid models: ``EngineArgs._set_default_chunked_prefill_and_prefix_caching_args``).
    """
    return _prefix_caching_on(for_release(model, rules), rules)


def _prefix_caching_on(released: ModelGeometry, rules: VersionRules) -> bool:
    return not released.mamba.attention_free and (rules.hybrid_prefix_caching_default or not released.is_hybrid)


def _budget_notes(args: EngineArgs, async_blocker: str | None) -> list[str]:
    """What the flags leave out or make vLLM ignore (async scheduling, the memory flags)."""
    notes = []
    if args.async_scheduling is None and async_blocker is not None:
        notes.append(f"async scheduling is off: {async_blocker}")
    return notes + memory_notes(args)


def memory_notes(args: EngineArgs) -> list[str]:
    """What the memory flags leave out or make vLLM ignore."""
    notes = []
    if args.kv_cache_memory_bytes is not None and args.gpu_memory_bytes is not None:
        notes.append(
            "--kv-cache-memory-bytes is the KV budget; --gpu-memory and --non-kv-memory are ignored (as vLLM does)"
        )
    if args.available_kv_bytes() is None:
        notes.append(
            "No KV budget given (--kv-cache-memory-bytes, or --gpu-memory with --non-kv-memory): "
            "blocks and concurrency not computed."
        )
    return notes


def _check_release_inputs(model: ModelGeometry, args: EngineArgs, rules: VersionRules) -> None:
    """What the release itself cannot take: an architecture not verified on it, a KV cache dtype
    its parser does not know.

    :raises InputError: naming ``architectures`` or ``--kv-cache-dtype``.
    """
    if model.architecture in rules.unverified_architectures:
        raise InputError(
            model.source,
            "architectures",
            f"{model.architecture} is not verified against vLLM {rules.version}'s engine start "
            f"({unverified_reason(rules.version, model.architecture)}), so dryboot does not plan it for that release",
        )
    known = known_model_types(rules.version)
    remote = args.trust_remote_code and model.config_class.auto_config
    for kind in dict.fromkeys(k for k in (model.config_class.hf_model_type, model.model_type) if k):
        if known and kind not in known and not remote:
            # AutoConfig without the checkpoint's own config class: vLLM's ModelConfig fails
            # validating the config (with --trust-remote-code too, when auto_map names no AutoConfig)
            why = (
                "with --trust-remote-code too: its auto_map names no AutoConfig class of its own"
                if args.trust_remote_code
                else f"vLLM {rules.version} reads it only as remote code, --trust-remote-code"
            )
            raise InputError(
                model.source,
                "auto_map" if args.trust_remote_code else "model_type",
                f"The checkpoint you are trying to load has model type `{kind}` but Transformers does not "
                f"recognize this architecture ({why})",
            )
    if (absent := absent_from_release(model.architecture, rules.version)) is not None:
        # a later release's architecture: its family's account of what this release does with it
        # (Muse Spark: the Transformers backend) comes first, else dryboot's own refusal
        family_of(model).verify_release(model, rules)
        raise InputError(model.source, "architectures", absent)
    _check_modelopt_algo(model, rules)
    _check_kv_cache_dtype_choice(args, rules)  # again on the flags the family's engine_args left


def _check_modelopt_algo(model: ModelGeometry, rules: VersionRules) -> None:
    """A nested ModelOpt MIXED_PRECISION ``quant_algo`` as the release normalizes it
    (:func:`dryboot.vllm.versions.modelopt_mixed_refusal`).

    :raises InputError: on a release that refuses it, or whose behaviour is not checked.
    """
    algo = model.quant.modelopt_mixed_algo
    why = None if algo is None else modelopt_mixed_refusal(algo, rules)
    if why is not None:
        raise InputError(model.source, "quantization_config.quantization.quant_algo", why)


def _check_model_builds(model: ModelGeometry, args: EngineArgs) -> None:
    """The target model's config checks on this parallel layout (:mod:`dryboot.vllm.distributed`; its
    family's ``verify``, made while the model is built, is :func:`_verify_target_builds`), and it keeps a
    KV cache at all. Runs after ModelConfig's max_model_len check
    (:func:`derive_max_model_len`), which vLLM makes before any of these.

    :raises InputError: naming the flag or config field and vLLM's reason.
    """
    check_world_size(args)
    check_dcp_divides_tp(args)  # ParallelConfig, before the model config is verified against it
    if (why := drafter_as_model_refusal(model.architecture, args.vllm_version)) is not None:
        raise InputError(model.source, "architectures", why)
    if is_draft_model(model.architecture):
        raise InputError(
            model.source,
            "architectures",
            f"{model.architecture} is a speculative-decoding draft model: vLLM builds it only as a target's "
            "drafter; give it as the --speculative-config model of its target",
        )
    if model.attn.encoder_only_attention and not model.layer_table():
        raise InputError(
            model.source,
            "is_causal",
            f"false: {model.architecture} then builds every attention layer as EncoderOnlyAttention, which keeps no "
            "KV cache; vLLM starts this generation model with no KV cache groups at all (num_blocks 1, the null "
            "block; no capacity), which dryboot does not plan",
        )
    if args.pipeline_parallel_size > 1:
        # VllmConfig's verify_with_parallel_config
        check_pipeline_parallel(model.architecture, args.pipeline_parallel_size)
    family = family_for(model.architecture, model.source)
    # the towers vLLM builds under the multimodal flags: only their sharded layers are checked
    built = family.built_towers(model, args)
    check_tensor_parallel(built, args.tensor_parallel_size)
    check_dcp_kv_heads(built, args)


def _verify_target_builds(model: ModelGeometry, args: EngineArgs) -> None:
    """The target's family checks that vLLM's model class makes while it is built (``load_model``: its
    MoE block against the tensor-parallel size, its mixers' groups, ...), after every config check of
    ``create_engine_config`` (VllmConfig's async-scheduling and model-runner refusals included).

    :raises InputError: naming the flag or config field and vLLM's reason."""
    family = family_for(model.architecture, model.source)
    family.verify(family.built_towers(model, args), args.tensor_parallel_size)


def _resolve_drafter(
    model: ModelGeometry, args: EngineArgs, drafter: Drafter | None, rules: VersionRules
) -> Drafter | None:
    """The drafter vLLM builds: the hidden-state extractor, the given draft model (checked as the
    target is), or the checkpoint's MTP module.

    :raises InputError: a drafter vLLM refuses (one whose class the release lacks, read as
        ``args.drafter_refusal``), or one not modelled with these flags.
    """
    if args.drafter_refusal is not None:
        # SpeculativeConfig.__post_init__ names the draft model's class (update_arch_)
        raise args.drafter_refusal.error(rules.version)
    if drafter is not None:
        drafter_architecture(drafter.method, drafter.model.architecture, drafter.model.source, rules.version)
        if drafter.model.architecture == MTP_ARCHITECTURE:
            if args.pipeline_parallel_size > 1 and rules.pp_draft_models:
                # the proposer maps the draft layers onto target layers by index, which the last
                # stage may not hold
                raise InputError(
                    "--pipeline-parallel-size",
                    str(args.pipeline_parallel_size),
                    "a Gemma-4 assistant drafter under pipeline parallelism is not verified: not modelled",
                )
            drafter = replace(drafter, model=share_with_target(drafter.model, model))
        check_tensor_parallel(drafter.model, args.tensor_parallel_size)
        family_for(drafter.model.architecture, drafter.model.source).verify(drafter.model, args.tensor_parallel_size)
        if drafter.model.v2_runner_refusal and uses_v2_model_runner(model, args, drafter, rules):
            raise InputError(drafter.model.source, None, f"{drafter.model.v2_runner_refusal} (vLLM {rules.version})")
        return name_drafter_layers(model, drafter)
    if args.speculative_method is not None and args.speculative_method.endswith("mtp"):
        # the speculative config's attention_backend names the MTP module's backend too
        mtp = mtp_drafter(model, args.speculative_method)
        return replace(mtp, attention_backend=args.speculative_attention_backend)
    return None


def _target_kv_cache_dtype(model: ModelGeometry, args: EngineArgs, given: str = "auto") -> str:
    """``--kv-cache-dtype`` for the target: ``auto`` takes the quantization config's dtype where
    ``auto`` is what was given (``given``: the flag before the family's config hook; DeepSeek-V3.2's
    takes a given ``bfloat16`` as ``auto`` after vLLM has resolved the checkpoint's dtype, so a
    ModelOpt fp8 checkpoint keeps a bfloat16 cache there).

    :raises InputError: a layout the model cannot take.
    """
    kv_dtype = args.kv_cache_dtype
    if kv_dtype in SPARSE_MLA_ONLY_KV_CACHE_DTYPES and not model.sparse_mla:
        raise InputError(
            "--kv-cache-dtype",
            kv_dtype,
            f"{model.source}: DeepSeek's sparse MLA cache layout, which only the sparse MLA backend "
            "(FLASHMLA_SPARSE, for a model with a sparse-attention indexer) serves; for this model the layout "
            "is not modelled",
        )
    if kv_dtype == "auto" and given == "auto" and model.quant.quant_kv_cache_dtype is not None:
        kv_dtype = model.quant.quant_kv_cache_dtype
    if kv_dtype == "fp8_e5m2" and model.quant.kv_scales_in_checkpoint:
        raise InputError(
            "--kv-cache-dtype", kv_dtype, f"{model.source}: fp8_e5m2 kv-cache is not supported with fp8 checkpoints."
        )
    return kv_dtype


#: the first release whose V2 runner's EAGLE / MTP loader reads the speculative config's ``attention_backend``
#: (``v1/worker/gpu/spec_decode/eagle/utils.py`` ``load_eagle_model``; before it the draft keeps the target's)
EAGLE_V2_NAMED_BACKEND_RELEASE = "0.30.0"


def drafter_backend_name(
    method: str,
    architecture: str,
    model_type: str,
    v2_runner: bool,
    version: str,
    named: str | None,
    target: str | None,
) -> str | None:
    """The attention backend name vLLM builds a speculative drafter's layers with: ``named`` (the speculative
    config's ``attention_backend``), ``target`` (the target's ``attention_config.backend``: ``--attention-backend``
    or a config hook's), or ``None``, an auto-selection for the drafter's own layers (``"auto"`` is ``None``).

    * V1 model runner (``v1/spec_decode/llm_base_proposer.py``
      ``SpecDecodeBaseProposer._create_draft_vllm_config``, 0.27.1-0.33.0): ``named``, never the target's
      ("Never inherit the attention backend from base"); the DFlash, draft-model and Step-3.5 proposers keep
      that choice; the Gemma-4 MTP proposer (``v1/spec_decode/gemma4.py``) puts the target's back when set.
    * V2 model runner (``v1/worker/gpu/spec_decode/``): DFlash / DFlash2 / LiLiCorr (``load_dflash_model``)
      ``named``; EAGLE / EAGLE-3 / MTP (``load_eagle_model``) the target's before 0.30.0, then ``named`` over
      the target's; DSpark and XPress (``load_dspark_model``) ``named`` in 0.27.1, ``named`` over the target's
      in 0.28.0, then ``named``, or the target's for the drafters of ``DSPARK_TARGET_BACKEND_MODEL_TYPES``
      (``_resolve_dspark_attention_backend``); Gemma-4 MTP (``Gemma4Speculator._create_draft_vllm_config``) and
      the plain draft model (``PlainDraftModelSpeculator`` 0.31.0, ``StandaloneARSpeculator`` 0.32.0+
      ``load_draft_model``) the target's, ``named`` unread.

    :param method: the speculative config's ``method`` (``*_mtp`` as ``mtp``).
    :param architecture: the drafter's architecture as vLLM builds it (``Gemma4MTPModel``...).
    :param model_type: the drafter config's ``model_type``.
    :param v2_runner: whether the V2 model runner serves it (:func:`uses_v2_model_runner`).
    :param version: the vLLM release planned.

    An auto-selection (:func:`backend_for` with ``None``) reads the drafter's own geometry (head size, sliding
    window, KV cache dtype). vLLM also sets ``use_non_causal`` for a DFlash drafter with a non-causal layer;
    every CUDA backend dryboot selects for such a (non-MLA) drafter supports it
    (``AttentionBackend.supports_non_causal``: FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLEX_ATTENTION), so the
    priorities are unchanged.
    """
    named = None if named is not None and named.lower() == "auto" else named
    if architecture == MTP_ARCHITECTURE:
        return target if target is not None or v2_runner else named
    if not v2_runner or method == "dflash":
        return named
    if method == "dspark":
        if version_key(version) < version_key("0.28.0"):
            return named
        if version_key(version) < version_key("0.29.0"):
            return named or target
        shares = next(
            (types for first, types in DSPARK_TARGET_BACKEND_MODEL_TYPES if version_key(version) >= version_key(first)),
            frozenset[str](),
        )
        return named or (target if model_type in shares else None)
    if method == "draft_model":
        return target
    if version_key(version) < version_key(EAGLE_V2_NAMED_BACKEND_RELEASE):
        return target
    return named or target


def _drafter_kv_cache_dtype(args: EngineArgs, drafter: Drafter | None, kv_dtype: str) -> str | None:
    """The drafter's KV cache dtype (the speculative config's, else the target's ``kv_dtype``), ``None``
    without a drafter.

    :raises InputError: a dtype vLLM does not know (nor a custom one declared)."""
    if drafter is None:
        return None
    d_dtype = drafter.kv_cache_dtype or kv_dtype
    if d_dtype not in KV_CACHE_DTYPES and args.custom_dtype(d_dtype) is None:
        raise InputError(
            "--speculative-config",
            "kv_cache_dtype",
            f"unknown KV cache dtype {d_dtype!r} ({', '.join(KV_CACHE_DTYPES)}, or a custom one declared)",
        )
    return d_dtype


def _drafter_caches(
    model: ModelGeometry, args: EngineArgs, drafter: Drafter | None, kv_dtype: str, rules: VersionRules
) -> tuple[str | None, str | None, AttentionBackend | None]:
    """(KV cache dtype, model dtype, backend) of the drafter's layers (``None`` without one).

    :raises InputError: a drafter KV cache dtype its layers cannot take.
    """
    if drafter is None:
        return None, None, None
    if drafter.method == "extract_hidden_states":
        # the hidden states keep the model dtype whatever quantized KV cache the target uses
        # (is_quantized_kv_cache: fp8*, *_per_token_head, nvfp4*); any other cache fails the
        # CacheOnlyAttentionLayer's check
        if kv_dtype in ("auto", "bfloat16", "float16"):
            d_dtype = kv_dtype
        elif is_quantized_kv_cache(kv_dtype):
            d_dtype = "auto"
        else:
            raise InputError(
                "--kv-cache-dtype",
                kv_dtype,
                "CacheOnlyAttentionLayer (extract_hidden_states) doesn't support this KV cache dtype",
            )
        return d_dtype, model_dtype_of(model, args), CACHE_ONLY_ATTN
    d_dtype = _drafter_kv_cache_dtype(args, drafter, kv_dtype) or kv_dtype  # a drafter is given: never None
    d_name = drafter_backend_name(
        drafter.method,
        drafter.model.architecture,
        drafter.model.model_type,
        uses_v2_model_runner(model, args, drafter, rules),
        rules.version,
        drafter.attention_backend,
        args.attention_backend,
    )
    d_backend = backend_for(d_name, d_dtype, drafter.model, args, rules, "--speculative-config attention_backend")
    return d_dtype, model_dtype_of(drafter.model, args), d_backend


def drafter_flash_attn(
    model: ModelGeometry,
    drafter: Drafter | None,
    d_backend: AttentionBackend | None,
    kv_dtype: str,
    args: EngineArgs,
    rules: VersionRules,
) -> AttentionBackend | None:
    """The drafter's backend as vLLM declares it where it is FlashAttention on SM 10.x / 11.x: its kernel
    blocks follow FA4's head-256 kernel (:func:`fa4_hd256_flash_attn`) asked as vLLM asks it for the
    drafter's layers; any other backend (or GPU) is ``d_backend`` unchanged.

    Asked without a layer's spec (the preferred block, ``FlashAttentionBackend.get_preferred_block_size``;
    the selection's block-size check) FlashAttention reads the engine's model config
    (``_get_fa4_hd256_block_size``: ``get_current_vllm_config_or_none().model_config.get_head_size()``), and
    the proposer builds the drafter under a copy of the engine's config whose model config is the target's
    (``SpecDecodeBaseProposer._create_draft_vllm_config``, ``initialize_model``'s
    ``set_current_vllm_config``): the target's head size, soft cap and ``kv_dtype`` (the engine's cache dtype)
    decide it, and the FlashAttention version the target's config hook forces (``flash_attn_version``,
    kept in the copy). Asked with a layer's spec (0.31+) a drafter layer of head size 256 takes the
    kernel's pages whatever the target.

    :param kv_dtype: the target's KV cache dtype (the engine's ``cache_config.cache_dtype``).
    :raises InputError: the target's whole-model head size is ambiguous (heads of 256 beside narrower
        ones: :func:`fa4_hd256_flash_attn`), naming ``--speculative-config``; a ``--block-size`` those pages do
        not divide (vLLM's ValueError where the speculative config names FlashAttention; not modelled where
        the drafter's selection would pass over it).
    """
    page, cap = rules.fa4_hd256_block, args.device.capability
    if drafter is None or d_backend is None or d_backend.name != "FLASH_ATTN" or page is None:
        return d_backend
    if cap[0] not in (10, 11):
        return d_backend
    mm_prefix = model.attn.mm_prefix_lm and not args.language_model_only
    forced = family_of(model).fa4_all_layers(model, args.attention_backend)
    target, ambiguous = fa4_hd256_flash_attn(model, kv_dtype, args, rules, mm_prefix, forced)
    if ambiguous:
        _refuse_ambiguous_hd256(d_backend, model, args, "--speculative-config")
    # fa4_hd256_backend marks the model-level answer by the head size it belongs to
    model_level = target is not None and target.kernel_blocks_head == FA4_HD256_HEAD
    layer_level = (
        rules.fa4_hd256_layer_blocks
        and cap[0] == 10
        and any(
            a.head_dim == a.head_dim_v == FA4_HD256_HEAD
            for a in (drafter.model.attention(k) for k in drafter.model.kinds if k.is_attention)
        )
    )
    if not (model_level or layer_level):
        return BACKENDS["FLASH_ATTN"]
    flash_attn = fa4_hd256_backend(BACKENDS["FLASH_ATTN"], page, model_level, layer_level)
    if args.block_size is not None and not flash_attn.supports_block_size(args.block_size):
        # the drafter's selection validates its block against the kernel pages the target's head size asks
        if drafter.attention_backend != "FLASH_ATTN":
            raise InputError(
                "--block-size",
                str(args.block_size),
                f"{drafter.model.source}: FlashAttention, asked with the target's head size, serves no "
                f"{args.block_size}-token block (FA4's head-256 kernel: {page}-token pages), so the drafter's "
                "backend selection passes over it: not modelled",
            )
        raise InputError(
            "--block-size",
            str(args.block_size),
            f"Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. Reason: "
            f"['{BLOCK_SIZE_REASON}'] ({drafter.model.source}: the drafter's layers; FlashAttention asked with the "
            f"target's head size {FA4_HD256_HEAD} reads FA4's head-256 kernel pages of {page} tokens)",
        )
    return flash_attn


def _check_nvfp4_mla(model: ModelGeometry, kv_dtype: str) -> None:
    """``VllmConfig.validate_nvfp4_kv_cache_with_mla`` (every release 0.27.1-0.33.0): the plain nvfp4
    caches on a model whose config makes ``ModelConfig.use_mla`` true (its MLA fields) while it builds no
    MLA layer (a Kimi-Linear config of KDA layers only; ``kimi_linear`` is in every release's
    ``is_deepseek_mla`` list). A model with MLA layers is refused by the backend selection (no MLA backend
    takes nvfp4), first where its model_type is not in that list (SarvamMLA on 0.28.0, recorded).

    :raises InputError: vLLM's ValueError."""
    mla_fields_only = model.attn.mla_config and not model.use_mla
    if kv_dtype.startswith("nvfp4") and not kv_dtype.endswith("_ds_mla") and mla_fields_only:
        raise InputError(
            "--kv-cache-dtype",
            kv_dtype,
            f"{model.source}: ValueError: nvfp4 KV cache is not supported with MLA (Multi-head Latent Attention) "
            "backends (VllmConfig.validate_nvfp4_kv_cache_with_mla: the config's MLA fields make use_mla true)",
        )


def _check_float_kv_cache_dtype(args: EngineArgs, model_dtype: str, rules: VersionRules) -> None:
    """``VllmConfig._reject_mismatched_float_kv_cache`` (0.33): a float KV cache dtype must be the
    model's.

    :raises InputError: naming ``--kv-cache-dtype``.
    """
    float_kv = args.kv_cache_dtype in ("float16", "bfloat16")
    if rules.float_kv_dtype_must_match and float_kv and args.kv_cache_dtype != model_dtype:
        allowed = f"`auto` or `{model_dtype}`" if model_dtype in ("float16", "bfloat16") else "`auto`"
        raise InputError(
            "--kv-cache-dtype",
            args.kv_cache_dtype,
            f'kv_cache_dtype="{args.kv_cache_dtype}" is incompatible with dtype="{model_dtype}". '
            f"Please set `--kv-cache-dtype` to {allowed}.",
        )
