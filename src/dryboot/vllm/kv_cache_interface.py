"""Per-layer KV cache specs and their page sizes.

Mirrors vLLM 0.28.0's ``vllm/v1/kv_cache_interface.py`` (``AttentionSpec``,
``FullAttentionSpec``, ``SlidingWindowSpec``, ``ChunkedLocalAttentionSpec``,
``MLAAttentionSpec``, ``MambaSpec``: ``page_size_bytes``), the Triton backend's
``customize_spec`` (per-token-head scales) and the state shapes of
``vllm/model_executor/layers/mamba/mamba_utils.py`` (``MambaStateShapeCalculator``).
All sizes are bytes; block sizes are tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from math import prod
from typing import TypeVar

from dryboot.vllm.dtypes import KVQuantMode, dtype_bytes


class LayerKind(Enum):
    """What a decoder layer keeps in the KV cache: the one vocabulary of layer kinds, from
    config reading (``layer_types`` names) through specs, groups and reports.

    ``spec_kind`` is the short name of vLLM's spec class family (``full``, ``sliding``,
    ``chunked``, ``mla``, ``mamba``: ``FullAttentionSpec``, ``SlidingWindowSpec``,
    ``ChunkedLocalAttentionSpec``, ``MLAAttentionSpec``, ``MambaSpec``), as reports show it.

    ``MLA_INDEXER`` is the key cache of DeepSeek-V3.2's sparse-attention indexer
    (``deepseek_v2.py`` ``DeepseekV32IndexerCache``, at ``<layer>.self_attn.indexer.k_cache``):
    an ``MLAAttentionSpec`` of one head, ``index_head_dim`` fp8 bytes plus one fp32 scale per 128
    of them per token (uint8), served by ``DEEPSEEK_V32_INDEXER``.

    DeepSeek-V4's caches (``vllm/models/deepseek_v4/``): ``DSV4_MLA`` a compressed MLA layer
    (``DeepseekV4Attention``: ``MLAAttentionSpec`` with ``compress_ratio`` 4 or 128),
    ``DSV4_INDEXER`` a ratio-4 layer's indexer key cache (``DeepseekV4IndexerCache``),
    ``DSV4_SWA`` every layer's sliding-window cache (``DeepseekV4SWACache``) and
    ``DSV4_COMPRESSOR`` a compressor's state cache (``CompressorStateCache``); the last two are
    ``SlidingWindowMLASpec``.

    ``MM3_SPARSE`` is the main K/V cache of a MiniMax-M3 sparse layer
    (``MiniMaxM3SparseAttention.get_kv_cache_spec``): a ``FullAttentionSpec`` the layer builds
    itself, served by ``MINIMAX_M3_SPARSE``, whose page no backend customizes (no per-token-head
    scales). ``MM3_INDEXER`` is the side cache of a MiniMax-M3 sparse layer's indexer
    (``vllm/models/minimax_m3/common/indexer.py`` ``MiniMaxM3IndexerCache``, at
    ``<layer>.self_attn.attn.index_cache``): an ``MLAAttentionSpec`` of one ``sparse_index_dim``
    head per token (key only) in bfloat16, served by ``MINIMAX_M3_SPARSE_INDEXER``.

    Step5's DSA layer caches (``vllm/models/step5/nvidia``, vLLM 0.33.0): ``STEP5_SUMMARY`` its
    region summary cache (``Step5SparseSummaryCacheLayer``: a ``FullAttentionSpec`` of one
    256-byte summary per 8 tokens) and ``STEP5_RING`` its CSA tail ring (``Step5CSATailRing``: a
    ``CircularBufferSpec`` of one KV page a request).

    Qwen4-Exp's QSA layer caches (``vllm/models/qwen4_exp/common/qsa_cache.py``, beside the
    layer's own ``FullAttentionSpec``): ``QSA_RING`` its ring of raw index keys
    (``QSAKeyStateCache``: a ``CircularBufferSpec`` of ``indexer_compress_ratio`` rows, more with
    speculative tokens, one ``indexer_head_dim`` bfloat16 head each) and ``QSA_COMPRESSED`` its
    compressed keys (``QSACompressedKeyCache``: an ``MLAAttentionSpec`` of one row per
    ``indexer_compress_ratio`` tokens, ``tokens_per_state``).

    GLM-5.3-Flash's indexer caches (``vllm/models/glm5next/common/attention.py``, beside each MLA
    layer): ``GLM5_KPOOL_INDEXER`` its pooled key cache (``Glm5NextIndexerCache``: an
    ``MLAAttentionSpec`` of one fp8 row a ``index_kpool`` tokens) and ``GLM5_KPOOL_TAIL`` its tail
    ring (``Glm5NextTailCache``: a ``CircularBufferSpec`` of the in-progress pool's raw keys and gate
    scores).

    ``DSV41_RING`` is a DeepSeek-V4.1 ratio-2 KV source's compressor ring
    (``vllm/models/deepseek_v41/compressor.py`` ``CompressorStateCache``, vLLM 0.30.0+): a
    ``CircularBufferSpec`` of ``max(8, next power of two >= num_speculative_tokens + 2)`` float32 rows
    of ``2 * head_dim`` values; the V4.1 layers' other caches reuse DeepSeek-V4's kinds.

    ``CROSS`` is an encoder-decoder decoder's cross-attention cache over the encoder's outputs
    (``CrossAttention``: ``CrossAttentionSpec``, Whisper's ``encoder_attn``): full attention's page,
    but one request holds ``cdiv(max_num_encoder_input_tokens, block)`` blocks, whatever its length.
    Inkling's short-convolution state (``vllm/models/inkling/nvidia/sconv_swa_attn.py``
    ``InklingConvState``, vLLM 0.33.0, at ``<layer>.conv_state``): a ``SlidingWindowSpec`` of
    ``sconv_kernel_size`` tokens (its block and its window), the four conv streams packed into one
    head, in bfloat16, served by ``INKLING_SCONV_SWA``: ``INKLING_CONV`` beside a sliding-window
    attention layer (its heads), ``INKLING_CONV_FULL`` beside a full-attention one.

    ``SLIDING_MLA`` is an MLA layer that keeps its latent rows for a sliding window only
    (``MLAAttention`` built with ``sliding_window``: a ``SlidingWindowMLASpec`` of one
    ``kv_lora_rank + qk_rope_head_dim`` head a token; Dots3-Note's ``Dots3NoteSlidingAttention``).

    ``PLE`` is a Qwen4-Exp PLE layer's short-convolution state (``Qwen4ExpPLELayer``, vLLM 0.33.0,
    at ``<layer>.ple``, built before the layer's mixer): a ``MambaSpec`` (``SHORT_CONV`` mamba type)
    of one ``((ple_conv_kernel_size - 1) * ngram_size + num_spec, hc_count * hidden_size)`` state,
    replicated over TP, beside the decoder layer's own cache.

    ``LINEAR_ATTN`` is a linear-attention (lightning attention) layer's state
    (``layers/mamba/linear/base.py`` ``LinearAttention``, mamba type ``LINEAR``: Bailing-V2.5's
    ``BailingMoELinearAttention``): a ``MambaSpec`` of one ``(heads / TP, head_dim, head_dim)``
    state in the ``--mamba-cache-dtype`` (``linear_attention_state_shape`` / ``_dtype``).
    """

    FULL = "full_attention"
    SLIDING = "sliding_attention"
    CHUNKED = "chunked_attention"
    MLA = "mla"
    MLA_INDEXER = "mla_indexer"
    GDN = "gated_deltanet"
    MAMBA2 = "mamba2"
    MAMBA1 = "mamba1"
    HIDDEN_STATE = "hidden_state"
    SHORT_CONV = "short_conv"
    KDA = "kimi_delta_attention"
    DSV4_MLA = "dsv4_compressed_mla"
    DSV4_INDEXER = "dsv4_indexer"
    DSV4_SWA = "dsv4_sliding_window"
    DSV4_COMPRESSOR = "dsv4_compressor_state"
    MM3_SPARSE = "minimax_m3_sparse"
    MM3_INDEXER = "minimax_m3_indexer"
    STEP5_SUMMARY = "step5_sparse_summary"
    STEP5_RING = "step5_csa_tail_ring"
    QSA_RING = "qsa_index_key_ring"
    QSA_COMPRESSED = "qsa_compressed_keys"
    GLM5_KPOOL_INDEXER = "glm5next_kpool_indexer"
    GLM5_KPOOL_TAIL = "glm5next_kpool_tail"
    DSV41_RING = "dsv41_compressor_ring"
    CROSS = "cross_attention"
    INKLING_CONV = "inkling_conv_state"
    INKLING_CONV_FULL = "inkling_conv_state_full"
    SLIDING_MLA = "sliding_mla"
    PLE = "ple_short_conv"
    LINEAR_ATTN = "linear_attention_state"
    NONE = "none"

    # members are singletons: identity hashing is exact and runs in C (Enum's is Python code)
    __hash__ = object.__hash__

    @property
    def is_attention(self) -> bool:
        return self in (
            LayerKind.FULL,
            LayerKind.SLIDING,
            LayerKind.CHUNKED,
            LayerKind.MLA,
            LayerKind.MLA_INDEXER,
            LayerKind.HIDDEN_STATE,
            LayerKind.DSV4_MLA,
            LayerKind.DSV4_INDEXER,
            LayerKind.DSV4_SWA,
            LayerKind.DSV4_COMPRESSOR,
            LayerKind.MM3_SPARSE,
            LayerKind.MM3_INDEXER,
            LayerKind.STEP5_SUMMARY,
            LayerKind.STEP5_RING,
            LayerKind.QSA_RING,
            LayerKind.QSA_COMPRESSED,
            LayerKind.GLM5_KPOOL_INDEXER,
            LayerKind.GLM5_KPOOL_TAIL,
            LayerKind.DSV41_RING,
            LayerKind.CROSS,
            LayerKind.INKLING_CONV,
            LayerKind.INKLING_CONV_FULL,
            LayerKind.SLIDING_MLA,
        )

    @property
    def is_sliding_window(self) -> bool:
        """Its cache is a plain ``SlidingWindowSpec`` (sliding-window attention, Inkling's
        short-convolution state): kept for its window's tokens only."""
        return self in (LayerKind.SLIDING, LayerKind.INKLING_CONV, LayerKind.INKLING_CONV_FULL)

    @property
    def is_mamba(self) -> bool:
        return self in (
            LayerKind.GDN,
            LayerKind.MAMBA2,
            LayerKind.MAMBA1,
            LayerKind.SHORT_CONV,
            LayerKind.KDA,
            LayerKind.PLE,
            LayerKind.LINEAR_ATTN,
        )

    @property
    def spec_kind(self) -> str:
        return _SPEC_KIND[self]

    @property
    def label(self) -> str:
        """A reader's name: ``full attention``, ``Gated DeltaNet``..."""
        return _LABEL[self]


_SPEC_KIND = {
    LayerKind.FULL: "full",
    LayerKind.SLIDING: "sliding",
    LayerKind.CHUNKED: "chunked",
    LayerKind.MLA: "mla",
    LayerKind.MLA_INDEXER: "mla",
    LayerKind.GDN: "mamba",
    LayerKind.MAMBA2: "mamba",
    LayerKind.MAMBA1: "mamba",
    LayerKind.HIDDEN_STATE: "hidden_state",
    LayerKind.SHORT_CONV: "mamba",
    LayerKind.KDA: "mamba",
    LayerKind.DSV4_MLA: "mla",
    LayerKind.DSV4_INDEXER: "mla",
    LayerKind.DSV4_SWA: "sliding_mla",
    LayerKind.DSV4_COMPRESSOR: "sliding_mla",
    LayerKind.MM3_SPARSE: "full",
    LayerKind.MM3_INDEXER: "mla",
    LayerKind.STEP5_SUMMARY: "full",
    LayerKind.STEP5_RING: "circular_buffer",
    LayerKind.QSA_RING: "circular_buffer",
    LayerKind.DSV41_RING: "circular_buffer",
    LayerKind.QSA_COMPRESSED: "mla",
    LayerKind.GLM5_KPOOL_INDEXER: "mla",
    LayerKind.GLM5_KPOOL_TAIL: "circular_buffer",
    LayerKind.CROSS: "cross",
    LayerKind.INKLING_CONV: "sliding",
    LayerKind.INKLING_CONV_FULL: "sliding",
    LayerKind.SLIDING_MLA: "sliding_mla",
    LayerKind.PLE: "mamba",
    LayerKind.LINEAR_ATTN: "mamba",
    LayerKind.NONE: "none",
}
_LABEL = {
    LayerKind.FULL: "full attention",
    LayerKind.SLIDING: "sliding window",
    LayerKind.CHUNKED: "chunked local",
    LayerKind.MLA: "MLA",
    LayerKind.MLA_INDEXER: "sparse-attention indexer",
    LayerKind.GDN: "Gated DeltaNet",
    LayerKind.MAMBA2: "Mamba2",
    LayerKind.MAMBA1: "Mamba1",
    LayerKind.HIDDEN_STATE: "hidden-state cache",
    LayerKind.SHORT_CONV: "ShortConv",
    LayerKind.KDA: "Kimi Delta Attention",
    LayerKind.DSV4_MLA: "compressed MLA",
    LayerKind.DSV4_INDEXER: "compressed indexer",
    LayerKind.DSV4_SWA: "MLA sliding window",
    LayerKind.DSV4_COMPRESSOR: "compressor state",
    LayerKind.MM3_SPARSE: "MiniMax-M3 sparse attention",
    LayerKind.MM3_INDEXER: "MiniMax-M3 indexer",
    LayerKind.STEP5_SUMMARY: "DSA region summary",
    LayerKind.STEP5_RING: "CSA tail ring",
    LayerKind.QSA_RING: "QSA index-key ring",
    LayerKind.DSV41_RING: "DeepSeek-V4.1 compressor ring",
    LayerKind.QSA_COMPRESSED: "QSA compressed keys",
    LayerKind.GLM5_KPOOL_INDEXER: "kpool indexer keys",
    LayerKind.GLM5_KPOOL_TAIL: "kpool tail ring",
    LayerKind.CROSS: "cross-attention",
    LayerKind.INKLING_CONV: "short-conv state",
    LayerKind.INKLING_CONV_FULL: "short-conv state",
    LayerKind.SLIDING_MLA: "sliding-window MLA",
    LayerKind.PLE: "PLE short-conv",
    LayerKind.LINEAR_ATTN: "linear attention",
    LayerKind.NONE: "no cache",
}


@dataclass(frozen=True)
class AttentionSpec:
    """One attention layer's cache spec.

    Page = ``num_kv_heads * block_size * content_bytes`` unless ``page_size_padded`` is set
    (then that, never smaller than the natural page). ``content_bytes`` is bytes per head per
    token, K and V together: ``(head_size + head_size_v) * dtype bytes``, plus two fp32 scales
    for per-token-head caches, or a custom cache's declared value.

    :param layer_kind: ``FULL``, ``SLIDING`` (``sliding_window`` tokens), ``CHUNKED``
        (``attention_chunk_size`` tokens) or ``MLA``.
    :param backend: the attention backend name serving the layer (for kernel checks).
    :param indexes_kv_by_block_stride: the backend may read a padded page.
    :param block_stride_alignment: vLLM 0.33's ``block_stride_alignment`` as a kernel block in
        tokens (its ``MultipleOf(n)``), or ``None``; compared as vLLM's spec equality compares it.
    :param block_stride_bytes: vLLM 0.33's plain-int ``block_stride_alignment`` (bytes the block
        stride must be a multiple of), or ``None``; set where ``block_stride_alignment`` is not.
    :param spec_name: the short name of a ``FullAttentionSpec`` subclass a model's own layer
        class builds (``rswa``: ``RSWASpec``), shown as the group's kind; ``None``: the layer
        kind's own (:attr:`LayerKind.spec_kind`).
    """

    layer_kind: LayerKind
    block_size: int
    num_kv_heads: int
    head_size: int
    head_size_v: int
    torch_dtype: str
    kv_cache_dtype: str
    quant_mode: KVQuantMode
    content_bytes: int
    backend: str
    indexes_kv_by_block_stride: bool
    sliding_window: int | None = None
    attention_chunk_size: int | None = None
    page_size_padded: int | None = None
    compress_ratio: int = 1
    alignment: int | None = None
    block_stride_alignment: int | None = None
    spec_name: str | None = None
    block_stride_bytes: int | None = None

    @property
    def natural_page_size_bytes(self) -> int:
        """``num_kv_heads * (block_size // compress_ratio) * content_bytes`` (vLLM's unpadded
        page: ``storage_block_size`` tokens are stored per block)."""
        return self.num_kv_heads * (self.block_size // self.compress_ratio) * self.content_bytes

    @property
    def page_size_bytes(self) -> int:
        """Bytes per block: ``page_size_padded`` when set, else the natural page rounded up to
        ``alignment`` bytes (DeepSeek-V4's specs: ``_apply_alignment_padding``)."""
        if self.page_size_padded is not None:
            return self.page_size_padded
        natural = self.natural_page_size_bytes
        if self.alignment is not None:
            return -(-natural // self.alignment) * self.alignment
        return natural

    @property
    def bytes_per_token(self) -> int:
        """Natural page bytes of one token (``num_kv_heads * content_bytes``)."""
        return self.num_kv_heads * self.content_bytes

    def with_block_size(self, block_size: int) -> AttentionSpec:
        return _copy_with(self, block_size=block_size)

    def with_padded_page(self, page_size_padded: int) -> AttentionSpec:
        """The same spec paying ``page_size_padded`` bytes per block.

        :raises ValueError: when the padded page is smaller than the natural page.
        """
        if page_size_padded < self.natural_page_size_bytes:
            raise ValueError("a padded page cannot be smaller than the natural page")
        return _copy_with(self, page_size_padded=page_size_padded)

    @property
    def kind(self) -> str:
        """The spec class family's short name (:attr:`LayerKind.spec_kind`, or ``spec_name``)."""
        return self.spec_name or self.layer_kind.spec_kind

    def describe(self) -> str:
        if self.layer_kind.is_sliding_window or self.sliding_window is not None:
            return f"{self.layer_kind.label} {self.sliding_window}"
        if self.layer_kind is LayerKind.CHUNKED:
            return f"{self.layer_kind.label} {self.attention_chunk_size}"
        return self.layer_kind.label


@dataclass(frozen=True)
class MambaSpec:
    """One mamba-family layer's state spec (``MambaSpec``).

    Page = sum over state tensors of ``prod(shape) * dtype bytes``, independent of the block
    size, or ``page_size_padded`` when set.

    :param layer_kind: ``GDN`` (Gated DeltaNet), ``MAMBA2``, ``MAMBA1``, ``SHORT_CONV``, ``KDA``,
        ``PLE`` or ``LINEAR_ATTN``.
    :param mamba_cache_mode: ``none``, ``align`` or ``all``.
    :param num_speculative_blocks: extra state pages per request (= speculative tokens).
    :param num_prefill_checkpoint_blocks: extra state pages per request in ``align`` mode for the
        prefill backend's checkpoints (0.33.0: 1 for Kimi-K3's KDA layers on FlashKDA).
    """

    layer_kind: LayerKind
    block_size: int
    shapes: tuple[tuple[int, ...], ...]
    torch_dtypes: tuple[str, ...]
    mamba_cache_mode: str
    num_speculative_blocks: int
    page_size_padded: int | None = None
    num_prefill_checkpoint_blocks: int = 0

    @property
    def kind(self) -> str:
        """``mamba`` (every mamba-family layer is a ``MambaSpec``)."""
        return self.layer_kind.spec_kind

    @property
    def tp_replicated(self) -> bool:
        """Every rank keeps the whole state (``MambaSpec.tp_replicated``: Qwen4-Exp's PLE layers,
        the only ones vLLM 0.29.0-0.33.0 build so)."""
        return self.layer_kind is LayerKind.PLE

    @property
    def natural_page_size_bytes(self) -> int:
        return state_bytes(self.shapes, self.torch_dtypes)

    @property
    def page_size_bytes(self) -> int:
        if self.page_size_padded is not None:
            return self.page_size_padded
        return self.natural_page_size_bytes

    def with_block_size(self, block_size: int) -> MambaSpec:
        return _copy_with(self, block_size=block_size)

    def with_padded_page(self, page_size_padded: int) -> MambaSpec:
        if page_size_padded < self.natural_page_size_bytes:
            raise ValueError("a padded page cannot be smaller than the natural page")
        return _copy_with(self, page_size_padded=page_size_padded)

    def describe(self) -> str:
        return self.layer_kind.label


LayerSpec = AttentionSpec | MambaSpec


def state_bytes(shapes: tuple[tuple[int, ...], ...], torch_dtypes: tuple[str, ...]) -> int:
    """Bytes of one mamba layer's state: sum of ``prod(shape) * dtype bytes`` (``MambaSpec``)."""
    return sum(prod(s) * dtype_bytes(d) for s, d in zip(shapes, torch_dtypes, strict=True))


_S = TypeVar("_S", AttentionSpec, MambaSpec)


def _copy_with(spec: _S, **changes: object) -> _S:
    """``dataclasses.replace`` for these plain frozen specs, without its per-call field
    introspection (a hot path: unification copies specs for every plan)."""
    new = object.__new__(type(spec))
    new.__dict__.update(spec.__dict__)
    new.__dict__.update(changes)
    return new


def attention_content_bytes(
    head_size: int,
    head_size_v: int,
    torch_dtype: str,
    quant_mode: KVQuantMode,
) -> int:
    """Bytes per head per token of an attention cache.

    ``(head_size + head_size_v) * dtype bytes``; per-token-head caches (Triton's
    ``customize_spec``) add one fp32 scale for K and one for V, after halving the head sizes
    for int4; nvfp4 (FlashInfer) stores ``2 * (head_size / 2 + head_size / 16)`` bytes. (Custom
    caches declare their own value: :class:`~dryboot.vllm.dtypes.CustomKVCacheDtype`.)

    :raises ValueError: nvfp4 with different K and V head sizes.
    """
    if quant_mode is KVQuantMode.NVFP4:
        # FlashInfer's customize_spec: K and V in separate slots of packed fp4 data plus one fp8
        # scale per 16 elements (nvfp4_kv_cache_full_dim).
        if head_size != head_size_v:
            raise ValueError("nvfp4 with asymmetric K/V head sizes is not supported (FlashInfer)")
        return 2 * (head_size // 2 + head_size // 16)
    if quant_mode.is_per_token_head:
        hk, hv = head_size, head_size_v
        if quant_mode is KVQuantMode.INT4_PER_TOKEN_HEAD:
            hk, hv = hk // 2, hv // 2
        return (hk + hv) * dtype_bytes(torch_dtype) + 2 * 4
    return (head_size + head_size_v) * dtype_bytes(torch_dtype)


def _divide(numerator: int, denominator: int, what: str) -> int:
    if numerator % denominator:
        raise ValueError(f"{what} ({numerator}) is not divisible by the tensor-parallel size {denominator}")
    return numerator // denominator


def gdn_state_shapes(
    tp: int,
    num_k_heads: int,
    num_v_heads: int,
    head_k_dim: int,
    head_v_dim: int,
    conv_kernel: int,
    num_spec: int,
) -> tuple[tuple[int, int], tuple[int, int, int]]:
    """Gated DeltaNet state: conv ``(kernel - 1 + spec, conv_dim / TP)`` with
    ``conv_dim = 2*nk*dk + nv*dv``, temporal ``(nv / TP, dv, dk)``
    (``gated_delta_net_state_shape``, conv layout ``SD``). Kimi Delta Attention keeps the same
    shapes with ``nk = nv`` and ``dk = dv`` (``kda_state_shape``).

    :raises ValueError: when a dimension does not split across ``tp`` ranks.
    """
    conv_dim = head_k_dim * num_k_heads * 2 + head_v_dim * num_v_heads
    conv = (conv_kernel - 1 + num_spec, _divide(conv_dim, tp, "GDN conv_dim"))
    temporal = (_divide(num_v_heads, tp, "linear_num_value_heads"), head_v_dim, head_k_dim)
    return conv, temporal


def mamba2_state_shapes(
    tp: int,
    num_heads: int,
    head_dim: int,
    n_groups: int,
    state_size: int,
    conv_kernel: int,
    num_spec: int,
    d_inner: int | None = None,
) -> tuple[tuple[int, int], tuple[int, int, int]]:
    """Mamba2 state: ``d_inner`` (the mixer's ``intermediate_size``; default ``heads*head_dim``),
    groups padded for TP (``extra_groups_for_head_shards``), ``conv_dim = d_inner + 2*groups*state``;
    conv ``(kernel - 1 + spec, conv_dim / TP)``, ssm ``(heads / TP, head_dim, state)``
    (``mamba2_state_shape``).

    :raises ValueError: when a dimension does not split across ``tp`` ranks.
    """
    groups = n_groups if n_groups % tp == 0 else n_groups + (tp - n_groups)
    inner = num_heads * head_dim if d_inner is None else d_inner
    conv_dim = inner + 2 * groups * state_size
    conv = (conv_kernel - 1 + num_spec, _divide(conv_dim, tp, "Mamba2 conv_dim"))
    ssm = (_divide(num_heads, tp, "mamba_num_heads"), head_dim, state_size)
    return conv, ssm


def mamba1_state_shapes(tp: int, d_inner: int, d_state: int, d_conv: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Mamba1 state: conv ``(d_conv - 1, d_inner / TP)``, ssm ``(d_inner / TP, d_state)``
    (``mamba1_state_shape``).

    :raises ValueError: when ``d_inner`` does not split across ``tp`` ranks.
    """
    per_rank = _divide(d_inner, tp, "Mamba1 intermediate size")
    return (d_conv - 1, per_rank), (per_rank, d_state)


def linear_attention_state_shapes(tp: int, num_heads: int, head_dim: int) -> tuple[tuple[int, int, int]]:
    """Linear-attention state: one ``(heads / TP, head_dim, head_dim)`` tensor
    (``MambaStateShapeCalculator.linear_attention_state_shape``; no convolution, so no speculative
    rows).

    :raises ValueError: when the heads do not split across ``tp`` ranks.
    """
    return ((_divide(num_heads, tp, "num_attention_heads"), head_dim, head_dim),)


def short_conv_state_shapes(tp: int, conv_dim: int, l_cache: int, num_spec: int = 0) -> tuple[tuple[int, int]]:
    """ShortConv (LFM2) state: one convolution state ``(L_cache - 1 + num_spec, conv_dim / TP)``
    (``short_conv_state_shape``, conv layout ``SD``; vLLM 0.28.0 has no speculative rows).

    :raises ValueError: when ``conv_dim`` does not split across ``tp`` ranks.
    """
    return ((l_cache - 1 + num_spec, _divide(conv_dim, tp, "ShortConv conv_dim")),)
