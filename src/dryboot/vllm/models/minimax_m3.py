"""MiniMax-M3 (``MiniMaxM3SparseForCausalLM``, ``MiniMaxM3SparseForConditionalGeneration``,
``MiniMaxM3MTP``): the KV cache geometry vLLM 0.28.0 and 0.33.0 build for it
(``vllm/models/minimax_m3/nvidia/model.py`` and ``common/indexer.py``; the ROCm branch under
``amd/`` is not modelled).

Every decoder layer ``i`` of the text config keeps one main K/V cache, a ``FullAttentionSpec``
of ``num_key_value_heads`` heads (per rank: ``max(1, heads // TP)``) of ``head_dim`` for K and
V in the ``--kv-cache-dtype``. A dense layer (``MiniMaxM3Attention``) registers it through a
plain ``Attention`` (the platform's backend); a sparse layer (``MiniMaxM3SparseAttention``:
``sparse_attention_config["sparse_attention_freq"][i] != 0``) builds that spec itself and takes
the ``MINIMAX_M3_SPARSE`` backend (kernel block 128); no backend customizes its page, so it
carries no per-token-head scales (``2 × head_dim`` bytes per head and token for every quantized
dtype). A sparse layer also owns its
indexer's side cache (``MiniMaxM3IndexerCache``, ``<layer>.self_attn.attn.index_cache``): an
``MLAAttentionSpec`` of one head of ``sparse_index_dim`` elements per token (key only), stored
in bfloat16 whatever ``--kv-cache-dtype`` says (fp8 with ``--attention-config``'s
``indexer_kv_dtype``, which dryboot refuses where it reads it: not modelled), served by
``MINIMAX_M3_SPARSE_INDEXER`` (kernel block 128).

All of these specs are full-attention specs at one block size, so vLLM keeps them in one
uniform-type group: a block holds one page per layer, each at its own size (the indexer's page
is not padded to the main one). The MXFP8 weight quantization leaves the caches as they are.

Block size: vLLM 0.28.0 keeps the default 16 (recorded on SM 9.0 and 8.0); from 0.31 (0.32.0 and
0.33.0 checked) vLLM takes the block every backend addresses, 128, and logs "Setting kv cache block size to 128 for
<backend>/MINIMAX_M3_SPARSE_INDEXER/MINIMAX_M3_SPARSE backend(s)."

:func:`read` lays the layers out for the planner (a dense layer's ``FULL`` cache; a sparse
layer's ``MM3_INDEXER`` cache, then its ``MM3_SPARSE`` main cache); the specs are built here
(:func:`minimax_m3_indexer_spec`, :func:`minimax_m3_sparse_spec`, called from
:mod:`dryboot.vllm.kv_cache_spec`), the group in :mod:`dryboot.vllm.kv_cache_utils.groups`.

vLLM 0.28.0 checks no kernel block while planning: at the default block of 16 it plans and logs
the KV cache size, then its worker finds no kernel block of 16 that the 128-token MiniMax-M3
backends address (``v1/worker/utils.py`` ``select_common_block_size``: "No common block size for
16"), which dryboot's ``kernel-block-size`` invariant reports. ``MiniMaxM3MTP`` (the drafter) is
not modelled.

Pipeline parallelism (recorded on 0.27.1, 0.28.0, 0.30.0 and 0.33.0,
``tests/fidelity/data/pipeline/``): each stage's worker picks its block from its own first
attention layer (``update_block_size_for_backend``). Before 0.31 a stage that starts at a sparse
layer starts with its indexer cache, whose backend addresses only 128-token pages: that stage's
specs are at block 128 while stage 0's (a dense first layer) are at 16. The engine merges every
stage's specs (``get_kv_cache_configs``): two block sizes are no uniform type, so the hybrid path
scales every page to the largest (main caches at 128 tokens, indexer caches at 512) and buckets
equal specs. On 0.27.1 and 0.28.0 a sparse layer's main spec is not a dense layer's (the runner
sets ``indexes_kv_by_block_stride`` from the backend: ``False`` for MiniMax-M3's, ``True`` for
FLASH_ATTN), three buckets; 0.29+ specs have no such field, two buckets. From 0.31 every stage
takes the block all backends address, 128: one uniform-type group, as on one stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.backends import MINIMAX_M3_SPARSE, MINIMAX_M3_SPARSE_INDEXER, AttentionBackend
from dryboot.vllm.config.hf import ConfigFields, LayerKind, MiniMaxM3Caches, ModelGeometry, extra_of
from dryboot.vllm.dtypes import CustomKVCacheDtype, KVQuantMode, dtype_bytes, kv_quant_mode, torch_dtype_of
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import AttentionSpec
from dryboot.vllm.models.common import geometry, num_layers
from dryboot.vllm.versions import VersionRules


@dataclass(frozen=True)
class MiniMaxM3Layers:
    """The cache-relevant fields of a MiniMax-M3 text config.

    :param num_kv_heads: ``num_key_value_heads`` (before TP).
    :param head_dim: ``head_dim`` (elements, K and V each).
    :param sparse: per decoder layer, whether it is a sparse layer (``sparse_attention_freq``).
    :param index_dim: ``sparse_index_dim`` (elements per token of an indexer key; 0: no sparse layer).
    :param topk_blocks: ``sparse_topk_blocks`` (0: no sparse layer).
    """

    num_kv_heads: int
    head_dim: int
    sparse: tuple[bool, ...]
    index_dim: int
    topk_blocks: int = 0

    @property
    def num_sparse(self) -> int:
        return sum(self.sparse)

    @property
    def num_caches(self) -> int:
        """Layers with a KV cache spec: every decoder layer plus one indexer per sparse layer."""
        return len(self.sparse) + self.num_sparse


def read_layers(text_config: dict[str, Any], source: str = "config.json", prefix: str = "") -> MiniMaxM3Layers:
    """Read a MiniMax-M3 text config (``text_config`` of ``minimax_m3_vl``, or the config itself).

    :raises InputError: a missing or malformed field vLLM's layers read.
    """

    def integer(key: str) -> int:
        value = text_config.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(source, prefix + key, f"{value!r}: vLLM's MiniMax-M3 layers need a positive integer")
        return value

    n = integer("num_hidden_layers")
    sparse_cfg = text_config.get("sparse_attention_config") or {}
    if not isinstance(sparse_cfg, dict):
        raise InputError(source, prefix + "sparse_attention_config", "must be an object")
    freq = sparse_cfg.get("sparse_attention_freq")
    if freq is None:
        sparse: tuple[bool, ...] = (False,) * n
    elif not isinstance(freq, list) or not all(isinstance(x, int) for x in freq):
        raise InputError(source, prefix + "sparse_attention_config.sparse_attention_freq", "must be a list of integers")
    else:
        # _sparse_attention_layer_ids: entries past the last layer build nothing
        sparse = tuple(i < len(freq) and freq[i] != 0 for i in range(n))
    index_dim = topk_blocks = 0
    if any(sparse):
        # MiniMaxM3SparseAttention indexes these keys (KeyError when one is missing)
        for key in ("sparse_num_index_heads", "sparse_block_size", "sparse_topk_blocks", "sparse_index_dim"):
            value = sparse_cfg.get(key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InputError(
                    source,
                    f"{prefix}sparse_attention_config.{key}",
                    f"{value!r}: the sparse layers read it (a positive integer)",
                )
        index_dim, topk_blocks = sparse_cfg["sparse_index_dim"], sparse_cfg["sparse_topk_blocks"]
    return MiniMaxM3Layers(integer("num_key_value_heads"), integer("head_dim"), sparse, index_dim, topk_blocks)


def defaults(f: ConfigFields) -> dict[str, Any]:
    """``MiniMaxM3TextConfig``'s defaults for the fields the caches read (vLLM's
    ``transformers_utils/configs/minimax_m3.py``, 0.28.0 and 0.33.0 alike): 60 layers of 64
    query and 4 KV heads of 128, 524,288 positions, and layers 3 to 59 sparse with a 128-wide
    indexer."""
    return {
        "num_hidden_layers": 60,
        "num_attention_heads": 64,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "max_position_embeddings": 524288,
        "sparse_attention_config": {
            "sparse_index_dim": 128,
            "sparse_num_index_heads": 4,
            "sparse_topk_blocks": 16,
            "sparse_block_size": 128,
            "sparse_attention_freq": [0] * 3 + [1] * 57,
        },
    }


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """The layers of a MiniMax-M3 text config: a dense decoder layer's K/V cache (``FULL``:
    ``num_key_value_heads`` of ``head_dim``); a sparse layer's indexer cache (``MM3_INDEXER``)
    then its main K/V cache (``MM3_SPARSE``, the same heads).

    :raises InputError: a missing or malformed field vLLM's layers read.
    """
    text = f.root.get("text_config")
    if not f.prefix and f.root.get("model_type") == "minimax_m3_vl" and isinstance(text, dict):
        # MiniMaxM3Config always builds its text config from text_config (its class defaults
        # filling the rest), even where the file's text_config names no num_hidden_layers
        outer = {k: v for k, v in f.root.items() if k != "text_config"}
        f = ConfigFields(f.source, {**outer, **text}, "text_config.", root=f.root, defaults=f.defaults)
    n = num_layers(f)
    cfg = f.get("sparse_attention_config") or {}
    if not isinstance(cfg, dict):
        raise InputError(f.source, f.where("sparse_attention_config"), "must be an object")
    layers = read_layers(
        {
            "num_hidden_layers": n,
            "num_key_value_heads": f.get("num_key_value_heads"),
            "head_dim": f.get("head_dim"),
            "sparse_attention_config": cfg,
        },
        f.source,
        f.prefix,
    )
    kinds: list[LayerKind] = []
    decoder: list[int] = []
    names: list[str] = []
    for i, is_sparse in enumerate(layers.sparse):
        if is_sparse:
            # the indexer's cache registers while the layer is built, before the layer itself
            kinds += [LayerKind.MM3_INDEXER, LayerKind.MM3_SPARSE]
            decoder += [i, i]
            names += [f"model.layers.{i}.self_attn.attn.index_cache", f"model.layers.{i}.self_attn.attn"]
        else:
            kinds.append(LayerKind.FULL)
            decoder.append(i)
            names.append(f"model.layers.{i}.self_attn.attn")
    return geometry(
        f,
        architecture,
        "minimax_m3",
        tuple(kinds),
        heads=(f.integer("num_attention_heads"), layers.num_kv_heads, layers.head_dim),
        decoder_layers=tuple(decoder),
        layer_names=tuple(names),
        family_extra=MiniMaxM3Caches(
            index_dim=layers.index_dim or 1,
            topk_blocks=layers.topk_blocks or 16,
        ),
    )


#: vLLM 0.33's MSA attend serves these top-k block counts (SM 10.x only)
MSA_TOPK_BLOCKS = frozenset({4, 8, 16, 32})


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """The NVFP4 refusal of vLLM 0.33's ``select_main_backend_and_impl_cls`` (0.33.0 checked;
    0.28.0-0.30.0 have none): ``nvfp4`` anywhere but the SM 10.x MSA attend (its top-k block
    counts 4, 8, 16, 32). The MSA attend's NVFP4 cache
    is not modelled (refused by the sparse layers' spec).

    :raises InputError: vLLM's ValueError.
    """
    caches = extra_of(model, MiniMaxM3Caches)
    kv = args.kv_cache_dtype or "auto"
    if caches is None or not kv.startswith("nvfp4") or not any(k is LayerKind.MM3_SPARSE for k in model.kinds):
        return args
    if tuple(int(p) for p in args.vllm_version.split(".")[:2]) < (0, 33):
        return args
    if kv != "nvfp4":
        # vLLM refuses the other NVFP4 variants here too, but a dense first layer's backend
        # selection refuses them before (every GPU checked); where none does, the sparse
        # layers' spec refuses them as not modelled
        return args
    if args.device.capability[0] != 10 or caches.topk_blocks not in MSA_TOPK_BLOCKS:
        raise InputError(
            "--kv-cache-dtype",
            kv,
            "MiniMax M3 sparse attention supports an NVFP4 KV cache only with the SM100 MSA backend "
            f"(kv_cache_dtype=nvfp4, topk_blocks={caches.topk_blocks}) (vLLM's ValueError)",
        )
    return args


def minimax_m3_indexer_spec(
    caches: MiniMaxM3Caches, block_size: int, rules: VersionRules | None = None
) -> AttentionSpec:
    """A MiniMax-M3 sparse layer's indexer side cache (``MiniMaxM3IndexerCache.get_kv_cache_spec``):
    an ``MLAAttentionSpec`` of one key-only head of ``index_dim`` elements per token at the cache's
    block size, bfloat16 (fp8 with ``indexer_kv_dtype`` fp8) whatever ``--kv-cache-dtype`` says.
    ``rules``: see :func:`minimax_m3_spec_fields`."""
    dtype = "bfloat16" if caches.element_bytes == 2 else "float8_e4m3fn"
    return AttentionSpec(
        layer_kind=LayerKind.MM3_INDEXER,
        block_size=block_size,
        num_kv_heads=1,
        head_size=caches.index_dim,
        head_size_v=0,
        torch_dtype=dtype,
        kv_cache_dtype=dtype,
        quant_mode=KVQuantMode.NONE,
        content_bytes=caches.index_dim * caches.element_bytes,
        backend=MINIMAX_M3_SPARSE_INDEXER.name,
        **minimax_m3_spec_fields(MINIMAX_M3_SPARSE_INDEXER, rules),
    )


def minimax_m3_spec_fields(backend: AttentionBackend, rules: VersionRules | None) -> dict[str, Any]:
    """The fields of a MiniMax-M3 cache's spec that its backend sets, and which decide whether a
    sparse layer's main spec equals a dense layer's (they only meet in one grouping when pipeline
    stages take different blocks: recorded on 0.27.1-0.33.0, ``tests/fidelity/data/pipeline/``):

    * 0.27.1, 0.28.0 (``rules.pad_requires_block_stride``): the runner sets
      ``indexes_kv_by_block_stride`` from the backend, ``False`` for MiniMax-M3's (their stride
      order raises ``NotImplementedError`` with the layers dimension), ``True`` for FLASH_ATTN:
      the specs differ.
    * 0.29, 0.30: no such field; the specs are equal (``True`` here, as every non-MLA attention
      spec that may pad).
    * 0.33 (``rules.kernel_block_stride_alignment``): ``customize_attention_spec`` records the
      backends' fixed 128-token kernel block as ``block_stride_alignment``: the specs differ.
    """
    stride = backend.indexes_kv_by_block_stride if rules is None or rules.pad_requires_block_stride else True
    fixed = [k.size for k in backend.kernel_blocks if not k.multiple_of]
    aligned = (
        rules is not None and bool(rules.kernel_block_stride_alignment) and len(fixed) == len(backend.kernel_blocks)
    )
    return {"indexes_kv_by_block_stride": stride, "block_stride_alignment": max(fixed) if aligned and fixed else None}


#: the KV cache dtypes whose MiniMax-M3 sparse-layer page is the plain one, checked against vLLM
MINIMAX_M3_SPARSE_QUANT = frozenset(
    {
        KVQuantMode.NONE,
        KVQuantMode.FP8_PER_TENSOR,
        KVQuantMode.INT8_PER_TOKEN_HEAD,
        KVQuantMode.FP8_PER_TOKEN_HEAD,
        KVQuantMode.INT4_PER_TOKEN_HEAD,
    }
)


def minimax_m3_sparse_spec(
    kv_cache_dtype: str,
    model_dtype: str,
    heads: int,
    head_dim: int,
    block_size: int,
    custom: CustomKVCacheDtype | None,
    rules: VersionRules | None = None,
) -> AttentionSpec:
    """A MiniMax-M3 sparse layer's main K/V cache (``MiniMaxM3SparseAttention.get_kv_cache_spec``):
    a ``FullAttentionSpec`` of ``heads`` K and V heads of ``head_dim`` in the cache dtype's torch
    dtype, built by the layer itself, so no backend adds per-token-head scales to its page
    (``(head_dim + head_dim) × element size`` per head and token, 1 byte for every quantized
    dtype).

    :raises InputError: a custom, NVFP4 or TurboQuant cache (not modelled for these layers).
    """
    quant = kv_quant_mode(kv_cache_dtype)
    if custom is not None or quant not in MINIMAX_M3_SPARSE_QUANT:
        raise InputError(
            "--kv-cache-dtype",
            kv_cache_dtype,
            "MiniMax-M3's sparse layers with this cache dtype are not modelled (bfloat16/float16, fp8 and the "
            "*_per_token_head dtypes are)",
        )
    torch_dtype = torch_dtype_of(kv_cache_dtype, model_dtype)
    return AttentionSpec(
        layer_kind=LayerKind.MM3_SPARSE,
        block_size=block_size,
        num_kv_heads=heads,
        head_size=head_dim,
        head_size_v=head_dim,
        torch_dtype=torch_dtype,
        kv_cache_dtype=kv_cache_dtype,
        quant_mode=quant,
        content_bytes=2 * head_dim * dtype_bytes(torch_dtype),
        backend=MINIMAX_M3_SPARSE.name,
        **minimax_m3_spec_fields(MINIMAX_M3_SPARSE, rules),
    )
