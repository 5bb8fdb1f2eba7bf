"""Read a Hugging Face ``config.json`` as the config classes read it, into the geometry the
KV-cache planner needs.

This module holds what every family shares: typed field access with the config class's defaults
(:class:`ConfigFields`) and :class:`ModelGeometry`; reading the file and choosing the family is
:mod:`dryboot.vllm.transformers_utils.config`. Which layers keep a
KV cache, and with which heads, is each model family's rule: :mod:`dryboot.vllm.models`
(registered by architecture name, as ``vllm/model_executor/models/registry.py`` does). An
architecture no family claims is refused, never guessed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, TypeVar

from dryboot.errors import InputError, missing_field
from dryboot.vllm.kv_cache_interface import LayerKind
from dryboot.vllm.versions import VersionRules

__all__ = [
    "AttentionGeometry",
    "ConfigClass",
    "ConfigFields",
    "GatedDeltaNet",
    "LayerKind",
    "Mamba1",
    "Mamba2",
    "ModelGeometry",
    "ShortConv",
]


@dataclass(frozen=True)
class GatedDeltaNet:
    """Gated DeltaNet (Qwen3-Next, Qwen3.5) state parameters (HF ``linear_*`` fields); also Kimi
    Delta Attention's (``ModelGeometry.kda``: as many key as value heads, of one size)."""

    num_k_heads: int
    num_v_heads: int
    head_k_dim: int
    head_v_dim: int
    conv_kernel: int
    #: KDA only: Kimi-K3's full-rank gate (``linear_attn_config.use_full_rank_gate``: vLLM 0.33.0
    #: builds ``KimiK3DeltaAttention``) and its gate's lower bound (``gate_lower_bound``, or ``None``)
    full_rank_gate: bool = False
    gate_lower_bound: float | None = None
    #: the layer class keeps FlashInfer's GDN prefill checkpoints where that prefill runs (vLLM 0.33's
    #: ``qwen_gdn_linear_attn.py``: Qwen3-Next, Qwen3.5, Qwen4-Exp); OLMo-Hybrid's layer (on
    #: ``gdn/base.py``) always runs FLA and declares no checkpoint alignment
    prefill_checkpoints: bool = True
    #: KDA only: the model class passes ``--mamba-ssm-cache-dtype`` to ``kda_state_dtype`` (GLM-5.3-Flash's
    #: does not on vLLM 0.30.0 / 0.31.0: a float32 recurrent state whatever the flag)
    ssm_dtype_flag: bool = True


@dataclass(frozen=True)
class LinearAttention:
    """A linear-attention (lightning attention) layer's state parameters (``layers/mamba/linear/
    base.py`` ``LinearAttention``): ``num_heads`` heads (TP splits them) of a ``head_dim`` x
    ``head_dim`` state each."""

    num_heads: int
    head_dim: int


@dataclass(frozen=True)
class Mamba2:
    """Mamba2 (Nemotron-H, Granite-4-H, Falcon-H1, Zamba2) state parameters.

    ``intermediate_size`` is the mixer's inner width that the convolution state spans
    (``MambaMixer2(intermediate_size=...)``); ``None`` means ``num_heads * head_dim``
    (Nemotron-H's rule).
    """

    num_heads: int
    head_dim: int
    n_groups: int
    state_size: int
    conv_kernel: int
    chunk_size: int | None
    intermediate_size: int | None = None

    @property
    def d_inner(self) -> int:
        """The convolution state's inner width before the TP split."""
        return self.intermediate_size if self.intermediate_size is not None else self.num_heads * self.head_dim


@dataclass(frozen=True)
class Mamba1:
    """Mamba1 (Jamba) state parameters: ``d_inner`` (intermediate size), ``d_state``, ``d_conv``."""

    d_inner: int
    d_state: int
    d_conv: int


@dataclass(frozen=True)
class ShortConv:
    """ShortConv (LFM2) state parameters: the convolution width ``conv_dim`` and ``l_cache``
    (``conv_L_cache``, the kernel length)."""

    conv_dim: int
    l_cache: int


@dataclass(frozen=True)
class AttentionGeometry:
    """KV heads (total, before TP) and head sizes of one attention layer kind."""

    num_kv_heads: int
    head_dim: int
    head_dim_v: int


@dataclass(frozen=True)
class FamilyExtra:
    """What only one family's hooks read (``ModelGeometry.family_extra``): each family that needs
    one subclasses this in its own module (or, where the generic KV cache code lays the layers
    out, beside that code) and reads it back with :func:`extra_of`."""


_E = TypeVar("_E", bound=FamilyExtra)


def extra_of(model: ModelGeometry, cls: type[_E]) -> _E | None:
    """``model.family_extra`` when it is a ``cls``, else ``None``."""
    extra = model.family_extra
    return extra if isinstance(extra, cls) else None


@dataclass(frozen=True)
class InklingConvCaches(FamilyExtra):
    """Inkling's per-layer short-convolution state (vLLM 0.33.0's
    ``vllm/models/inkling/nvidia/sconv_swa_attn.py`` ``InklingConvState``): a sliding-window
    cache of ``kernel_size`` tokens (its block and its window), bfloat16, whose head packs the
    layer's four conv streams (K, V, attention output, MLP output).

    ``sliding`` / ``full``: (KV heads in total, packed head size in elements) of the state beside
    a sliding-window / full-attention layer; the head size is ``2 * head_dim + 2 * hidden_size //
    kv_heads`` rounded up to a power of two, the same on every TP rank, each rank holding
    ``kv_heads // TP`` heads. ``query_heads``: the attention heads of a sliding-window and of a
    full-attention layer, which ``InklingAttention`` asserts TP divides while it is built.
    """

    kernel_size: int
    sliding: tuple[int, int]
    full: tuple[int, int]
    query_heads: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class MiniMaxM3Caches(FamilyExtra):
    """What a MiniMax-M3 sparse layer's indexer caches (``vllm/models/minimax_m3/common/indexer.py``
    ``MiniMaxM3IndexerCache``): one head of ``index_dim`` elements per token, ``element_bytes``
    each (2: bfloat16, the default ``indexer_kv_dtype``), whatever ``--kv-cache-dtype`` says.
    ``topk_blocks``: ``sparse_topk_blocks``, which the sparse layers' backend choice reads.
    """

    index_dim: int
    element_bytes: int = 2
    topk_blocks: int = 16


@dataclass(frozen=True)
class DeepseekV4Caches(FamilyExtra):
    """What DeepSeek-V4's layers cache (``vllm/models/deepseek_v4/attention.py``,
    ``compressor.py``, ``v1/attention/backends/mla/sparse_swa.py``).

    :param compress_ratios: per backbone layer, ``max(1, compress_ratios[i])`` (1, 4 or 128);
        MTP layers use 1.
    :param head_dim: the latent row (``head_dim``, elements).
    :param index_head_dim: the ratio-4 layers' indexer head (elements).
    :param sliding_window: every layer's sliding-window cache (tokens).
    :param num_attention_heads: query heads (split by tensor parallelism).
    :param o_groups: output projection groups (split by tensor parallelism).
    :param vision_n_layers: the vision tower's layers (``vision_n_layers``; 0: text only).
    :param vision_n_heads: the tower's attention heads (``vision_n_heads``, default 16).
    :param vision_widths: the tower widths ``DeepseekV4ViT`` / ``DeepseekV4Aligner`` split over the
        tensor-parallel ranks with its heads: (config key, size) of ``vision_dim`` (1024),
        ``vision_inter_dim`` (2816) and ``hidden_size``.
    :param vision_max_n_token: the most tokens one image takes (``vision_max_n_token``, default 384).
    :param vision_keys_absent: the tower's config keys the file does not give (vLLM's own config
        class defaults them; transformers' defines none).
    """

    compress_ratios: tuple[int, ...]
    head_dim: int
    index_head_dim: int
    sliding_window: int
    num_attention_heads: int
    o_groups: int
    vision_n_layers: int = 0
    vision_n_heads: int = 16
    vision_widths: tuple[tuple[str, int], ...] = ()
    vision_max_n_token: int = 384
    vision_keys_absent: tuple[str, ...] = ()


@dataclass(frozen=True)
class MaxLenTraits:
    """How ``ModelConfig`` derives the maximum model length (tokens).

    ``max_position_embeddings``: the derived length (RoPE scaling included; ``None``: the config
    names none); ``max_len_key``: the config key it came from; ``default_max_model_len``: a model
    class's own default; ``model_max_length``: the tokenizer-style cap some configs carry.
    ``yarn_unscaled``: the length 0.30+ derive for a YaRN config (``yarn``, ``deepseek_yarn``:
    ``max_position_embeddings`` taken as already scaled; ``None``: no YaRN);
    ``rope_sizes_cache_only``: every RoPE type only sizes the rotary table (``default``, ``linear``,
    ``llama3``, ``ntk``, ``proportional``: 0.33's ``_rope_only_sizes_cache``)."""

    max_position_embeddings: int | None = None
    max_len_key: str = "max_position_embeddings"
    default_max_model_len: int | None = None
    model_max_length: int | None = None
    yarn_unscaled: int | None = None
    rope_sizes_cache_only: bool = True

    def derived(self, yarn_prescaled: bool) -> int | None:
        """The derived length of a release that takes a YaRN config's length as already scaled
        (``yarn_prescaled``: ``VersionRules.yarn_max_len_prescaled``) or not. Tokens."""
        if yarn_prescaled and self.yarn_unscaled is not None:
            return self.yarn_unscaled
        return self.max_position_embeddings


@dataclass(frozen=True)
class QuantTraits:
    """The quantization config's bearing on the KV cache: ``quant_kv_cache_dtype`` the KV dtype it
    implies for ``--kv-cache-dtype auto``, ``quant_method`` its method,
    ``kv_scales_in_checkpoint`` whether the checkpoint ships KV scales. ``modelopt_mixed_algo``:
    the nested ``quantization.quant_algo`` of a ModelOpt config (``hf_quant_config.json``'s form)
    as written, when it is MIXED_PRECISION (0.33 names it ``modelopt_mixed``; earlier releases
    refuse it, :func:`dryboot.vllm.config.resolve`'s release checks). ``fp8_block_shards``:
    (layer kind, output size, TP-sharded or not, ``weight_block_size[0]``) of each fp8
    block-quantized weight whose TP shard vLLM checks against the block
    (:func:`dryboot.vllm.fp8_utils.check_block_shards`)."""

    quant_kv_cache_dtype: str | None = None
    quant_method: str | None = None
    kv_scales_in_checkpoint: bool = False
    modelopt_mixed_algo: str | None = None
    fp8_block_shards: tuple[tuple[str, int, int, int], ...] = ()


@dataclass(frozen=True)
class MambaState:
    """A mamba-family state and the interfaces of a model class that keeps one.

    ``gdn``, ``mamba2``, ``mamba1``, ``short_conv``, ``kda``, ``linear_attn``: the state's parameters (at most a
    few set). ``hf_ssm_dtype`` is the SSM state dtype the config pins (Qwen3.5
    ``mamba_ssm_dtype``, Nemotron-H ``mamba_ssm_cache_dtype`` or float32), or ``None`` when the
    state follows ``--mamba-cache-dtype``. ``mamba_chunk_size``: ``ModelConfig.get_mamba_chunk_size``.
    ``align_state_without_spec``: the model class's ``get_mamba_state_shape_from_config`` leaves
    out the speculative tokens' convolution rows, so the hybrid alignment sizes the attention
    block to a state smaller than the layers keep (Granite-4, Falcon-H1, Zamba2).
    ``mamba_prefix_caching``: the model class implements ``SupportsMambaPrefixCaching`` (else
    ``--mamba-cache-mode all`` falls back to ``align``). ``hybrid_class``: the class is ``IsHybrid``;
    ``attention_free``: it is ``IsAttentionFree``. ``hf_layer_types``: the model's (top-level) HF
    config class keeps a ``layer_types`` attribute, one entry per decoder layer, which
    ``ModelConfig.is_hybrid`` reads (Qwen3-Next, Qwen3.5's text classes, Jamba, NemotronH, LFM2,
    Granite-4, OLMo-Hybrid, Bailing-V2.5; not a multimodal wrapper's class, nor vLLM's
    ``KimiLinearConfig``); ``hf_legacy_attention_name``: under a transformers that keeps legacy
    layer-type names (``VersionRules.legacy_layer_type_names``) the class names an attention
    layer ``"attention"`` (Granite-4's and NemotronH's), else ``"full_attention"``."""

    gdn: GatedDeltaNet | None = None
    mamba2: Mamba2 | None = None
    mamba1: Mamba1 | None = None
    short_conv: ShortConv | None = None
    kda: GatedDeltaNet | None = None
    linear_attn: LinearAttention | None = None
    hf_ssm_dtype: str | None = None
    mamba_chunk_size: int = 2048
    align_state_without_spec: bool = False
    mamba_prefix_caching: bool = True
    hybrid_class: bool = False
    attention_free: bool = False
    hf_layer_types: bool = False
    hf_legacy_attention_name: bool = False


@dataclass(frozen=True)
class LayerNaming:
    """How the entries of ``layer_kinds`` map to vLLM's layers: their module names,
    ``model.layers.<i>.<attention_suffix>`` with ``layer_prefix`` for the first part;
    ``layer_names`` each layer's name where the model class does not follow that pattern
    (Zamba2). ``decoder_layers``: the decoder layer each entry belongs to, where one decoder
    layer keeps two caches (Falcon-H1: attention and Mamba2 side by side); ``None``: its own
    index. ``kv_sharing``: pairs (layer, the earlier layer whose KV cache it reads) of
    cross-layer KV sharing. ``unbuildable``: (layer, config field, vLLM's failure) for the first
    layer vLLM fails to build (Gemma-4's shared layer with no earlier layer of its type), which
    vLLM raises only when it builds that layer: after the configs are checked and the earlier
    layers' attention backends selected, and under pipeline parallelism on that layer's stage."""

    layer_prefix: str = "model.layers"
    attention_suffix: str = "self_attn.attn"
    layer_names: tuple[str, ...] | None = None
    decoder_layers: tuple[int, ...] | None = None
    kv_sharing: tuple[tuple[int, int], ...] = ()
    unbuildable: tuple[int, str, str] | None = None


@dataclass(frozen=True)
class AttentionTraits:
    """What the attention backend selection reads from the model besides head sizes.

    ``attention_sinks``, ``logits_soft_cap``: the layers use them. ``mm_prefix_lm``: vLLM's
    ``ModelConfig.is_mm_prefix_lm`` (image tokens attend bidirectionally; every attention layer's
    backend must support it). ``encoder_only_attention``: the config sets ``is_causal`` false and
    the model file then builds its attention layers as ``EncoderOnlyAttention``: they take a
    backend but keep no KV cache, so only the other layers' caches are planned.
    ``indexer_head_size``: a DeepSeek-V3.2-style sparse MLA model (its config has ``index_topk``):
    the bytes per token of each sparse-attention indexer's key cache (``MLA_INDEXER`` entries of
    ``layer_kinds``, each in the decoder layer of the ``MLA`` entry after it); ``None``: no
    indexer. ``mla_config``: vLLM's ``ModelConfig.use_mla`` holds for the config even where no
    layer is MLA (Kimi-Linear with ``kv_lora_rank``): the hybrid alignment then takes the latent
    page and a 128-token kernel alignment. ``mla_dims``: (qk_nope, qk_rope, v) head dims of an
    MLA model (the MLA backends' validity per GPU reads the first). ``full_spec_name``: the spec
    class a model's own full-attention layer class builds instead of ``FullAttentionSpec``, as
    vLLM names its KV cache group (``rswa``: UnlimitedOCR's ``RSWAAttention``, an ``RSWASpec``
    sized as full attention); ``None``: ``FullAttentionSpec``. ``index_topk``: the sparse-attention
    indexer's top-k (``hf_text_config.index_topk``; the SM 12.x sparse MLA backend takes 2048 only);
    ``None``: not read. ``config_soft_cap``: the text config sets ``attn_logit_softcapping`` (its class
    default included), whatever the layers do: FA4's head-256 kernel falls back for the whole model
    (``fa_utils.py`` ``_fa4_hd256_fallback_reason``, "logits soft capping")."""

    attention_sinks: bool = False
    logits_soft_cap: bool = False
    config_soft_cap: bool = False
    mm_prefix_lm: bool = False
    encoder_only_attention: bool = False
    indexer_head_size: int | None = None
    mla_config: bool = False
    mla_dims: tuple[int, int, int] | None = None
    full_spec_name: str | None = None
    index_topk: int | None = None


@dataclass(frozen=True)
class ParallelTraits:
    """What tensor and pipeline parallelism check on the model.

    ``num_experts``: routed experts (``ModelConfig.get_num_experts``; 0: dense).
    ``first_moe_layer``: the first MoE decoder layer of a model class that needs one on every
    pipeline stage (LFM2-MoE: ``num_dense_layers``). ``pp_refusal``: why vLLM fails to build this
    config under pipeline parallelism. ``extra_attention_heads``: attention head counts some
    layers have besides ``num_attention_heads``, which TP must also divide (Step-3.5).
    ``vision_num_heads``: a vision tower's attention heads, which TP must divide (LFM2-VL).
    ``tower_heads``: (config path, size) of a multimodal wrapper's encoder-tower dimensions that
    vLLM splits across tensor-parallel ranks: TP must divide each. ``moe_experts``: (config key,
    experts) TP's expert split checks."""

    num_experts: int = 0
    first_moe_layer: int | None = None
    #: the MoE decoder layers where they are not every layer from ``first_moe_layer`` on
    #: (Qwen3-Next's ``decoder_sparse_step`` / ``mlp_only_layers``); ``None``: that rule
    moe_layers: tuple[int, ...] | None = None
    #: vLLM's words (its RuntimeError) when a pipeline stage builds no MoE block (``None``: dryboot's own)
    no_moe_layer: str | None = None
    pp_refusal: str | None = None
    extra_attention_heads: tuple[int, ...] = ()
    vision_num_heads: int | None = None
    tower_heads: tuple[tuple[str, int], ...] = ()
    moe_experts: tuple[str, int] | None = None
    #: deepstack levels a wrapper adds to its first decoder layers: a later pipeline stage must
    #: start at or after this layer (the model class asserts ``start_layer >= levels``)
    deepstack_levels: int = 0


@dataclass(frozen=True)
class MtpLayers:
    """``num_mtp_layers``: the multi-token-prediction layers the checkpoint carries (they join the
    KV cache under ``"method": "mtp"``), each a layer of kind ``mtp_kind``; ``mtp_layer_names``
    their module names where the family's MTP module names them itself (``None``: by the rule of
    ``resolve.mtp_drafter``)."""

    num_mtp_layers: int = 0
    mtp_kind: LayerKind | None = None
    mtp_layer_names: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ConfigClass:
    """The config class ``AutoConfig`` picks for the file: ``hf_model_type`` the file's top-level
    ``model_type`` (a wrapper's, not its language model's; ``""``: none), ``auto_config`` whether its
    ``auto_map`` names an ``AutoConfig`` class of the checkpoint's own code (loaded only with
    ``--trust-remote-code``)."""

    hf_model_type: str = ""
    auto_config: bool = False


#: ModelGeometry's sub-records, by field name (``ModelGeometry.build`` routes flat keywords)
_SUB_RECORDS: dict[str, type[Any]] = {
    "max_len": MaxLenTraits,
    "quant": QuantTraits,
    "mamba": MambaState,
    "naming": LayerNaming,
    "attn": AttentionTraits,
    "parallel": ParallelTraits,
    "mtp": MtpLayers,
    "config_class": ConfigClass,
}


@dataclass(frozen=True)
class ModelGeometry:
    """The cache-relevant shape of one model: what every family has, and its traits in
    sub-records (:class:`MaxLenTraits`, :class:`QuantTraits`, :class:`MambaState`,
    :class:`LayerNaming`, :class:`AttentionTraits`, :class:`ParallelTraits`, :class:`MtpLayers`,
    :class:`ConfigClass`);
    what only one family's hooks read is its ``family_extra`` (:class:`FamilyExtra`).

    Head counts are totals (before tensor parallelism). ``dtype`` is the torch dtype name the
    HF config declares (``bfloat16``...). ``full_attention`` overrides the heads of
    full-attention layers where they differ from the sliding ones (Gemma-4's global layers).
    ``family`` names the :mod:`dryboot.vllm.models` module that read the config.
    ``hidden_size`` is the text model's ``hidden_size`` (``ModelConfig.get_hidden_size``; 0 when
    the config has none). How the layers map to vLLM's (names, decoder layers, KV sharing) is
    ``naming`` (:class:`LayerNaming`; ``kv_sharing`` and ``decoder_layers`` read through).
    """

    source: str
    architecture: str
    model_type: str
    dtype: str
    layer_kinds: tuple[LayerKind, ...]
    num_kv_heads: int
    head_dim: int
    head_dim_v: int
    sliding_window: int | None
    attention_chunk_size: int | None
    num_attention_heads: int = 0
    full_attention: AttentionGeometry | None = None
    family: str = ""
    hidden_size: int = 0
    v2_runner_refusal: str | None = None  # why vLLM's V2 model runner fails to build this model as a drafter
    max_len: MaxLenTraits = MaxLenTraits()
    quant: QuantTraits = QuantTraits()
    mamba: MambaState = MambaState()
    naming: LayerNaming = LayerNaming()
    attn: AttentionTraits = AttentionTraits()
    parallel: ParallelTraits = ParallelTraits()
    mtp: MtpLayers = MtpLayers()
    config_class: ConfigClass = ConfigClass()
    family_extra: FamilyExtra | None = None

    @classmethod
    def build(cls, **fields: Any) -> ModelGeometry:
        """A geometry from flat keywords: each is a field of this class or of one of its
        sub-records (``gdn=`` goes to ``mamba``, ``pp_refusal=`` to ``parallel``...).

        :raises TypeError: a keyword no record has.
        """
        own, records = _route(fields)
        return cls(**own, **{name: _SUB_RECORDS[name](**given) for name, given in records.items()})

    def evolve(self, **fields: Any) -> ModelGeometry:
        """``self`` with flat keywords changed, routed as :meth:`build` routes them.

        :raises TypeError: a keyword no record has.
        """
        own, records = _route(fields)
        return replace(self, **own, **{name: replace(getattr(self, name), **given) for name, given in records.items()})

    def kv_heads_per_rank(self, kind: LayerKind, tp: int) -> int:
        """KV heads one rank holds for layers of ``kind``: ``max(1, total // TP)``
        (``ModelConfig.get_num_kv_heads``: replicated when TP exceeds them); MLA keeps its single
        latent head; the hidden-state cache layer keeps one head per captured hidden state on every
        rank (``ExtractHiddenStatesModel``)."""
        if kind is LayerKind.HIDDEN_STATE:
            return self.num_kv_heads
        return 1 if self.use_mla else max(1, self.attention(kind).num_kv_heads // tp)

    def attention(self, kind: LayerKind) -> AttentionGeometry:
        """Heads and head sizes of layers of ``kind``."""
        if kind is LayerKind.FULL and self.full_attention is not None:
            return self.full_attention
        if kind is LayerKind.MLA_INDEXER and self.attn.indexer_head_size is not None:
            return AttentionGeometry(1, self.attn.indexer_head_size, 0)
        if kind is LayerKind.MM3_INDEXER and isinstance(self.family_extra, MiniMaxM3Caches):
            return AttentionGeometry(1, self.family_extra.index_dim, 0)
        return AttentionGeometry(self.num_kv_heads, self.head_dim, self.head_dim_v)

    @property
    def num_layers(self) -> int:
        return len(self.layer_kinds)

    @property
    def kv_sharing(self) -> tuple[tuple[int, int], ...]:
        """``naming.kv_sharing``: (layer, the earlier layer whose KV cache it reads) pairs."""
        return self.naming.kv_sharing

    @property
    def decoder_layers(self) -> tuple[int, ...] | None:
        """``naming.decoder_layers``: the decoder layer of each entry of ``layer_kinds``."""
        return self.naming.decoder_layers

    @cached_property
    def kinds(self) -> frozenset[LayerKind]:
        """The distinct layer kinds."""
        return frozenset(self.layer_kinds)

    @property
    def has_mamba_state(self) -> bool:
        """The config describes a mamba-family state (Gated DeltaNet, Mamba2, Mamba1, ShortConv, KDA,
        linear attention)."""
        m = self.mamba
        states = (m.gdn, m.mamba2, m.mamba1, m.short_conv, m.kda, m.linear_attn)
        return any(s is not None for s in states)

    @property
    def supports_mamba_prefix_caching(self) -> bool:
        """``SupportsMambaPrefixCaching``: Gated DeltaNet models and the classes that say so
        (:attr:`mamba_prefix_caching`) do not."""
        return self.mamba.gdn is None and self.mamba.mamba_prefix_caching

    @property
    def is_hybrid(self) -> bool:
        """vLLM's ``ModelConfig.is_hybrid``: the model class is a hybrid (``IsHybrid``), whatever
        mix of layers this config gives it."""
        return self.mamba.hybrid_class

    @property
    def use_mla(self) -> bool:
        return LayerKind.MLA in self.kinds

    def layers_by_kind(
        self, prefix: str | None = None
    ) -> tuple[tuple[LayerKind, ...], tuple[tuple[str, ...], ...], tuple[str, ...]]:
        """(kinds in first-appearance order, the layer names of each kind, every name in module
        order), for layers that keep a KV cache. Cached per prefix."""
        cache: dict[str | None, tuple[tuple[LayerKind, ...], tuple[tuple[str, ...], ...], tuple[str, ...]]] = (
            self.__dict__.setdefault("_by_kind", {})
        )
        hit = cache.get(prefix)
        if hit is None:
            table = self.layer_table(prefix)
            by: dict[LayerKind, list[str]] = {}
            for name, kind in table:
                by.setdefault(kind, []).append(name)
            hit = cache[prefix] = (tuple(by), tuple(tuple(v) for v in by.values()), tuple(n for n, _ in table))
        return hit

    def layer_table(self, prefix: str | None = None) -> tuple[tuple[str, LayerKind], ...]:
        """(module name, kind) of every layer that keeps a KV cache, in module order;
        names are ``layer_name(i)``, or ``<prefix>.<i>`` when ``prefix`` is given. Cached."""
        cache: dict[str | None, tuple[tuple[str, LayerKind], ...]] = self.__dict__.setdefault("_tables", {})
        table = cache.get(prefix)
        if table is None:
            table = cache[prefix] = tuple(
                (self.layer_name(i) if prefix is None or self.naming.layer_names is not None else f"{prefix}.{i}", kind)
                for i, kind in enumerate(self.layer_kinds)
                if kind is not LayerKind.NONE and not (self.attn.encoder_only_attention and kind.is_attention)
            )
        return table

    def layer_name(self, index: int) -> str:
        """vLLM's module name of layer ``index`` (the key of its KV cache spec)."""
        if self.naming.layer_names is not None:
            return self.naming.layer_names[index]
        kind = self.layer_kinds[index]
        if kind is LayerKind.GDN:
            return f"{self.naming.layer_prefix}.{index}.linear_attn"
        if kind in (LayerKind.MAMBA2, LayerKind.MAMBA1):
            return f"{self.naming.layer_prefix}.{index}.mixer"
        if kind is LayerKind.SHORT_CONV:
            return f"{self.naming.layer_prefix}.{index}.short_conv"
        if self.attn.indexer_head_size is not None:
            # an indexer and its MLA layer share one decoder layer
            layer = self.decoder_layer(index)
            if kind is LayerKind.MLA_INDEXER:
                return f"{self.naming.layer_prefix}.{layer}.self_attn.indexer.k_cache"
            return f"{self.naming.layer_prefix}.{layer}.{self.naming.attention_suffix}"
        return f"{self.naming.layer_prefix}.{index}.{self.naming.attention_suffix}"

    @property
    def sparse_mla(self) -> bool:
        """vLLM's ``is_v32`` (``deepseek_v2.py``): the MLA layers come with a sparse-attention
        indexer and take a sparse MLA backend."""
        return self.attn.indexer_head_size is not None

    def count(self, kind: LayerKind) -> int:
        return sum(1 for k in self.layer_kinds if k is kind)

    def decoder_layer(self, index: int) -> int:
        """The decoder layer (``num_hidden_layers`` numbering) entry ``index`` belongs to."""
        return index if self.decoder_layers is None else self.decoder_layers[index]

    @property
    def num_decoder_layers(self) -> int:
        """Decoder layers, as pipeline parallelism splits them (``num_hidden_layers``)."""
        return len(self.layer_kinds) if self.decoder_layers is None else max(self.decoder_layers) + 1


def _route(fields: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Flat keywords split into :class:`ModelGeometry`'s own and those of each sub-record.

    :raises TypeError: a keyword no record has.
    """
    own = {k: v for k, v in fields.items() if k in ModelGeometry.__dataclass_fields__}
    records: dict[str, dict[str, Any]] = {}
    for key, value in fields.items():
        if key in own:
            continue
        name = next((n for n, r in _SUB_RECORDS.items() if key in r.__dataclass_fields__), None)
        if name is None:
            raise TypeError(f"ModelGeometry has no field {key!r}")
        records.setdefault(name, {})[key] = value
    return own, records


class ConfigFields:
    """Typed access to a (text) config's fields, with one-line errors naming the file and field.

    ``defaults`` are the Hugging Face config class's defaults for absent keys (what
    ``AutoConfig`` would fill in: e.g. Llama ``max_position_embeddings`` 2048, Qwen3
    ``head_dim`` 128); a key present in the file always wins. ``root`` is the whole file
    (``quantization_config`` and the wrapper's keys live there).
    """

    def __init__(
        self,
        source: str,
        data: dict[str, Any],
        prefix: str,
        *,
        root: dict[str, Any] | None = None,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        self.source = source
        self.data = data
        self.prefix = prefix
        self.root = root if root is not None else data
        self.defaults = defaults or {}

    def with_defaults(self, defaults: dict[str, Any]) -> ConfigFields:
        """The same fields, absent keys read from ``defaults`` (a config class's)."""
        return ConfigFields(self.source, self.data, self.prefix, root=self.root, defaults=defaults)

    def where(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def given(self, key: str) -> bool:
        """Whether the file itself sets ``key`` (not null)."""
        return self.data.get(key) is not None

    def has(self, key: str) -> bool:
        return self.get(key) is not None

    def get(self, key: str) -> Any:
        """The file's value (an explicit ``null`` included), else the class default."""
        return self.data[key] if key in self.data else self.defaults.get(key)

    def integer(self, key: str, default: int | None = None, *, minimum: int = 1, maximum: int | None = None) -> int:
        value = self.get(key)
        if value is None:
            if default is None:
                raise InputError(self.source, self.where(key), missing_field())
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(self.source, self.where(key), f"must be an integer, got {json.dumps(value)}")
        if value < minimum:
            raise InputError(self.source, self.where(key), f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise InputError(self.source, self.where(key), f"must be <= {maximum:,}, got {value:,}")
        return value

    def opt_int(self, key: str) -> int | None:
        return self.integer(key) if self.has(key) else None

    def boolean(self, key: str, default: bool = False) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise InputError(self.source, self.where(key), f"must be true or false, got {json.dumps(value)}")
        return value


_TORCH_DTYPE_NAMES = {
    "bfloat16": "bfloat16",
    "float16": "float16",
    "half": "float16",
    "float32": "float32",
    "float": "float32",
}


def config_dtype(f: ConfigFields) -> str:
    """The model dtype the config declares (``dtype`` / ``torch_dtype``; bfloat16 when absent).

    :raises InputError: a dtype vLLM cannot serve as a model dtype.
    """
    name = f.data.get("dtype") or f.data.get("torch_dtype") or f.root.get("torch_dtype") or "bfloat16"
    if name not in _TORCH_DTYPE_NAMES:
        raise InputError(f.source, f.where("torch_dtype"), f"unsupported dtype {name!r}")
    return _TORCH_DTYPE_NAMES[str(name)]


#: ModelOpt ``quant_algo`` -> the ``quant_method`` vLLM names the checkpoint's
_MODELOPT_METHODS = {
    "FP8": "modelopt",
    "FP8_PER_CHANNEL_PER_TOKEN": "modelopt",
    "FP8_PB_WO": "modelopt",
    "NVFP4": "modelopt_fp4",
    "MIXED_PRECISION": "modelopt_mixed",  # 0.33+; earlier releases raise (VersionRules.modelopt_mixed_nested)
}
#: ModelOpt ``kv_cache_quant_algo`` -> the KV cache dtype ``auto`` becomes
_MODELOPT_KV_DTYPES = {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}


def _quantization_config(f: ConfigFields) -> dict[str, Any] | None:
    q = f.root.get("quantization_config") or f.data.get("quantization_config")
    return q if isinstance(q, dict) else None


def _normalized_method(f: ConfigFields, q: dict[str, Any]) -> str:
    """``quant_method`` as vLLM 0.28.0 names it (``_normalize_quantization_config``): a ModelOpt
    config (``producer.name`` modelopt) with a ``quantization.quant_algo`` is ``modelopt`` (FP8
    kinds), ``modelopt_fp4`` (NVFP4) or ``modelopt_mixed`` (MIXED_PRECISION: vLLM 0.33's
    naming; 0.27.1-0.30.0 raise on it, checked per release by :func:`modelopt_mixed_algo`'s
    caller); otherwise its own ``quant_method``, lower case (``""`` without one).

    :raises InputError: a ModelOpt ``quant_algo`` vLLM does not know (its ``ValueError``).
    """
    producer = q.get("producer")
    inner = q.get("quantization")
    if isinstance(producer, dict) and producer.get("name") == "modelopt" and isinstance(inner, dict):
        algo = inner.get("quant_algo")
        if algo is not None:
            method = _MODELOPT_METHODS.get(str(algo).upper())
            if method is None:
                raise InputError(
                    f.source, "quantization_config.quantization.quant_algo", f"Unknown ModelOpt quant algo: {algo}"
                )
            return method
    return str(q.get("quant_method") or "").lower().replace("compressed_tensors", "compressed-tensors")


def modelopt_mixed_algo(f: ConfigFields) -> str | None:
    """The config's (:func:`nested_modelopt_mixed_algo`)."""
    q = _quantization_config(f)
    return None if q is None else nested_modelopt_mixed_algo(q)


def nested_modelopt_mixed_algo(q: Mapping[str, Any]) -> str | None:
    """The nested ``quantization.quant_algo`` of a ModelOpt quantization config ``q`` as written
    when it is MIXED_PRECISION (``_normalize_quantization_config`` reaches it only in that nested
    form: ``hf_quant_config.json``, read when ``config.json`` has no ``quantization_config``),
    else ``None``."""
    producer, inner = q.get("producer"), q.get("quantization")
    if not (isinstance(producer, dict) and producer.get("name") == "modelopt" and isinstance(inner, dict)):
        return None
    algo = inner.get("quant_algo")
    return str(algo) if algo is not None and str(algo).upper() == "MIXED_PRECISION" else None


def modelopt_mixed_refusal(algo: str, rules: VersionRules) -> str | None:
    """Why ``rules``' release does not serve a nested ModelOpt ``quant_algo`` MIXED_PRECISION
    (``algo`` as written), or ``None`` (it names it ``modelopt_mixed``): 0.27.1-0.30.0 raise
    ``ValueError: Unknown ModelOpt quant algo`` in ``ModelConfig`` (``ModelArchConfigConvertor.
    _normalize_quantization_config``, recorded by the oracle), and so do 0.31.0 and 0.32.0."""
    if rules.modelopt_mixed_nested:
        return None
    return f"Unknown ModelOpt quant algo: {algo} (vLLM {rules.version})"


def quantization_method(f: ConfigFields) -> tuple[str | None, bool]:
    """(``quantization_config.quant_method`` as vLLM names it, whether the checkpoint carries fp8
    KV scales): ModelOpt and fp8 checkpoints always do (MIXED_PRECISION ones named ``modelopt_mixed``
    with a KV-cache algorithm), compressed-tensors ones when they declare a ``kv_cache_scheme``
    (``Attention.__init__``: such checkpoints refuse an fp8_e5m2 cache)."""
    q = _quantization_config(f)
    if q is None:
        return None, False
    method = _normalized_method(f, q) or None
    nested = q.get("quantization")
    inner: dict[str, Any] = nested if isinstance(nested, dict) else q
    # MIXED_PRECISION gives attention a KV-cache method only with a KV algorithm (vLLM 0.33.0)
    mixed_kv = method == "modelopt_mixed" and bool(inner.get("kv_cache_quant_algo") or q.get("kv_cache_scheme"))
    scales = (
        method in ("modelopt", "fp8")
        or mixed_kv
        or (method == "compressed-tensors" and q.get("kv_cache_scheme") is not None)
    )
    return method, scales


def quantization_kv_cache_dtype(f: ConfigFields) -> str | None:
    """The KV cache dtype a checkpoint's quantization config implies for ``--kv-cache-dtype auto``.

    A ModelOpt checkpoint's (``modelopt*`` method; vLLM 0.28.0 ``get_kv_cache_quant_algo_string``):
    its ``kv_cache_scheme`` or ``kv_cache_quant_algo``, under its ``quantization`` object (as
    ``hf_quant_config.json`` keeps it) or at the top; FP8 (or a static 8-bit float scheme) is
    ``fp8_e4m3``; a value vLLM does not know leaves ``auto``. Another method's
    ``kv_cache_quant_algo`` FP8 or compressed-tensors' ``kv_cache_scheme``: an fp8 cache
    (``Attention.__init__``).

    :raises InputError: an NVFP4 KV cache or a ``kv_cache_quant_algo`` other than FP8 (not modelled).
    """
    q = _quantization_config(f)
    if q is None:
        return None
    method = _normalized_method(f, q)
    if method.startswith("modelopt"):
        inner = q.get("quantization")
        inner = inner if isinstance(inner, dict) else q
        algo = (
            inner.get("kv_cache_scheme")
            or q.get("kv_cache_scheme")
            or inner.get("kv_cache_quant_algo")
            or q.get("kv_cache_quant_algo")
        )
        if isinstance(algo, dict):
            if algo.get("dynamic") is False and algo.get("num_bits") == 8 and algo.get("type") == "float":
                algo = "fp8"
            elif algo.get("num_bits") == 4 and algo.get("type") == "float":
                algo = "nvfp4"
            else:
                return None  # vLLM warns and keeps auto
        if not isinstance(algo, str):
            return None
        dtype = _MODELOPT_KV_DTYPES.get(algo.lower())
        if dtype == "nvfp4":
            raise InputError(
                f.source, "quantization_config.kv_cache_quant_algo", f"{algo!r} is not modelled (only FP8)"
            )
        return dtype
    algo = q.get("kv_cache_quant_algo")
    if algo is not None:
        if str(algo).upper() != "FP8":
            raise InputError(
                f.source, "quantization_config.kv_cache_quant_algo", f"{algo!r} is not modelled (only FP8)"
            )
        return "fp8"
    if q.get("kv_cache_scheme") is not None and method:
        return "fp8"
    return None


def ssm_dtype(f: ConfigFields, key: str) -> str:
    """A config-pinned SSM state dtype (``mamba_ssm_dtype``...).

    :raises InputError: not float32, float16 or bfloat16.
    """
    value = f.get(key)
    if value not in ("float32", "float16", "bfloat16"):
        raise InputError(f.source, f.where(key), f"unsupported SSM dtype {value!r}")
    return str(value)
