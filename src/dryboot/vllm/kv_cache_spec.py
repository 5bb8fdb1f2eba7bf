"""Each layer's KV cache spec as its ``get_kv_cache_spec`` builds it
(``vllm/v1/worker/gpu_model_runner.py`` ``get_kv_cache_spec``, the attention and mamba layers'
own ``get_kv_cache_spec``, the backends' ``customize_spec``): one spec per distinct layer kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from dryboot.errors import InputError
from dryboot.vllm.backends import (
    DEEPSEEK_V32_INDEXER,
    FP8_DS_MLA_BYTES,
    SM120_DS_MLA_KV_CACHE_DTYPES,
    AttentionBackend,
)
from dryboot.vllm.config.hf import (
    InklingConvCaches,
    LayerKind,
    MiniMaxM3Caches,
    ModelGeometry,
    extra_of,
)
from dryboot.vllm.dtypes import CustomKVCacheDtype, KVQuantMode, kv_quant_mode, torch_dtype_of
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import (
    AttentionSpec,
    LayerSpec,
    MambaSpec,
    attention_content_bytes,
    gdn_state_shapes,
    linear_attention_state_shapes,
    mamba1_state_shapes,
    mamba2_state_shapes,
    short_conv_state_shapes,
    state_bytes,
)
from dryboot.vllm.layer_set import LayerSet
from dryboot.vllm.models import kimi_linear
from dryboot.vllm.models.inkling import inkling_conv_spec
from dryboot.vllm.models.minimax_m3 import minimax_m3_indexer_spec, minimax_m3_sparse_spec
from dryboot.vllm.versions import VersionRules


@lru_cache(maxsize=1024)
def kv_layout(
    kv_cache_dtype: str,
    model_dtype: str,
    head_dim: int,
    head_dim_v: int,
    custom: CustomKVCacheDtype | None,
) -> tuple[KVQuantMode, str, int]:
    """(quant mode, torch dtype, bytes per head per token) of a KV cache dtype at a head size.

    :raises InputError: a custom formula that does not evaluate.
    """
    if custom is not None:
        try:
            content = custom.content_bytes(head_dim)
        except ValueError as exc:
            raise InputError("--custom-kv-cache-dtype", custom.name, str(exc)) from None
        return KVQuantMode.CUSTOM, "uint8", content
    quant = kv_quant_mode(kv_cache_dtype)
    torch_dtype = torch_dtype_of(kv_cache_dtype, model_dtype)
    return quant, torch_dtype, attention_content_bytes(head_dim, head_dim_v, torch_dtype, quant)


def attention_spec(
    kind: LayerKind,
    model: ModelGeometry,
    args: EngineArgs,
    kv_cache_dtype: str,
    model_dtype: str,
    backend: AttentionBackend,
    block_size: int,
    rules: VersionRules | None = None,
) -> AttentionSpec:
    """One attention layer's spec (``rules``: the release's, for MiniMax-M3's caches, whose
    spec fields differ by release: :func:`~dryboot.vllm.models.minimax_m3.minimax_m3_spec_fields`)."""
    geo = model.attention(kind)
    heads = model.kv_heads_per_rank(kind, args.tensor_parallel_size)
    if kind is LayerKind.MLA_INDEXER:
        return indexer_spec(geo.head_dim, block_size)
    if kind in (LayerKind.INKLING_CONV, LayerKind.INKLING_CONV_FULL):
        conv = extra_of(model, InklingConvCaches)
        assert conv is not None
        return inkling_conv_spec(conv, kind, args.tensor_parallel_size)
    if kind is LayerKind.MM3_INDEXER:
        mm3 = extra_of(model, MiniMaxM3Caches)
        assert mm3 is not None
        return minimax_m3_indexer_spec(mm3, block_size, rules)
    if kind is LayerKind.MM3_SPARSE:
        return minimax_m3_sparse_spec(
            kv_cache_dtype,
            model_dtype,
            heads,
            geo.head_dim,
            block_size,
            args.custom_dtype(kv_cache_dtype),
            rules,
        )
    head_v = 0 if kind in (LayerKind.MLA, LayerKind.HIDDEN_STATE) else geo.head_dim_v
    quant, torch_dtype, content = kv_layout(
        kv_cache_dtype, model_dtype, geo.head_dim, head_v, args.custom_dtype(kv_cache_dtype)
    )
    if kind is LayerKind.SLIDING and quant is KVQuantMode.INT4_PER_TOKEN_HEAD and rules and rules.sliding_int4_unpacked:
        # 0.27.1's SlidingWindowSpec sizes its page without the int4 halving (rules.sliding_int4_unpacked)
        content = attention_content_bytes(geo.head_dim, head_v, torch_dtype, KVQuantMode.INT8_PER_TOKEN_HEAD)
    if kind is LayerKind.MLA and backend.name == "FLASHMLA_SPARSE" and quant is KVQuantMode.FP8_PER_TENSOR:
        # _canonicalize_sparse_mla_kv_cache_dtype: FlashMLA's sparse kernels store a quantized
        # cache (fp8, or fp8_ds_mla named) in DeepSeek's fp8_ds_mla layout (656 bytes per token)
        kv_cache_dtype, torch_dtype, content = "fp8_ds_mla", "uint8", FP8_DS_MLA_BYTES
    elif (
        kind is LayerKind.MLA
        and backend.name == "FLASHINFER_MLA_SPARSE_SM120"
        and (kv_cache_dtype in SM120_DS_MLA_KV_CACHE_DTYPES or kv_cache_dtype == "fp8_ds_mla")
    ):
        # _canonicalize_sparse_mla_kv_cache_dtype: the SM120 FlashInfer sparse kernels store an
        # auto, fp8 or fp8_e4m3 cache (or fp8_ds_mla named) in the fp8_ds_mla layout (656 B a token)
        kv_cache_dtype, torch_dtype, content = "fp8_ds_mla", "uint8", FP8_DS_MLA_BYTES
        quant = kv_quant_mode("fp8_ds_mla")
    return AttentionSpec(
        layer_kind=kind,
        block_size=block_size,
        num_kv_heads=heads,
        head_size=geo.head_dim,
        head_size_v=head_v,
        torch_dtype=torch_dtype,
        kv_cache_dtype=kv_cache_dtype,
        quant_mode=quant,
        content_bytes=content,
        backend=backend.name,
        indexes_kv_by_block_stride=backend.indexes_kv_by_block_stride,
        sliding_window=model.sliding_window if kind is LayerKind.SLIDING else None,
        attention_chunk_size=model.attention_chunk_size if kind is LayerKind.CHUNKED else None,
        spec_name=model.attn.full_spec_name if kind is LayerKind.FULL else None,
    )


#: the ``ds_mla`` cache layouts (DeepSeek's packed fp8 / nvfp4 latent rows)
_DS_MLA_LAYOUTS = frozenset({"fp8_ds_mla", "nvfp4_ds_mla"})


def flat_row_alignment(spec: LayerSpec, capability_major: int) -> int:
    """vLLM 0.31.0's ``block_stride_alignment`` of a layer's spec, in bytes (1: none): a sparse MLA
    layer whose backend reads the cache as flat rows (``FLASHINFER_MLA_SPARSE``;
    ``FLASHMLA_SPARSE`` without a ``ds_mla`` layout, or with one on SM 10.x, whose TMA addresses
    rows) aligns blocks to its bytes per token (``MLAAttention.get_kv_cache_spec``,
    ``_uses_flat_kv_cache``)."""
    if not isinstance(spec, AttentionSpec) or spec.layer_kind is not LayerKind.MLA:
        return 1
    flat = spec.backend == "FLASHINFER_MLA_SPARSE" or (
        spec.backend == "FLASHMLA_SPARSE" and (spec.kv_cache_dtype not in _DS_MLA_LAYOUTS or capability_major == 10)
    )
    return spec.bytes_per_token if flat else 1


def indexer_spec(head_size: int, block_size: int) -> AttentionSpec:
    """The sparse-attention indexer's key cache (``DeepseekV32IndexerCache.get_kv_cache_spec``):
    an ``MLAAttentionSpec`` of one ``head_size``-byte uint8 head per token at the cache's block
    size, whatever ``--kv-cache-dtype`` says (the indexer always stores fp8 keys and their
    scales)."""
    return AttentionSpec(
        layer_kind=LayerKind.MLA_INDEXER,
        block_size=block_size,
        num_kv_heads=1,
        head_size=head_size,
        head_size_v=0,
        torch_dtype="uint8",
        kv_cache_dtype="uint8",  # reports name the stored dtype: fp8 keys and scales as bytes
        quant_mode=KVQuantMode.NONE,
        content_bytes=head_size,
        backend=DEEPSEEK_V32_INDEXER.name,
        indexes_kv_by_block_stride=DEEPSEEK_V32_INDEXER.indexes_kv_by_block_stride,
    )


def mamba_dtypes(model: ModelGeometry, args: EngineArgs, model_dtype: str) -> tuple[str, str]:
    """(conv dtype, SSM/temporal dtype) as ``MambaStateDtypeCalculator`` resolves them,
    after the model's config hook (Qwen3.5 ``mamba_ssm_dtype``, Nemotron-H float32)."""
    conv = torch_dtype_of(args.mamba_cache_dtype, model_dtype)
    ssm_flag = args.mamba_ssm_cache_dtype
    if ssm_flag == "auto" and model.mamba.hf_ssm_dtype is not None:
        ssm_flag = model.mamba.hf_ssm_dtype
    ssm = conv if ssm_flag == "auto" else torch_dtype_of(ssm_flag, model_dtype)
    return conv, ssm


#: (layer kind, state tensor shapes per rank, their torch dtypes).
MambaState = tuple[LayerKind, tuple[tuple[int, ...], ...], tuple[str, ...]]


def mamba_state(
    model: ModelGeometry,
    args: EngineArgs,
    model_dtype: str,
    rules: VersionRules,
    *,
    speculative_rows: bool = True,
    hybrid_sizing: bool = False,
) -> MambaState | None:
    """The mamba-family state one layer keeps (``MambaStateShapeCalculator``,
    ``MambaStateDtypeCalculator``), or ``None`` for a model without such layers.
    ``speculative_rows=False`` leaves out the convolution rows of the speculative tokens, as
    some model classes' ``get_mamba_state_shape_from_config`` do (the state the hybrid
    alignment sizes the attention block to: :attr:`ModelGeometry.align_state_without_spec`);
    ``hybrid_sizing=True`` gives the dtypes of the model class's ``get_mamba_state_dtype_from_config``
    (the hybrid alignment's), where a layer's own ``get_state_dtype`` differs (Kimi-Linear's KDA
    layer under ``--mamba-ssm-cache-dtype bfloat16``: :func:`kimi_linear.kda_layer_recurrent_dtype`).

    :raises InputError: state heads that do not split over ``--tensor-parallel-size``.
    """
    tp = args.tensor_parallel_size
    k = args.num_speculative_tokens if speculative_rows else 0
    conv, ssm = mamba_dtypes(model, args, model_dtype)
    try:
        if model.mamba.gdn is not None:
            g = model.mamba.gdn
            shapes: tuple[tuple[int, ...], ...] = gdn_state_shapes(
                tp, g.num_k_heads, g.num_v_heads, g.head_k_dim, g.head_v_dim, g.conv_kernel, k
            )
            return LayerKind.GDN, shapes, (conv, ssm)
        if model.mamba.mamba2 is not None:
            m = model.mamba.mamba2
            shapes = mamba2_state_shapes(
                tp, m.num_heads, m.head_dim, m.n_groups, m.state_size, m.conv_kernel, k, m.d_inner
            )
            return LayerKind.MAMBA2, shapes, (conv, ssm)
        if model.mamba.mamba1 is not None:
            m1 = model.mamba.mamba1
            return LayerKind.MAMBA1, mamba1_state_shapes(tp, m1.d_inner, m1.d_state, m1.d_conv), (conv, ssm)
        if model.mamba.kda is not None:
            g = model.mamba.kda
            shapes = gdn_state_shapes(tp, g.num_k_heads, g.num_v_heads, g.head_k_dim, g.head_v_dim, g.conv_kernel, k)
            recurrent = kimi_linear.kda_recurrent_dtype(g, args.mamba_ssm_cache_dtype, model, rules)
            if not hybrid_sizing:
                recurrent = kimi_linear.kda_layer_recurrent_dtype(g, recurrent)
            return LayerKind.KDA, shapes, (conv, recurrent)
        if model.mamba.linear_attn is not None:
            la = model.mamba.linear_attn
            # linear_attention_state_dtype: the --mamba-cache-dtype, else the model's
            return LayerKind.LINEAR_ATTN, linear_attention_state_shapes(tp, la.num_heads, la.head_dim), (conv,)
        if model.mamba.short_conv is not None:
            sc = model.mamba.short_conv
            # the ShortConv layer keeps the speculative tokens' rows from 0.29 on
            spec_rows = k if rules.short_conv_spec_rows else 0
            return LayerKind.SHORT_CONV, short_conv_state_shapes(tp, sc.conv_dim, sc.l_cache, spec_rows), (conv,)
    except ValueError as exc:
        raise InputError("--tensor-parallel-size", str(tp), f"{model.source}: {exc}") from None
    return None


def sliding_start_block(backend: AttentionBackend, primary_block: int, rules: VersionRules) -> int:
    """Where a sliding-window layer's block starts (version switch)."""
    if rules.sliding_window_start == "largest-fitting":
        return backend.largest_block_at_most(primary_block)
    return backend.smallest_listed_block


MAMBA_KINDS = frozenset(k for k in LayerKind if k.is_mamba)


def build_layers(
    model: ModelGeometry,
    args: EngineArgs,
    *,
    kv_cache_dtype: str,
    model_dtype: str,
    backend: AttentionBackend,
    block_size: int,
    mamba: MambaState | None,
    mamba_block: int,
    mamba_mode: str,
    mamba_padded: int | None,
    rules: VersionRules,
    sliding_block: int | None = None,
    prefix: str | None = None,
    side_states: Mapping[LayerKind, tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]] | None = None,
    side_checkpoints: int = 0,
) -> LayerSet:
    """Every layer's spec as its ``get_kv_cache_spec`` builds it: one spec per layer kind.
    ``side_states``: the (shapes, dtypes) of a mamba kind whose state is not the model's mamba
    layers' (``mamba``): Qwen4-Exp's PLE state (the family's ``side_mamba_states``);
    ``side_checkpoints``: the prefill checkpoint blocks each such layer's spec takes (1 where the
    scheduler takes prefill checkpoints: ``Qwen4ExpPLELayer.get_kv_cache_spec`` in ``align``
    mode when every mamba layer exports them)."""
    kinds, names, order = model.layers_by_kind(prefix)
    # a sliding layer asks the backend's kernel blocks with its own spec (its head size)
    sw_backend = (
        backend.for_head(model.attention(LayerKind.SLIDING).head_dim) if LayerKind.SLIDING in kinds else backend
    )
    sw_block = sliding_block or sliding_start_block(sw_backend, block_size, rules)
    specs: list[LayerSpec] = []
    for kind in kinds:
        if kind in MAMBA_KINDS:
            if side_states is not None and kind in side_states:
                shapes, dtypes = side_states[kind]
            else:
                assert mamba is not None
                _, shapes, dtypes = mamba
            natural = state_bytes(shapes, dtypes)
            if mamba_padded is not None and mamba_padded < natural and kind is LayerKind.KDA:
                # the plain KDA layer's float32 state in a page sized for a bfloat16 one
                raise kimi_linear.outgrown_page(model, args.mamba_ssm_cache_dtype, natural, mamba_padded)
            if mamba_padded is not None and mamba_padded < natural:
                # MambaSpec.page_size_bytes asserts page_size_padded >= the state's bytes
                raise InputError(
                    "--speculative-config",
                    f"num_speculative_tokens={args.num_speculative_tokens}",
                    f"{model.source}: {model.architecture} sizes the hybrid attention block to its mamba "
                    f"state without the speculative tokens' convolution rows, so the layer's state "
                    f"({natural:,} B) exceeds the padded mamba page ({mamba_padded:,} B): vLLM's MambaSpec "
                    "asserts page_size_padded >= the state size (AssertionError) and the engine does not start",
                )
            checkpoints = side_checkpoints if side_states is not None and kind in side_states else 0
            if checkpoints and shapes[0][0] - args.num_speculative_tokens > mamba_block:
                # Qwen4ExpPLELayer.get_kv_cache_spec: the checkpoint grid (the mamba block) must hold
                # the convolution window
                raise InputError(
                    model.source,
                    "ple_conv_kernel_size",
                    f"the PLE convolution window ({shapes[0][0] - args.num_speculative_tokens} tokens) exceeds the "
                    f"prefill checkpoint grid ({mamba_block} tokens): vLLM asserts grid >= conv_state_len",
                )
            if kind is LayerKind.KDA and rules.kda_prefill_checkpoints:
                checkpoints = kimi_linear.kda_prefill_checkpoint_blocks(
                    model.mamba.kda, args.device.capability[0], model_dtype, dtypes[-1]
                )
            specs.append(
                MambaSpec(
                    layer_kind=kind,
                    block_size=mamba_block,
                    shapes=shapes,
                    torch_dtypes=dtypes,
                    mamba_cache_mode=mamba_mode,
                    num_speculative_blocks=args.num_speculative_tokens,
                    page_size_padded=mamba_padded,
                    num_prefill_checkpoint_blocks=checkpoints,
                )
            )
        else:
            block = sw_block if kind is LayerKind.SLIDING else block_size
            specs.append(attention_spec(kind, model, args, kv_cache_dtype, model_dtype, backend, block, rules))
    return LayerSet(tuple(specs), names, order)
