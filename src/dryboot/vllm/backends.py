"""Attention backends: the kernel block sizes they declare and whether pages may be padded.

Mirrors vLLM 0.28.0's ``vllm/v1/attention/backend.py`` (``AttentionBackend.supports_block_size``,
``get_preferred_block_size``, ``indexes_kv_by_block_stride``) and each backend's
``get_supported_kernel_block_sizes`` under ``vllm/v1/attention/backends/``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from dryboot.vllm.dtypes import CustomKVCacheDtype


@dataclass(frozen=True)
class KernelBlock:
    """One entry of a backend's supported kernel block sizes.

    ``multiple_of=True`` is vLLM's ``MultipleOf(size)``; otherwise a fixed ``size`` (tokens).
    """

    size: int
    multiple_of: bool = False

    def __str__(self) -> str:
        """The size in tokens (a block is addressable when it is a multiple of it)."""
        return str(self.size)


@dataclass(frozen=True)
class AttentionBackend:
    """A backend's planning-relevant declarations.

    :param name: vLLM's ``--attention-backend`` name (``FLASH_ATTN``...).
    :param kernel_blocks: ``get_supported_kernel_block_sizes()``.
    :param indexes_kv_by_block_stride: num-blocks-first physical layout; in 0.28 this gates
        whether ``unify_kv_cache_spec_page_size`` may pad an attention page.
    :param is_mla: an MLA backend (one latent head, no V).
    :param per_token_head: serves the ``*_per_token_head`` KV caches (adds two fp32 scales
        per head per token in ``customize_spec``).
    :param kv_cache_dtypes: ``supported_kv_cache_dtypes`` (vLLM 0.28.0's lists; ``None``: a
        custom cache's backend, not checked).
    :param is_sparse: a sparse MLA backend (``is_sparse``: it serves only the MLA layers of a
        model with a sparse-attention indexer, and only those).
    :param model_dtypes: ``supported_dtypes`` where dryboot checks them (``None``: not checked).
    :param head_sizes: ``get_supported_head_sizes`` where dryboot checks them here (``None``:
        :func:`head_size_supported`'s rule).
    :param kernel_blocks_head: the head size whose layers alone address ``kernel_blocks`` (FlashAttention
        4's fp8 pages, ``_get_sm90_fa4_fp8_kv_block_size`` asked with a layer's spec: head size 512);
        a layer of another head size addresses FlashAttention's 16-multiples (:meth:`for_head`).
        ``None``: every layer addresses ``kernel_blocks``.
    :param head_kernel_blocks: (head size, kernel blocks) a layer of that head size addresses whatever the
        model-level answer (FA4's head-256 pages asked with the layer's own spec, 0.31+), checked first.
    """

    name: str
    kernel_blocks: tuple[KernelBlock, ...]
    indexes_kv_by_block_stride: bool
    is_mla: bool = False
    per_token_head: bool = False
    kv_cache_dtypes: frozenset[str] | None = None
    is_sparse: bool = False
    model_dtypes: frozenset[str] | None = None
    head_sizes: frozenset[int] | None = None
    kernel_blocks_head: int | None = None
    head_kernel_blocks: tuple[tuple[int, tuple[KernelBlock, ...]], ...] = ()

    def for_head(self, head_size: int) -> AttentionBackend:
        """The backend as a layer of ``head_size`` sees its kernel blocks (``get_supported_kernel_block_sizes``
        asked with that layer's spec): those :attr:`head_kernel_blocks` gives that head size, else itself,
        or FlashAttention's 16-multiples where ``kernel_blocks_head`` is another head size (a Gemma-4
        sliding layer of head size 256 beside fp8 head-512 layers)."""
        for size, blocks in self.head_kernel_blocks:
            if size == head_size:
                return replace(self, kernel_blocks=blocks, kernel_blocks_head=None, head_kernel_blocks=())
        if self.kernel_blocks_head is None or head_size == self.kernel_blocks_head:
            return self
        return replace(self, kernel_blocks=_M16, kernel_blocks_head=None)

    def supports_kv_cache_dtype(self, kv_cache_dtype: str) -> bool:
        """``AttentionBackend.supports_kv_cache_dtype``: listed, or no list declared here."""
        return self.kv_cache_dtypes is None or kv_cache_dtype in self.kv_cache_dtypes

    def supports_block_size(self, block_size: int) -> bool:
        """Whether the kernel can address a framework block of ``block_size`` tokens.

        True when ``block_size`` is a multiple of some declared size (fixed or
        ``MultipleOf``), as ``AttentionBackend.supports_block_size``.
        """
        for kb in self.kernel_blocks:
            if block_size % kb.size == 0:
                return True
        return not self.kernel_blocks

    @cached_property
    def smallest_kernel_block(self) -> int:
        """``min(s.base if MultipleOf else s)`` over the declared sizes (tokens)."""
        return min(kb.size for kb in self.kernel_blocks) if self.kernel_blocks else 16

    @cached_property
    def smallest_listed_block(self) -> int:
        """vLLM 0.28's sliding-window start block (``_largest_kernel_block_within`` with no
        page budget): the smallest fixed size if any is listed, else the smallest base."""
        fixed = [kb.size for kb in self.kernel_blocks if not kb.multiple_of]
        return min(fixed) if fixed else self.smallest_kernel_block

    def preferred_block_size(self, default_block_size: int) -> int:
        """``get_preferred_block_size``: the default if supported, else the smallest size."""
        if not self.kernel_blocks or self.supports_block_size(default_block_size):
            return default_block_size
        return self.smallest_kernel_block

    def largest_block_at_most(self, limit: int) -> int:
        """The largest supported block <= ``limit`` (tokens); the smallest when none fits."""
        best = 0
        for kb in self.kernel_blocks:
            if kb.multiple_of:
                cand = (limit // kb.size) * kb.size
            else:
                cand = kb.size if kb.size <= limit else 0
            best = max(best, cand)
        return best or self.smallest_kernel_block


_M16 = (KernelBlock(16, multiple_of=True),)
_PLAIN = frozenset({"auto", "float16", "bfloat16"})
_FP8 = _PLAIN | {"fp8", "fp8_e4m3"}
_E5M2 = _FP8 | {"fp8_e5m2"}

#: Backends of vLLM 0.28.0 (CUDA and CPU) with their declarations.
BACKENDS: dict[str, AttentionBackend] = {
    b.name: b
    for b in (
        AttentionBackend("FLASH_ATTN", _M16, True, kv_cache_dtypes=_FP8),
        AttentionBackend(
            "TRITON_ATTN",
            _M16,
            True,
            per_token_head=True,
            kv_cache_dtypes=_E5M2 | {"int4_per_token_head", "int8_per_token_head", "fp8_per_token_head"},
        ),
        AttentionBackend(
            "FLASHINFER",
            (KernelBlock(16), KernelBlock(32), KernelBlock(64)),
            True,
            # nvfp4 / nvfp4_4over6 are listed too, but ``supports_kv_cache_dtype`` accepts them
            # only on SM100 with TRT-LLM attention: not on the SM90 GPU dryboot plans for
            kv_cache_dtypes=_E5M2,
        ),
        AttentionBackend("FLEX_ATTENTION", _M16, True, kv_cache_dtypes=_PLAIN),
        # 0.30+: Triton for image-mask batches, FlashInfer for causal ones (one cache for both);
        # its own kernel blocks (64), head sizes (256, 512) and majors (10); the dtypes both serve
        AttentionBackend(
            "TRITON_FLASHINFER",
            (KernelBlock(64),),
            True,
            kv_cache_dtypes=_E5M2,
            head_sizes=frozenset({256, 512}),
        ),
        # 0.30+ on SM 9.x: Triton for image-mask batches, FlashAttention for causal ones (one cache for
        # both); the kernel blocks both address (FlashAttention's 16-multiples; 64 where FlashAttention 4
        # reads an fp8 head-512 cache), its own head sizes (256, 512) and major (9), the dtypes both serve
        AttentionBackend(
            "TRITON_FLASH_ATTN",
            _M16,
            True,
            kv_cache_dtypes=_FP8,
            head_sizes=frozenset({256, 512}),
        ),
        AttentionBackend("CPU_ATTN", _M16, False, kv_cache_dtypes=frozenset({"auto", "fp8", "fp8_e4m3", "fp8_e5m2"})),
        AttentionBackend("FLASH_ATTN_MLA", _M16, True, is_mla=True, kv_cache_dtypes=_PLAIN),
        AttentionBackend("TRITON_MLA", _M16, True, is_mla=True, kv_cache_dtypes=_FP8),
        AttentionBackend("FLASHMLA", (KernelBlock(64),), True, is_mla=True, kv_cache_dtypes=_FP8),
        AttentionBackend("CUTLASS_MLA", (KernelBlock(128),), True, is_mla=True, kv_cache_dtypes=_FP8),
        AttentionBackend("FLASHINFER_MLA", (KernelBlock(32), KernelBlock(64)), True, is_mla=True, kv_cache_dtypes=_FP8),
        # the sparse MLA backends (v1/attention/backends/mla/flashattn_mla_sparse.py,
        # flashmla_sparse.py): 64-token kernel pages; FlashMLA's sparse kernels take only the
        # 576-wide DeepSeek-V3.2 latent, a bfloat16 model, and store an fp8 cache as fp8_ds_mla
        AttentionBackend(
            "FLASH_ATTN_MLA_SPARSE",
            (KernelBlock(64),),
            True,
            is_mla=True,
            kv_cache_dtypes=_PLAIN,
            is_sparse=True,
            model_dtypes=frozenset({"float16", "bfloat16"}),
        ),
        AttentionBackend(
            "FLASHMLA_SPARSE",
            (KernelBlock(64),),
            True,
            is_mla=True,
            kv_cache_dtypes=frozenset({"auto", "bfloat16", "fp8_ds_mla", "fp8"}),
            is_sparse=True,
            model_dtypes=frozenset({"bfloat16"}),
            head_sizes=frozenset({576}),
        ),
        # SM 10.x (flashinfer_mla_sparse.py) and SM 12.x (its SM120 class): FlashInfer's sparse MLA
        AttentionBackend(
            "FLASHINFER_MLA_SPARSE",
            (KernelBlock(32), KernelBlock(64)),
            True,
            is_mla=True,
            kv_cache_dtypes=_FP8,
            is_sparse=True,
        ),
        # SM120: kernel pages of 64 or 256 tokens (0.27.1-0.31.0), MultipleOf(64) from 0.32.0: the
        # same blocks pass; declared as the later form (no fixed size to record as an alignment).
        # It stores an auto / fp8 / fp8_e4m3 cache as fp8_ds_mla (SM120_DS_MLA_KV_CACHE_DTYPES)
        AttentionBackend(
            "FLASHINFER_MLA_SPARSE_SM120",
            (KernelBlock(64, multiple_of=True),),
            True,
            is_mla=True,
            kv_cache_dtypes=frozenset({"auto", "fp8", "fp8_e4m3", "fp8_ds_mla"}),
            is_sparse=True,
            model_dtypes=frozenset({"bfloat16"}),
        ),
    )
}

#: ``FlashInferMLASparseSM90Backend`` (vLLM 0.30+, ``v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py``):
#: FlashInfer's SM 9.x sparse MLA kernels; ``MultipleOf(64)`` kernel blocks, bfloat16 models, a 512 (NoPE) or
#: 576 head (``kv_lora_rank`` 512, a rope of 0 or 64: ``supports_combination``), an ``auto`` / bfloat16 / fp8
#: / fp8_e4m3 cache stored as plain rows of the head (``get_kv_cache_shape``: ``[blocks, block_size, head]``,
#: one byte a value for fp8). Only in the tables of the releases that ship it (:func:`backend_table`).
FLASHINFER_MLA_SPARSE_SM90 = AttentionBackend(
    "FLASHINFER_MLA_SPARSE_SM90",
    (KernelBlock(64, multiple_of=True),),
    True,
    is_mla=True,
    kv_cache_dtypes=frozenset({"auto", "bfloat16", "fp8", "fp8_e4m3"}),
    is_sparse=True,
    model_dtypes=frozenset({"bfloat16"}),
    head_sizes=frozenset({512, 576}),
)
#: the ``kv_lora_rank`` and ropes FLASHINFER_MLA_SPARSE_SM90's kernels take (``supports_combination``)
SM90_FLASHINFER_SPARSE_KV_LORA_RANK = 512
SM90_FLASHINFER_SPARSE_ROPES = (0, 64)

#: ``DeepseekV32IndexerBackend`` (``v1/attention/backends/mla/indexer.py``): the backend of the
#: sparse-attention indexer's key cache, fixed by its layer (not selected): 64-token kernel pages
#: on CUDA. It is the backend of a DeepSeek-V3.2 model's first attention layer, so the one that
#: picks the block size (``Platform._find_non_ssm_backend``).
DEEPSEEK_V32_INDEXER = AttentionBackend("DEEPSEEK_V32_INDEXER", (KernelBlock(64),), True, is_mla=True)

#: MiniMax-M3's own backends (``vllm/models/minimax_m3/common/sparse_attention.py``
#: ``MiniMaxM3SparseBackend``, ``common/indexer.py`` ``MiniMaxM3IndexerBackend``): fixed by the
#: sparse layers (not selected), 128-token kernel pages (one sparse block per page). Their
#: ``get_kv_cache_stride_order`` raises ``NotImplementedError`` with the layers dimension, so
#: ``indexes_kv_by_block_stride()`` is False (0.27.1, 0.28.0): there the sparse layers' main
#: ``FullAttentionSpec`` differs from a dense layer's (:func:`~dryboot.vllm.models.minimax_m3.minimax_m3_spec_fields`).
MINIMAX_M3_SPARSE = AttentionBackend("MINIMAX_M3_SPARSE", (KernelBlock(128),), False)
MINIMAX_M3_SPARSE_INDEXER = AttentionBackend("MINIMAX_M3_SPARSE_INDEXER", (KernelBlock(128),), False, is_mla=True)

#: ``InklingSconvBackend`` (``vllm/models/inkling/nvidia/sconv_swa_attn.py``, vLLM 0.33.0): the backend
#: Inkling's short-convolution state names (``INKLING_SCONV_SWA``); it runs no attention kernel and
#: declares no block sizes of its own (the base ``MultipleOf(1)``); 0.27.1 / 0.28.0's declares its padded
#: page read through a strided view (``indexes_kv_by_block_stride``), which later releases no longer read.
INKLING_SCONV = AttentionBackend("INKLING_SCONV_SWA", (KernelBlock(1, multiple_of=True),), True)

#: Bytes per token of the sparse MLA cache FlashMLA stores for an fp8 ``--kv-cache-dtype``
#: (``fp8_ds_mla``: 512 fp8 latent bytes, 4 fp32 scales, 64 bfloat16 RoPE values;
#: ``MLAAttention.get_kv_cache_spec`` ``state_content_bytes``).
FP8_DS_MLA_BYTES = 656
#: The DiffKV backends (``flash_attn_diffkv.py``, ``triton_attn_diffkv.py``): subclasses of
#: FLASH_ATTN and TRITON_ATTN for layers whose V head size differs from the K one, which the model
#: passes to its ``Attention`` itself (MiMo-V2) instead of leaving the choice to the platform.
DIFFKV_BACKENDS: dict[str, AttentionBackend] = {
    "FLASH_ATTN_DIFFKV": AttentionBackend("FLASH_ATTN_DIFFKV", _M16, True, kv_cache_dtypes=_FP8),
    "TRITON_ATTN_DIFFKV": AttentionBackend(
        "TRITON_ATTN_DIFFKV",
        _M16,
        True,
        per_token_head=True,
        kv_cache_dtypes=_E5M2 | {"int4_per_token_head", "int8_per_token_head", "fp8_per_token_head"},
    ),
}

#: ``CacheOnlyAttentionBackend`` (``model_executor/models/extract_hidden_states.py``): the
#: hidden-state cache layer of ``"method": "extract_hidden_states"``. Any block
#: (``MultipleOf(1)``); no stride order, so pages are never padded; only unquantized caches.
CACHE_ONLY_ATTN = AttentionBackend(
    "CACHE_ONLY_ATTN", (KernelBlock(1, multiple_of=True),), False, kv_cache_dtypes=_PLAIN
)


def custom_backend(custom: CustomKVCacheDtype, base: AttentionBackend) -> AttentionBackend:
    """The backend that serves a custom KV cache: its kernel block and padding rule."""
    return AttentionBackend(
        name=f"{base.name}+{custom.name}",
        kernel_blocks=(KernelBlock(custom.kernel_block_size, multiple_of=True),),
        indexes_kv_by_block_stride=custom.can_pad,
        is_mla=base.is_mla,
    )


#: vLLM 0.28.0's backend priorities on SM 8.x, 9.x and 12.x (``platforms/cuda.py``
#: ``_get_backend_priorities``; FLASHINFER_MLA, valid on SM 10.x only, is left out).
SM90_PRIORITIES = ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION")
SM90_MLA_PRIORITIES = ("FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA")
#: The sparse MLA backends of the SM90 MLA priorities (they follow the dense ones, which all
#: refuse a sparse layer: "sparse not supported").
SM90_SPARSE_MLA_PRIORITIES = ("FLASH_ATTN_MLA_SPARSE", "FLASHMLA_SPARSE")
#: SM 10.x: FlashInfer first; MLA FlashInfer's, then CUTLASS (TOKENSPEED_MLA, between them, is
#: valid only where FLASHINFER_MLA already is: fp8 with DeepSeek-R1's head dims).
SM100_PRIORITIES = ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION")
SM100_MLA_PRIORITIES = ("FLASHINFER_MLA", "CUTLASS_MLA", "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA")
#: SM 12.x: MLA on Triton only; sparse MLA on FlashInfer's SM120 kernels.
SM120_MLA_PRIORITIES = ("TRITON_MLA",)
SM120_SPARSE_MLA_PRIORITIES = ("FLASHINFER_MLA_SPARSE_SM120",)


def sm90_sparse_priorities(head_size: int, sparse_sm90: bool) -> tuple[str, ...]:
    """The sparse MLA backends of ``_get_backend_priorities`` on SM 9.x: :data:`SM90_SPARSE_MLA_PRIORITIES`,
    and where the release ships ``FLASHINFER_MLA_SPARSE_SM90`` (``sparse_sm90``, 0.30+) that one too: first
    for a 512 head (``head_size``, elements), last otherwise."""
    if not sparse_sm90:
        return SM90_SPARSE_MLA_PRIORITIES
    sm90 = FLASHINFER_MLA_SPARSE_SM90.name
    if head_size == 512:
        return (sm90, *SM90_SPARSE_MLA_PRIORITIES)
    return (*SM90_SPARSE_MLA_PRIORITIES, sm90)


def priorities(layer: AttentionSelectorConfig, is_mla: bool) -> tuple[str, ...]:
    """``_get_backend_priorities`` for ``layer.capability`` (vLLM 0.28.0; docs/gpu-rules.md §2)."""
    major = layer.capability[0]
    if layer.use_sparse:
        if major == 10:
            few_heads = layer.num_heads <= 16
            quantized = layer.kv_cache_dtype not in ("auto", "float16", "bfloat16")
            if quantized or few_heads:
                return ("FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE")
            return ("FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE")
        if major == 12:
            return SM120_SPARSE_MLA_PRIORITIES
        return sm90_sparse_priorities(layer.head_size, layer.sparse_sm90)
    if is_mla:
        if major == 10:
            return SM100_MLA_PRIORITIES
        return SM120_MLA_PRIORITIES if major == 12 else SM90_MLA_PRIORITIES
    if major == 10 and layer.mm_prefix and layer.mm_prefix_composites:
        return ("TRITON_FLASHINFER", *SM100_PRIORITIES)
    if major == 9 and layer.mm_prefix and layer.mm_prefix_composites:
        return ("TRITON_FLASH_ATTN", *SM90_PRIORITIES)
    return SM100_PRIORITIES if major == 10 else SM90_PRIORITIES


#: Backends that serve a multimodal-prefix LM's bidirectional image-token attention
#: (``supports_mm_prefix``; FlashAttention's needs its v4 kernels, shipped in the CUDA wheel).
MM_PREFIX_BACKENDS = frozenset(
    {"FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION", "TRITON_FLASHINFER", "TRITON_FLASH_ATTN"}
)
_QUANTIZED_FA = frozenset({"fp8", "fp8_e4m3"})
#: Backends that serve ``AttentionType.ENCODER_ONLY`` (``supports_attn_type``)
ENCODER_ONLY_BACKENDS = frozenset({"FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION"})


def flash_attn_version(head_size: int, fa4_forced: bool = False, capability: tuple[int, int] = (9, 0)) -> int:
    """The FlashAttention version a layer of ``head_size`` runs on a GPU of ``capability``
    (``v1/attention/backends/fa_utils.py`` ``get_flash_attn_version``). SM 9.x: 3, upgraded to 4
    above head size 256; 4 for every layer when the model's config hook sets
    ``attention_config.flash_attn_version`` (``fa4_forced``: Gemma-4's heterogeneous heads).
    SM 10.x: 4 up to head size 128, else 2 (0.28: FA4 at 256 "temporarily disabled").
    SM 8.x and 12.x: 2 (only ``_vllm_fa2_C`` serves them)."""
    major = capability[0]
    if major == 9:
        return 4 if fa4_forced or head_size > 256 else 3
    if major == 10:
        return 4 if head_size <= 128 else 2
    return 2


def fa4_available(capability: tuple[int, int]) -> bool:
    """``is_fa_version_supported(4)``: the CuTe kernels run on families 90, 100 and 110."""
    return capability[0] in (9, 10, 11)


#: FlashAttention 4's head-256 kernel pages (``fa_utils.py`` ``FA4_HD256_PAGE_SIZE``, 0.29.0-0.33.0)
FA4_HD256_HEAD = 256


def uses_fa4_hd256_kernel(head_size: int, capability: tuple[int, int]) -> bool:
    """Whether FA4 runs a layer of ``head_size`` (its V head the same) on its dedicated head-256 kernel
    (``fa_utils.py`` ``uses_fa4_hd256_kernel``): head size 256 on SM 10.x or 11.x."""
    return head_size == FA4_HD256_HEAD and capability[0] in (10, 11)


def fa4_hd256_fallback_reason(
    *, soft_cap: bool, kv_cache_dtype: str, mm_prefix: bool, rswa: bool, decode_context_parallel_size: int
) -> str | None:
    """Why FlashAttention leaves FA4's head-256 kernel for FA2 when asked for the model
    (``fa_utils.py`` ``_fa4_hd256_fallback_reason`` with the engine's config, as
    ``FlashAttentionBackend._get_fa4_hd256_block_size`` asks it: no sinks, soft cap or block size
    passed), in vLLM's words; ``None``: the kernel serves. ``soft_cap``: the text config sets
    ``attn_logit_softcapping``; ``rswa``: the model's R-SWA window (``ModelConfig.rswa_window``)."""
    if soft_cap:
        return "logits soft capping"
    if is_quantized_kv_cache(kv_cache_dtype):
        return f"quantized KV cache dtype {kv_cache_dtype}"
    if mm_prefix:
        return "mm_prefix bidirectional attention"
    if rswa:
        return "R-SWA"
    if decode_context_parallel_size > 1:
        return "decode context parallelism"
    return None


def fa4_hd256_backend(base: AttentionBackend, page: int, model_level: bool, layer_level: bool) -> AttentionBackend:
    """FlashAttention's kernel blocks where FA4's head-256 kernel reads ``page``-token pages
    (``FlashAttentionBackend.get_supported_kernel_block_sizes``, 0.29+): asked for the model
    (``model_level``: no spec, the model's head size 256 and no fallback) it declares ``[page]``, so its
    preferred block is ``max(16, page)`` and a ``--block-size`` not a multiple of it is not supported;
    asked with a layer's spec (``layer_level``, 0.31+ on SM 10.x) a layer of head size 256 gets
    ``[page]`` too, every other head size FlashAttention's 16-multiples."""
    pages = (KernelBlock(page),)
    if not model_level:
        return replace(base, head_kernel_blocks=((FA4_HD256_HEAD, pages),) if layer_level else ())
    return replace(
        base,
        kernel_blocks=pages,
        kernel_blocks_head=FA4_HD256_HEAD,
        head_kernel_blocks=() if layer_level else ((FA4_HD256_HEAD, _M16),),
    )


def head_size_supported(backend: str, head_size: int, capability: tuple[int, int] = (9, 0)) -> bool:
    """``supports_head_size``: FlashAttention multiples of 8 up to 256 and up to 512 where FA4 runs
    (SM 9.x/10.x), FlashInfer 64/128/256/512, Triton 32 and up, the rest any."""
    if backend == "FLASH_ATTN":
        return head_size % 8 == 0 and head_size <= (512 if fa4_available(capability) else 256)
    if backend == "FLASHINFER":
        return head_size in (64, 128, 256, 512)
    if backend == "TRITON_ATTN":
        return head_size >= 32
    return True


@dataclass(frozen=True)
class AttentionSelectorConfig:
    """What a model's attention layers ask of their backend on SM90 (as vLLM's
    ``AttentionSelectorConfig``): ``head_size`` (elements), the KV cache dtype, the user's
    ``--block-size`` (``None``: the backend picks its own), attention sinks, ``use_sparse`` (MLA
    layers with a sparse-attention indexer), ``model_dtype`` (the model's torch dtype, checked
    where a backend declares its dtypes), ``mm_prefix`` (``ModelConfig.is_mm_prefix_lm``),
    ``fa4_forced`` (see :func:`flash_attn_version`), ``encoder_only``
    (``AttentionType.ENCODER_ONLY`` layers) and ``mm_prefix_composites`` (the release's switch:
    a multimodal-prefix LM tries ``TRITON_FLASHINFER`` first on SM 10.x, ``TRITON_FLASH_ATTN`` on SM
    9.x; ``composite_causal_fa3``: the latter's causal route takes FlashAttention 3 too, not 4 only,
    :attr:`~dryboot.vllm.versions.VersionRules.composite_causal_fa3`). ``index_topk``: the
    sparse-attention indexer's top-k from the model's config (``None``: none there).
    ``quantized_mm_prefix_triton``: the release's switch
    (:attr:`~dryboot.vllm.versions.VersionRules.fa_quantized_mm_prefix_sm90`). ``sparse_sm90``: the release
    ships ``FLASHINFER_MLA_SPARSE_SM90``
    (:attr:`~dryboot.vllm.versions.VersionRules.sparse_mla_fp8_e4m3_sm90`); ``qk_rope_head_dim``: an MLA
    model's rope width (``None``: not MLA), which with the head size gives its ``kv_lora_rank``.
    ``flashinfer_sinks_sm90``: FlashInfer takes sinks on SM 9.0 too
    (:attr:`~dryboot.vllm.versions.VersionRules.flashinfer_sinks_sm90`); ``flashinfer_sinks_sm120``: on
    SM 12.x (:attr:`~dryboot.vllm.versions.VersionRules.flashinfer_sinks_sm120`)."""

    head_size: int
    kv_cache_dtype: str
    block_size: int | None = None
    has_sinks: bool = False
    use_sparse: bool = False
    model_dtype: str | None = None
    mm_prefix: bool = False
    fa4_forced: bool = False
    encoder_only: bool = False
    capability: tuple[int, int] = (9, 0)
    cubin: bool = True
    qk_nope_head_dim: int | None = None
    num_heads: int = 0
    mm_prefix_composites: bool = False
    index_topk: int | None = None
    quantized_mm_prefix_triton: bool = False
    composite_causal_fa3: bool = False
    sparse_sm90: bool = False
    qk_rope_head_dim: int | None = None
    flashinfer_sinks_sm90: bool = False
    flashinfer_sinks_sm120: bool = True


#: Backends whose ``supports_compute_capability`` limits them (other than "any"), as
#: (lowest, highest) capability or a set of majors (docs/gpu-rules.md §3).
_MAJORS: dict[str, frozenset[int]] = {
    "FLASH_ATTN_MLA": frozenset({9}),
    "FLASHMLA": frozenset({9}),  # dense FlashMLA: Hopper only (is_flashmla_dense_supported)
    "FLASHINFER_MLA": frozenset({10}),
    "CUTLASS_MLA": frozenset({10}),
    "FLASH_ATTN_MLA_SPARSE": frozenset({9}),
    "FLASHMLA_SPARSE": frozenset({9, 10}),
    "FLASHINFER_MLA_SPARSE": frozenset({10}),
    "FLASHINFER_MLA_SPARSE_SM120": frozenset({12}),
    "FLASHINFER_MLA_SPARSE_SM90": frozenset({9}),
    "TRITON_FLASHINFER": frozenset({10}),
    "TRITON_FLASH_ATTN": frozenset({9}),
}
#: Backends only vLLM's own priorities pick (composites of two backends, 0.30+), never a flag
#: dryboot takes
COMPOSITE_BACKENDS = frozenset({"TRITON_FLASHINFER", "TRITON_FLASH_ATTN"})


#: the KV cache dtypes FLASHINFER_MLA_SPARSE_SM120 stores in DeepSeek's ``fp8_ds_mla`` layout
#: (``_canonicalize_sparse_mla_kv_cache_dtype``, 0.27.1-0.33.0)
SM120_DS_MLA_KV_CACHE_DTYPES = frozenset({"auto", "fp8", "fp8_e4m3"})
#: the only sparse-attention top-k the SM120 FlashInfer sparse MLA kernels take
SM120_SPARSE_INDEX_TOPK = 2048


def sm120_sparse_reasons(flashinfer: bool, index_topk: int | None) -> list[str]:
    """Why ``FLASHINFER_MLA_SPARSE_SM120`` (``FlashInferMLASparseSM120Backend.supports_combination``,
    0.27.1-0.33.0, SM 12.x) refuses a sparse MLA layer beyond its dtype lists, in vLLM's words:
    no ``index_topk`` in the model's config, or one other than 2048. Its FlashInfer sparse MLA
    decode API is there with ``flashinfer-cubin`` (``flashinfer``: dryboot's assumption, as on
    vLLM's images); without it vLLM's ``has_flashinfer()`` asks whether nvcc is on PATH, which
    dryboot does not know: that is a reason naming dryboot (refused by name)."""
    if not flashinfer:
        return [
            "FLASHINFER_MLA_SPARSE_SM120 without flashinfer-cubin needs FlashInfer's JIT (nvcc on PATH): "
            "not modelled by dryboot"
        ]
    if index_topk is None:
        return ["FLASHINFER_MLA_SPARSE_SM120 requires a model with index_topk config"]
    if index_topk != SM120_SPARSE_INDEX_TOPK:
        return [f"FLASHINFER_MLA_SPARSE_SM120 requires index_topk={SM120_SPARSE_INDEX_TOPK}; got {index_topk}"]
    return []


def sm90_flashinfer_sparse_reasons(head_size: int, qk_rope_head_dim: int | None) -> list[str]:
    """Why ``FLASHINFER_MLA_SPARSE_SM90`` (``FlashInferMLASparseSM90Backend.supports_combination``, 0.30+)
    refuses a sparse MLA layer of ``head_size`` (``kv_lora_rank`` + rope, elements) beyond its lists, in
    vLLM's words: a ``kv_lora_rank`` other than 512, a rope other than 0 or 64. FlashInfer's SM 9.x MLA
    kernels (FlashInfer >= 0.6.18, ``has_flashinfer_sm90_nope_mla``) are assumed present, as vLLM's CUDA
    wheel ships them."""
    rope = qk_rope_head_dim or 0
    if head_size - rope != SM90_FLASHINFER_SPARSE_KV_LORA_RANK:
        return [f"FLASHINFER_MLA_SPARSE_SM90 requires kv_lora_rank={SM90_FLASHINFER_SPARSE_KV_LORA_RANK}"]
    if rope not in SM90_FLASHINFER_SPARSE_ROPES:
        return ["FLASHINFER_MLA_SPARSE_SM90 requires qk_rope_head_dim in (0, 64)"]
    return []


def _capability_reasons(backend: str, layer: AttentionSelectorConfig) -> list[str]:
    """The GPU-dependent part of ``validate_configuration`` / ``supports_combination``."""
    cap, major = layer.capability, layer.capability[0]
    out = []
    if backend in _MAJORS and major not in _MAJORS[backend]:
        out.append("compute capability not supported")
    if backend == "FLASH_ATTN" and cap < (8, 0):
        out.append("compute capability not supported")
    if backend == "FLASHINFER" and not (8, 0) <= cap <= (12, 1):
        out.append("compute capability not supported")
    sink_gpu = (
        major == 10 or (major == 12 and layer.flashinfer_sinks_sm120) or (layer.flashinfer_sinks_sm90 and cap == (9, 0))
    )
    if backend == "FLASHINFER" and layer.has_sinks and not (layer.cubin and sink_gpu):
        # FlashInferBackend.supports_sink: TRT-LLM attention (flashinfer-cubin) on family 100/120 (and SM 9.0)
        out.append("attention sinks not supported")
    if backend == "FLASHINFER_MLA" and layer.qk_nope_head_dim not in (64, 128, 192):
        out.append("FlashInfer MLA kernel requires qk_nope_head_dim in [64, 128, 192]")
    if backend == "FLASHINFER_MLA_SPARSE" and layer.qk_nope_head_dim not in (128, 192):
        out.append("FlashInfer MLA Sparse requires qk_nope_head_dim in [128, 192]")
    if backend == "FLASHINFER_MLA_SPARSE_SM120" and major == 12:
        out.extend(sm120_sparse_reasons(layer.cubin, layer.index_topk))
    if backend == FLASHINFER_MLA_SPARSE_SM90.name and layer.use_sparse:
        out.extend(sm90_flashinfer_sparse_reasons(layer.head_size, layer.qk_rope_head_dim))
    if backend == "FLASH_ATTN" and layer.has_sinks and cap < (9, 0):
        out.append("sink not supported on compute capability < 9.0")
    elif backend == "FLASH_ATTN" and layer.has_sinks and major not in (9, 10):
        # supports_sink: FA3 (SM 9.x) or FA4 (SM 10.x); FA2 (SM 12.x) has none
        out.append("attention sinks not supported")
    return out


def invalid_reasons(backend: AttentionBackend, layer: AttentionSelectorConfig) -> list[str]:
    """Why ``backend`` cannot serve ``layer`` on SM90, in vLLM's words and order
    (``AttentionBackend.validate_configuration``, then ``supports_combination``).

    FlashAttention serves an fp8 cache only on FA3 on SM90 (``flash_attn_supports_kv_cache_dtype``:
    asked without the head size, it sees only a forced version) and a multimodal prefix only on
    FA4 (``FlashAttentionBackend.supports_combination``)."""
    if backend.name == "TRITON_FLASH_ATTN":
        return _triton_flash_attn_reasons(backend, layer)
    head_size, kv_cache_dtype, block_size = layer.head_size, layer.kv_cache_dtype, layer.block_size
    use_sparse, model_dtype, mm_prefix = layer.use_sparse, layer.model_dtype, layer.mm_prefix
    fa4_forced, encoder_only, has_sinks = layer.fa4_forced, layer.encoder_only, layer.has_sinks
    cap = layer.capability
    fa = backend.name == "FLASH_ATTN"
    quantized = fa and kv_cache_dtype in _QUANTIZED_FA
    reasons = []
    if backend.head_sizes is not None:
        if head_size not in backend.head_sizes:
            reasons.append("head_size not supported")
    elif not head_size_supported(backend.name, head_size, cap):
        reasons.append("head_size not supported")
    if backend.model_dtypes is not None and model_dtype is not None and model_dtype not in backend.model_dtypes:
        reasons.append("dtype not supported")
    # flash_attn_supports_kv_cache_dtype asks without the head size: FA3 on SM 9.x (unless
    # forced to 4), FA4 on SM 10.x; FA2 (SM 8.x, 12.x) stores no fp8
    fa_fp8_dtype = cap[0] == 10 or (cap[0] == 9 and not fa4_forced)
    if not backend.supports_kv_cache_dtype(kv_cache_dtype) or (quantized and not fa_fp8_dtype):
        reasons.append("kv_cache_dtype not supported")
    if block_size is not None and not backend.supports_block_size(block_size):
        reasons.append("block_size not supported")
    if encoder_only:
        mm_prefix = False  # EncoderOnlyAttention selects its backend without it
    if mm_prefix and backend.name not in MM_PREFIX_BACKENDS:
        reasons.append("partial multimodal token full attention not supported")
    if has_sinks and backend.name not in ("FLASH_ATTN", "TRITON_ATTN", "FLASHINFER"):
        reasons.append("attention sinks not supported")
    if backend.is_mla and use_sparse != backend.is_sparse:
        reasons.append("sparse not supported" if use_sparse else "non-sparse not supported")
    if backend.name == "FLASH_ATTN_MLA_SPARSE":
        # FlashAttnMLASparseBackend.supports_combination
        if kv_cache_dtype not in ("auto", "float16", "bfloat16"):
            reasons.append("FlashAttention MLA Sparse currently supports only FP16/BF16 KV cache")
        elif not use_sparse:
            reasons.append("FlashAttention MLA Sparse requires model with index_topk")
    if encoder_only and backend.name not in ENCODER_ONLY_BACKENDS:
        reasons.append("attention type AttentionType.ENCODER_ONLY not supported")
    version = flash_attn_version(head_size, fa4_forced, cap)
    # supports_combination returns its first reason: on 0.31+ SM 9.0 a quantized cache of a
    # multimodal-prefix LM stops there
    triton_only = fa and mm_prefix and layer.quantized_mm_prefix_triton and cap == (9, 0)
    if triton_only and is_quantized_kv_cache(kv_cache_dtype):
        reasons.append("SM90 FP8 KV with mm_prefix requires Triton")
    elif quantized and not ((version == 3 and cap[0] == 9) or (version == 4 and cap[0] == 10)):
        reasons.append("FP8 KV cache requires FA3 on SM90 or FA4 on SM100")
    if fa and mm_prefix and version != 4 and not (triton_only and is_quantized_kv_cache(kv_cache_dtype)):
        reasons.append(
            "mm_prefix (PrefixLM bidirectional attention) requires FlashAttention v4, which does not resolve for "
            "this head_size"
        )
    if backend.name == "FLASHINFER" and kv_cache_dtype.startswith("nvfp4") and head_size == 64 and cap[0] != 10:
        # FlashInferBackend.supports_combination (0.32+, the SM90 FA2 path for nvfp4)
        reasons.append("fa2 prefill misreads an NVFP4 KV cache at head_size 64")
    reasons.extend(_capability_reasons(backend.name, layer))
    return reasons


#: the reasons ``AttentionBackend.validate_configuration`` gives itself (the composite asks both halves
#: and says them once); any other is a half's ``supports_combination`` answer, which the composite
#: prefixes with that half's name
_VALIDATE_REASONS = frozenset(
    {
        "head_size not supported",
        "dtype not supported",
        "kv_cache_dtype not supported",
        "block_size not supported",
        "attention sinks not supported",
        "compute capability not supported",
    }
)


def _triton_flash_attn_reasons(backend: AttentionBackend, layer: AttentionSelectorConfig) -> list[str]:
    """Why the SM 9.x composite (``v1/attention/backends/triton_flash_attn.py``, made by
    ``composite.py`` ``create_composite_attention_backend``: Triton serves image-mask batches,
    FlashAttention the causal ones) cannot serve ``layer``: its own head sizes (256, 512) and major
    (9), no attention sinks (the composite declares none), then FlashAttention's answer for a causal
    layer (no multimodal prefix: the causal half never sees one), a FlashAttention combination reason
    named ``FLASH_ATTN: ...`` as the composite words it, and the causal route's FlashAttention
    version: 4 (0.30.0), 3 or 4 (0.31+, ``composite_causal_fa3``). Triton's half refuses nothing
    FlashAttention's does not here (it takes every head size from 32 and the dtypes both list)."""
    causal = replace(layer, mm_prefix=False, quantized_mm_prefix_triton=False)
    out: list[str] = []
    if backend.head_sizes is not None and layer.head_size not in backend.head_sizes:
        out.append("head_size not supported")
    fa = replace(BACKENDS["FLASH_ATTN"], kernel_blocks=backend.kernel_blocks)
    for reason in invalid_reasons(fa, causal):
        said = reason if reason in _VALIDATE_REASONS else f"FLASH_ATTN: {reason}"
        if said not in out:
            out.append(said)
    if layer.has_sinks and "attention sinks not supported" not in out:
        out.append("attention sinks not supported")
    if layer.encoder_only:
        out.append("attention type AttentionType.ENCODER_ONLY not supported")
    if layer.capability[0] != 9 and "compute capability not supported" not in out:
        out.append("compute capability not supported")
    version = flash_attn_version(layer.head_size, layer.fa4_forced, layer.capability)
    if layer.composite_causal_fa3:
        if version not in (3, 4):
            out.append("FLASH_ATTN: causal route requires FlashAttention v3 or v4")
    elif version != 4:
        out.append("FLASH_ATTN: causal route requires FlashAttention v4")
    return out


def is_quantized_kv_cache(kv_cache_dtype: str) -> bool:
    """Whether a ``--kv-cache-dtype`` stores quantized values: fp8 of any kind, a per-token-head
    int cache, nvfp4 (``utils/torch_utils.py`` ``is_quantized_kv_cache``)."""
    return kv_cache_dtype.startswith(("fp8", "nvfp4")) or kv_cache_dtype.endswith("per_token_head")


def backend_table(
    flashinfer_nvfp4: bool = False, trtllm_nvfp4: bool = False, sparse_sm90: bool = False
) -> dict[str, AttentionBackend]:
    """:data:`BACKENDS` as a release and GPU declare them: ``flashinfer_nvfp4`` (vLLM 0.32+, SM
    8.x/9.x/12.x) lets FlashInfer serve the ``nvfp4`` cache through its FA2 path
    (``_nvfp4_kv_on_fa2``; not ``nvfp4_4over6``, whose writer needs a scale search);
    ``trtllm_nvfp4`` (SM 10.x with TRT-LLM attention, i.e. ``flashinfer-cubin``) both nvfp4
    caches; ``sparse_sm90`` (vLLM 0.30+) adds :data:`FLASHINFER_MLA_SPARSE_SM90`."""
    table = BACKENDS
    if sparse_sm90:
        table = {**table, FLASHINFER_MLA_SPARSE_SM90.name: FLASHINFER_MLA_SPARSE_SM90}
    if not flashinfer_nvfp4 and not trtllm_nvfp4:
        return table
    fi = BACKENDS["FLASHINFER"]
    extra = {"nvfp4", "nvfp4_4over6"} if trtllm_nvfp4 else {"nvfp4"}
    return {**table, "FLASHINFER": replace(fi, kv_cache_dtypes=(fi.kv_cache_dtypes or frozenset()) | extra)}


def default_backend(
    layer: AttentionSelectorConfig, is_mla: bool, table: dict[str, AttentionBackend] | None = None
) -> str:
    """The backend vLLM 0.28.0 picks when ``--attention-backend`` is not given, on the GPU
    dryboot assumes (SM90): the first of :data:`SM90_PRIORITIES` (MLA:
    :data:`SM90_MLA_PRIORITIES`; the MLA layers of a model with a sparse-attention indexer:
    :data:`SM90_SPARSE_MLA_PRIORITIES`) that :func:`invalid_reasons` finds nothing against
    (``CudaPlatform.get_valid_backends``).

    :raises ValueError: no backend is valid (vLLM's "No valid attention backend found").
    """
    why: dict[str, list[str]] = {}
    for name in priorities(layer, is_mla):
        reasons = invalid_reasons((table or BACKENDS)[name], layer)
        if not reasons:
            return name
        why[name] = reasons
    sm = f"SM{layer.capability[0]}{layer.capability[1]}"
    raise ValueError(f"No valid attention backend found on {sm} (head size {layer.head_size}). Reasons: {why}")


def flashinfer_kv_counter_bytes(max_num_batched_tokens: int, num_heads: int, sm_count: int) -> int:
    """Bytes of the multi-CTA KV counter FlashInfer's attention shares across a process's layers.

    vLLM 0.33.0's ``FlashInferImpl.__init__`` (``v1/attention/backends/flashinfer.py``
    ``_get_multi_ctas_kv_counter_buffer``) allocates it eagerly on the device when the layer is
    built, so it is inside ``Model loading took``: one uint8 buffer per process, grown to the
    largest layer's need, of FlashInfer's ``get_trtllm_gen_multi_ctas_kv_counter_bytes``:
    ``round_up(max(tokens x heads, sm_count), 8)`` int32 semaphores, ``tokens`` the scheduler's
    ``max_num_batched_tokens`` and ``heads`` a rank's query heads (times the decode context
    parallel size). E.g. 8,192 tokens x 24 heads: 786,432 bytes (768 KiB)."""
    semaphores = max(max_num_batched_tokens * num_heads, sm_count)
    return -(-semaphores // 8) * 8 * 4
