"""Inkling (``InklingForCausalLM``; vLLM 0.33.0's ``vllm/models/inkling/nvidia``, config class
vLLM's own ``InklingModelConfig``, ``vllm/models/inkling/configs.py``, model_type
``inkling_model``).

Every decoder layer (``InklingDecoderLayer``) keeps two caches, registered in this order:

* its short-convolution state (``sconv_swa_attn.py`` ``InklingConvState``, at
  ``model.layers.<i>.conv_state``): a ``SlidingWindowSpec`` whose block and window are
  ``sconv_kernel_size`` tokens, of ``kv_heads // TP`` heads in bfloat16, each head packing the
  four conv streams (K and V of ``head_dim``, the attention and MLP outputs of
  ``hidden_size // kv_heads``) rounded up to a power of two (:func:`packed_head_size`),
  :class:`~dryboot.vllm.config.hf.InklingConvCaches`;
* its attention (``attention.py`` ``InklingAttention``, at ``model.layers.<i>.attn``): on the
  layers of ``local_layer_ids`` a ``SlidingWindowSpec`` of ``sliding_window_size`` tokens with
  the ``swa_*`` heads, else a ``FullAttentionSpec``, at the cache block size and the KV cache
  dtype, always on FlashAttention (``get_attn_backend``), whatever ``--attention-backend`` says.

The sliding layers' state takes the ``swa_*`` KV heads and head size, the others
``num_key_value_heads`` and ``head_dim``. vLLM unifies the pages as usual
(:mod:`dryboot.vllm.kv_cache_utils.unify`) and groups the four specs by type.

Its multimodal wrapper (``InklingForConditionalGeneration``, ``InklingMMConfig``, model_type
``inkling_mm_model``) builds the same text model on ``text_config`` under the same module names
(:data:`dryboot.vllm.models.wrappers.WRAPPERS`). Its MTP drafter (``InklingMTPModel``) is not
planned; nor is a quantized checkpoint.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.backends import BACKENDS, INKLING_SCONV, AttentionBackend
from dryboot.vllm.config.hf import (
    AttentionGeometry,
    ConfigFields,
    InklingConvCaches,
    LayerKind,
    ModelGeometry,
    extra_of,
)
from dryboot.vllm.dtypes import KVQuantMode, torch_dtype_of
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import AttentionSpec
from dryboot.vllm.models.common import geometry

#: ``InklingModelConfig``'s cache-relevant defaults
DEFAULTS: dict[str, Any] = {
    "hidden_size": 1536,
    "num_hidden_layers": 16,
    "num_attention_heads": 12,
    "num_key_value_heads": 4,
    "sliding_window_size": 512,
    "local_layer_ids": [],
    "n_routed_experts": 0,
    "dense_mlp_idx": 0,
    "num_nextn_predict_layers": 0,
}
_DTYPE = "AssertionError: sconv SWA cache supports bfloat16 only"


def defaults(f: ConfigFields) -> dict[str, Any]:
    """``InklingModelConfig``'s defaults of the keys read here (``head_dim``: ``hidden_size //
    num_attention_heads``; the ``swa_*`` keys: their full-attention twins; the kernel:
    ``sconv_kernel_size``, else ``conv_kernel_size``, else 4)."""
    return dict(DEFAULTS)


def packed_head_size(head_dim: int, hidden_size: int, kv_heads: int) -> int:
    """The conv state's head size in elements (``InklingConvState``): ``2 * head_dim + 2 *
    (hidden_size // kv_heads)`` rounded up to a power of two."""
    raw = 2 * head_dim + 2 * (hidden_size // kv_heads)
    return 1 << (raw - 1).bit_length()


def kernel_size(f: ConfigFields) -> int:
    """``sconv_kernel_size``, else the HF name ``conv_kernel_size``, else 4 (tokens)."""
    for key in ("sconv_kernel_size", "conv_kernel_size"):
        if f.get(key) is not None:
            return f.integer(key)
    return 4


def local_layers(f: ConfigFields, n: int) -> frozenset[int]:
    """``local_layer_ids`` (the sliding-window layers) among the ``n`` decoder layers.

    :raises InputError: not a list of integers."""
    ids = f.get("local_layer_ids") or []
    if not isinstance(ids, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
        raise InputError(f.source, f.where("local_layer_ids"), "must be a list of layer indices")
    return frozenset(i for i in ids if 0 <= i < n)


def layer_entries(n: int, local: frozenset[int]) -> tuple[tuple[LayerKind, ...], tuple[str, ...], tuple[int, ...]]:
    """(kinds, module names, decoder layers) of the caches, two per decoder layer in the order
    ``InklingDecoderLayer`` registers them: its conv state, then its attention."""
    kinds: list[LayerKind] = []
    names: list[str] = []
    layers: list[int] = []
    for i in range(n):
        is_local = i in local
        kinds += [
            LayerKind.INKLING_CONV if is_local else LayerKind.INKLING_CONV_FULL,
            LayerKind.SLIDING if is_local else LayerKind.FULL,
        ]
        names += [f"model.layers.{i}.conv_state", f"model.layers.{i}.attn"]
        layers += [i, i]
    return tuple(kinds), tuple(names), tuple(layers)


def _check_moe(f: ConfigFields, n: int) -> None:
    """``InklingMoE``'s assertions, on a config with an MoE layer (``dense_mlp_idx`` below the
    layers, ``n_routed_experts`` set).

    :raises InputError: no routed experts (not verified); what ``InklingMoE`` asserts (sigmoid gate
    renormalized after top-k, shared sink experts, interleaved gate/up rows)."""
    if f.integer("dense_mlp_idx", default=0, minimum=0) >= n:
        return
    checks = (
        ("gate_activation", f.get("gate_activation") in (None, "sigmoid")),
        ("norm_after_topk", f.get("norm_after_topk") in (None, True)),
        ("n_shared_experts", f.integer("n_shared_experts", default=0, minimum=0) > 0),
        ("shared_expert_sink", f.get("shared_expert_sink") is True),
        ("inference_moe_w13_interleaved", f.get("inference_moe_w13_interleaved") in (None, True)),
    )
    if f.integer("n_routed_experts", default=0, minimum=0) == 0:
        raise InputError(
            f.source,
            f.where("n_routed_experts"),
            "0: an InklingMoE layer without routed experts is not verified against vLLM 0.33.0",
        )
    for key, ok in checks:
        if not ok:
            raise InputError(
                f.source,
                f.where(key),
                "AssertionError: InklingMoE takes only a sigmoid gate renormalized after top-k, shared sink experts "
                "and interleaved gate/up rows",
            )


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """The geometry of ``InklingModel``'s caches: two entries per decoder layer (:func:`layer_entries`).

    :raises InputError: what vLLM refuses (``InklingMoE``'s assertions) or dryboot does not plan (a
        quantized checkpoint)."""
    if f.get("quantization_config") is not None:
        raise InputError(
            f.source,
            f.where("quantization_config"),
            "a quantized Inkling checkpoint is not verified against vLLM 0.33.0",
        )
    n = f.integer("num_hidden_layers")
    hidden = f.integer("hidden_size")
    heads, kv = f.integer("num_attention_heads"), f.integer("num_key_value_heads")
    head_dim = f.opt_int("head_dim") or hidden // heads
    swa_heads = f.opt_int("swa_num_attention_heads") or heads
    swa_kv = f.opt_int("swa_num_key_value_heads") or kv
    swa_head_dim = f.opt_int("swa_head_dim") or head_dim
    local = local_layers(f, n)
    _check_moe(f, n)
    kinds, names, layers = layer_entries(n, local)
    caches = InklingConvCaches(
        kernel_size=kernel_size(f),
        sliding=(swa_kv, packed_head_size(swa_head_dim, hidden, swa_kv)),
        full=(kv, packed_head_size(head_dim, hidden, kv)),
        query_heads=(swa_heads, heads),
    )
    model = geometry(
        f,
        architecture,
        "inkling",
        kinds,
        # ModelConfig checks TP against num_attention_heads; the sliding layers' own heads are
        # InklingAttention's to assert (verify_layers)
        heads=(heads, swa_kv, swa_head_dim),
        sliding_window=f.integer("sliding_window_size") if local else None,
        full_attention=AttentionGeometry(kv, head_dim, head_dim),
        layer_names=names,
        decoder_layers=layers,
        num_mtp_layers=0,
        mtp_kind=None,
        family_extra=caches,
    )
    return model


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """The flags as given: ``InklingConvState`` asserts the model dtype is bfloat16.

    :raises InputError: the MTP drafter (``method`` mtp: ``InklingMTP``, not modelled); ``--dtype``
        (or the config's dtype) resolving to another dtype."""
    if extra_of(model, InklingConvCaches) is None:
        return args
    if args.speculative_method == "mtp":
        raise InputError(
            "--speculative-config",
            "method=mtp",
            f"{model.source}: Inkling's MTP drafter (vllm/models/inkling mtp.py InklingMTP: num_nextn_predict_layers "
            "decoder layers, each with its conv state beside its attention) is not modelled",
        )
    # ModelConfig's dtype: auto takes the config's, float32 served as bfloat16
    auto = "bfloat16" if model.dtype == "float32" else model.dtype
    dtype = auto if args.dtype == "auto" else torch_dtype_of(args.dtype, model.dtype)
    if dtype != "bfloat16":
        raise InputError("--dtype", args.dtype, f"{model.source}: {_DTYPE}, got torch.{dtype}")
    return args


#: quantized KV cache dtypes an Inkling attention layer stores as a plain one-byte cache: ``InklingAttention``
#: builds its spec from ``kv_cache_dtype_str_to_dtype`` (uint8 / int8) itself, no backend adding
#: per-token-head scales or packing nvfp4 halves (recorded on 0.33.0: the figures of fp8)
PLAIN_ONE_BYTE = frozenset(
    {"fp8_per_token_head", "int8_per_token_head", "int4_per_token_head", "nvfp4", "nvfp4_4over6"}
)


def kv_cache_dtype(model: ModelGeometry, requested: str) -> str:
    """The cache the attention layers store: :data:`PLAIN_ONE_BYTE`'s dtypes as a plain fp8-sized
    cache (one byte an element, no scales); any other as requested."""
    if extra_of(model, InklingConvCaches) is not None and requested in PLAIN_ONE_BYTE:
        return "fp8"
    return requested


def attention_backend(model: ModelGeometry, requested: str | None) -> AttentionBackend | None:
    """``InklingAttention.get_attn_backend``: FlashAttention, whatever ``--attention-backend`` names."""
    return BACKENDS["FLASH_ATTN"] if extra_of(model, InklingConvCaches) is not None else None


def handed_on_every_gpu(model: ModelGeometry) -> bool:
    """``InklingAttention.get_attn_backend`` returns FlashAttention whatever the GPU (recorded on SM
    8.0, 9.0, 10.0 and 12.0: the same pages, ``data/inkling/``)."""
    return extra_of(model, InklingConvCaches) is not None


def backend_assumption(model: ModelGeometry) -> str | None:
    """Why the attention layers' backend is FlashAttention whatever the flag names."""
    if extra_of(model, InklingConvCaches) is None:
        return None
    return (
        "Inkling's attention layers take FlashAttention's metadata (InklingAttention.get_attn_backend) and its "
        "conv states INKLING_SCONV_SWA, whatever --attention-backend names"
    )


def verify_layers(model: ModelGeometry, args: EngineArgs) -> None:
    """What ``InklingConvState`` and ``InklingAttention`` assert while the model is built (after
    the drafter's proposer), layer 0's type first: TP at most each layer type's KV heads (the conv
    state keeps whole heads), dividing them and the query heads.

    :raises InputError: naming the heads and vLLM's AssertionError."""
    tp = args.tensor_parallel_size
    caches = extra_of(model, InklingConvCaches)
    if caches is None or tp == 1:
        return
    by_kind = {
        LayerKind.SLIDING: ("swa_num_key_value_heads", caches.sliding[0], caches.query_heads[0]),
        LayerKind.FULL: ("num_key_value_heads", caches.full[0], caches.query_heads[1]),
    }
    # in the order the layers are built: the first layer's type asserts first
    order = dict.fromkeys(k for k in model.layer_kinds if k in by_kind)
    checks = [by_kind[k] for k in order]
    for key, kv, q in checks:
        if tp > kv:
            raise InputError(
                model.source,
                key,
                f"{kv} KV heads at tensor parallel size {tp}: AssertionError: sconv SWA cache supports tp_size <= "
                f"num_kv_heads ({kv}), got {tp}",
            )
        if kv % tp or q % tp:
            raise InputError(
                "--tensor-parallel-size",
                str(tp),
                f"{model.source}: AssertionError: InklingAttention needs TP to divide its {q} heads and {kv} KV heads",
            )


def inkling_conv_spec(conv: InklingConvCaches, kind: LayerKind, tensor_parallel_size: int) -> AttentionSpec:
    """An Inkling decoder layer's short-convolution state (``InklingConvState.get_kv_cache_spec``,
    vLLM 0.33.0): a ``SlidingWindowSpec`` whose block and window are ``kernel_size`` tokens, of
    ``kv_heads // TP`` packed heads (``head_size_v`` 0) in bfloat16, whatever ``--kv-cache-dtype``
    says. ``kind``: ``INKLING_CONV`` (beside a sliding-window layer) or ``INKLING_CONV_FULL``."""
    heads, head_size = conv.sliding if kind is LayerKind.INKLING_CONV else conv.full
    return AttentionSpec(
        layer_kind=kind,
        block_size=conv.kernel_size,
        num_kv_heads=heads // tensor_parallel_size,
        head_size=head_size,
        head_size_v=0,
        torch_dtype="bfloat16",
        kv_cache_dtype="bfloat16",
        quant_mode=KVQuantMode.NONE,
        content_bytes=head_size * 2,
        backend=INKLING_SCONV.name,
        indexes_kv_by_block_stride=INKLING_SCONV.indexes_kv_by_block_stride,
        sliding_window=conv.kernel_size,
    )
