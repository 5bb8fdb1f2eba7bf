"""HY V4 (``HYV4ForCausalLM``; vLLM 0.29.0-0.33.0's ``vllm/models/hy_v4/nvidia``, config class vLLM's
own ``HYV4Config``, ``transformers_utils/configs/hy_v4.py``):
MLA layers, sparse where ``layer_types`` says so, with a lightning indexer whose top-k some sparse
layers share, learned per-head sinks and an output gate, on ``hc_mult`` residual channels (iHC).

KV cache, as ``HYV4MLAAttention`` builds it (recorded on tiny configs, ``tests/fidelity/data/hy-v4/``):

* Layer ``i`` is sparse when ``layer_types[i]`` is a sparse-attention type (``HYV4Config`` folds
  ``sparse`` and ``sparse_attention`` into ``deepseek_sparse_attention``; ``index_topk`` is a
  field of the class, so it is always set). ``layer_types`` left out: no layer is sparse, and the
  model is DeepSeek-V3's dense MLA (its sink then finds no sink-capable dense backend and is
  dropped: vLLM's layers take the dense selection).
* A sparse layer whose ``indexer_types[i]`` is ``"full"`` builds an indexer and its key cache
  (``model.layers.<i>.self_attn.indexer.k_cache``, DeepSeek-V3.2's: ``index_head_dim +
  index_head_dim // 128 * 4`` uint8 bytes per token), registered before its MLA cache; a
  ``"shared"`` one reads the preceding full layer's top-k and keeps no indexer cache
  (``compute_skip_topk_layers``). ``HYV4Config`` always fills ``indexer_types`` (full at layer 0
  and every layer ``i`` with ``(i - 1) % 4 == 0``), so DeepSeek's ``index_topk_freq`` rule never
  applies; one of another length, or with another value, is refused as vLLM refuses it.
* The learned sink (``learnable_sink``, default on) does not change the KV spec; it changes the
  backend: no CUDA sparse MLA backend advertises sinks, so the layer hands itself
  ``HYV4FlashMLASparseBackend`` (``hy_v4/nvidia/flashmla_sparse.py``, named ``FLASHMLA_SPARSE``)
  whenever that backend validates for the GPU (SM 9.x, 10.x), the model dtype (bfloat16), the KV
  cache dtype and a given block size (:func:`engine_args` names it as ``--attention-backend``
  would): FLASHMLA_SPARSE's 64-token kernel pages and its ``fp8_ds_mla`` layout for a quantized
  cache, where DeepSeek-V3.2's selection would take FLASH_ATTN_MLA_SPARSE first on SM90. Where it
  does not validate, vLLM drops the sinks with a warning and selects as DeepSeek-V3.2 does (the
  flags as given; recorded: float16, fp8_e4m3, an RTX 5090).
* Before any of that the layer probes for a sparse backend without sinks and raises where none
  validates (:func:`check_backend`: a named non-sparse backend, a GPU below SM 9.x, on SM 9.x a
  block not a multiple of 64 or a KV dtype no sparse backend takes); a plain nvfp4 cache is refused
  for any MLA model.

Per release (:func:`for_release`, recorded on the same tiny configs on each): before 0.32.0
``HYV4MLAAttention``'s sparse layer types lack ``indexed_attention``, the name transformers 5.18+
gives ``deepseek_sparse_attention`` when a config is read. On 0.29.0 / 0.30.0 (transformers 5.19 /
5.24) every sparse layer type is so renamed: every layer is dense MLA whatever ``layer_types`` says
(no indexer, no ``indexer_types`` check, the sink dropped; a named sparse backend refused as for any
dense MLA model). On 0.31.0 (transformers 5.17) the layers are built as on 0.32.0, but its
``layer_types`` validation refuses ``indexed_attention``. The weights are sized on 0.29.0-0.33.0
(every layer dense on 0.29.0 / 0.30.0; 0.31.0 builds 0.32.0's weights: its indexer ``k_norm`` is
vLLM's ``LayerNorm`` without a dtype argument, whose weight and bias are float32 on that release
anyway).

Not modelled (refused by name): dense beside sparse layers in one model (two MLA backends in one
group); the MTP drafter (``HYV4MTPModel``). The weights are sized in
``model_executor/models/hy_v4.py`` (dense, mixed and sparse layers).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.backends import BACKENDS, sm120_sparse_reasons
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, ModelGeometry, extra_of
from dryboot.vllm.dtypes import torch_dtype_of
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.models.common import geometry, num_layers
from dryboot.vllm.models.deepseek import indexer_head_size, sparse_layers
from dryboot.vllm.versions import VersionRules, rules_for, version_key

#: ``HYV4Config``'s defaults for the fields read here (the weights walk adds its own to them)
DEFAULTS: dict[str, Any] = {
    "hidden_size": 2816,
    "num_hidden_layers": 34,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 262144,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 192,
    "qk_rope_head_dim": 64,
    "v_head_dim": 256,
    "index_topk": 2048,
    "index_head_dim": 128,
    "index_n_heads": 16,
    "learnable_sink": True,
    "num_nextn_predict_layers": 1,
}
#: ``layer_types`` entries of a sparse layer (0.32+'s ``attention.py`` ``_SPARSE_LAYER_TYPES``, as
#: ``HYV4Config`` folds them)
SPARSE_TYPES = frozenset({"deepseek_sparse_attention", "sparse_attention", "sparse", "indexed_attention"})
#: ``layer_types`` entry of a dense MLA layer
DENSE_TYPE = "full_attention"
#: transformers' name of a sparse layer (``layer_types``)
INDEXED_TYPE = "indexed_attention"
#: the first release whose registry lists ``HYV4ForCausalLM`` (which releases build every layer dense
#: MLA, and which take :data:`INDEXED_TYPE`: the switches ``hy_v4_dense_layers`` and
#: ``hy_v4_indexed_layer_type`` of :class:`~dryboot.vllm.versions.VersionRules`)
FIRST_RELEASE = "0.29.0"
#: the backend a sparse layer with a learned sink hands itself (``HYV4FlashMLASparseBackend``)
SINK_BACKEND = "FLASHMLA_SPARSE"
#: compute capability majors FLASHMLA_SPARSE serves (``supports_compute_capability``)
SINK_BACKEND_MAJORS = (9, 10)
#: KV cache dtypes FLASHMLA_SPARSE serves (``supported_kv_cache_dtypes``; nvfp4_ds_mla aside)
SINK_BACKEND_KV_DTYPES = frozenset({"auto", "bfloat16", "fp8_ds_mla", "fp8"})
#: ``HYV4MLAAttention``'s words where no sparse MLA backend validates for its layers
NO_SPARSE_BACKEND = (
    "HYV4 sparse attention was requested, but no valid sparse MLA backend is available for current "
    "runtime/config. Refusing to fall back to dense attention."
)
#: KV cache dtypes some SM 9.x sparse MLA backend takes (FLASH_ATTN_MLA_SPARSE: 16-bit; FLASHMLA_SPARSE:
#: fp8 as fp8_ds_mla; FLASHINFER_MLA_SPARSE_SM90: fp8_e4m3); another one fails the probe (recorded:
#: fp8_e5m2, fp8_per_token_head)
SM90_SPARSE_KV_DTYPES = frozenset({"auto", "bfloat16", "float16", "fp8", "fp8_ds_mla", "fp8_e4m3"})
#: its kernel pages (``get_supported_kernel_block_sizes``: a multiple of 64)
SINK_BACKEND_BLOCK = 64


@dataclass(frozen=True)
class SparseLayers(FamilyExtra):
    """What a sparse HY V4's layers add to DeepSeek-V3.2's. ``sinks``: they keep learned per-head
    sinks (``learnable_sink``) and hand themselves FLASHMLA_SPARSE (:func:`engine_args`; not an
    attention trait of the selection: the layer binds its backend itself). The rest: how each
    release reads the config (:func:`for_release`)."""

    sinks: bool
    #: ``layer_types`` names ``indexed_attention`` (transformers' name of a sparse layer, which
    #: 0.31.0's transformers does not take: :func:`for_release`)
    indexed: bool = False
    #: the model as 0.29.0 / 0.30.0 build it: every layer dense MLA (``None``: this model is that one)
    dense: ModelGeometry | None = None
    #: why 0.31.0+ refuse the config (``(where, reason)``), when this model is the dense one
    refusal: tuple[str, str] | None = None


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(DEFAULTS)


def default_indexer_types(n: int) -> tuple[str, ...]:
    """``HYV4Config.__post_init__``'s ``indexer_types`` for ``n`` layers: ``"full"`` at layer 0 and
    every layer ``i`` with ``(i - 1) % 4 == 0``, ``"shared"`` elsewhere."""
    return tuple("full" if i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(n))


def indexer_types(f: ConfigFields, n: int) -> tuple[str, ...]:
    """The config's ``indexer_types`` (or :func:`default_indexer_types`).

    :raises InputError: a list of another length than ``num_hidden_layers``, or an entry other
        than ``full`` / ``shared`` (``compute_skip_topk_layers``' ValueErrors)."""
    raw = f.get("indexer_types")
    if raw is None:
        return default_indexer_types(n)
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        raise InputError(f.source, f.where("indexer_types"), "must be a list of strings")
    if len(raw) != n:
        raise InputError(
            f.source,
            f.where("indexer_types"),
            f"ValueError: indexer_types must contain one entry per hidden layer: expected {n}, got {len(raw)}.",
        )
    invalid = sorted(set(raw) - {"full", "shared"})
    if invalid:
        raise InputError(
            f.source,
            f.where("indexer_types"),
            f"ValueError: indexer_types only supports 'full' and 'shared', got {invalid}.",
        )
    return tuple(raw)


def sparse_mask(f: ConfigFields, n: int, sparse_types: frozenset[str] = SPARSE_TYPES) -> tuple[bool, ...]:
    """Which of the ``n`` layers are sparse (``layer_types`` entries of ``sparse_types``; none when
    it is left out).

    :raises InputError: ``layer_types`` of another length, or an entry neither sparse nor
        ``full_attention`` (not verified)."""
    raw = f.get("layer_types")
    if raw is None:
        return (False,) * n
    if not isinstance(raw, list) or len(raw) != n:
        raise InputError(f.source, f.where("layer_types"), f"must list one type per layer ({n})")
    unknown = sorted({str(t) for t in raw} - SPARSE_TYPES - {DENSE_TYPE})
    if unknown:
        raise InputError(
            f.source,
            f.where("layer_types"),
            f"{unknown}: HY V4 layer types other than {DENSE_TYPE} and the sparse ones are not verified",
        )
    return tuple(t in sparse_types for t in raw)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """HY V4's layers: DeepSeek-V3.2's sparse MLA (an indexer cache before the MLA cache of each
    sparse layer whose ``indexer_types`` entry is ``full``) when every layer is sparse; DeepSeek-V3's
    dense MLA when none is. A config with sparse layers also keeps its every-layer-dense reading
    (0.29.0 / 0.30.0's, :func:`for_release`); where only that reading stands, the model is that one
    and the sparse reading's refusal is kept for the later releases.

    :raises InputError: a malformed ``layer_types``, or a field vLLM needs (either reading)."""
    dense = _read(f, architecture, frozenset())
    if not any(sparse_mask(f, num_layers(f))):
        return dense
    extra = SparseLayers(sinks=bool(f.get("learnable_sink")), indexed=INDEXED_TYPE in f.get("layer_types"))
    try:
        sparse = _read(f, architecture, SPARSE_TYPES)
    except InputError as exc:
        return dense.evolve(family_extra=replace(extra, refusal=(exc.where or "", exc.reason)))
    return sparse.evolve(family_extra=replace(extra, dense=dense))


def for_release(model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
    """``model`` as ``rules``' release reads its config (:func:`reading`).

    :raises InputError: on 0.31.0+ the sparse reading's refusal (dense beside sparse layers, a bad
        ``indexer_types``...); a ``layer_types`` naming ``indexed_attention`` on 0.31.0, whose
        transformers' ``layer_types`` validation (``validate_layer_type``) does not take it, so the
        config does not load (0.32.0+ take it as a sparse layer; 0.29.0 / 0.30.0 as dense)."""
    extra = extra_of(model, SparseLayers)
    if extra is None or rules.hy_v4_dense_layers:
        return reading(model, rules.version)
    if version_key(rules.version) < version_key(FIRST_RELEASE):
        return model  # not in the release's registry (refused as such)
    if extra.refusal is not None:
        where, reason = extra.refusal
        raise InputError(model.source, where or None, reason)
    if extra.indexed and refuses_indexed(rules):
        raise InputError(model.source, "layer_types", indexed_refusal(rules.version))
    return model


def refuses_indexed(rules: VersionRules) -> bool:
    """Whether ``rules``' release refuses a ``layer_types`` naming :data:`INDEXED_TYPE` when the
    config is read: its transformers' ``validate_layer_type`` does not take the name (0.31.0,
    transformers 5.17), where 0.29.0 / 0.30.0 take it (as a dense layer, switch
    ``hy_v4_dense_layers``) and 0.32.0+ as a sparse one (switch ``hy_v4_indexed_layer_type``)."""
    return not rules.hy_v4_dense_layers and not rules.hy_v4_indexed_layer_type


def indexed_refusal(version: str) -> str:
    """vLLM ``version``'s refusal of a ``layer_types`` naming :data:`INDEXED_TYPE` (:func:`refuses_indexed`)."""
    return (
        f"{INDEXED_TYPE}: vLLM {version} refuses the config (StrictDataclassClassValidationError: Class "
        "validation error for validator 'validate_layer_type': ValueError: The `layer_types` entries must be "
        f"in transformers' allowed layer types, which lack {INDEXED_TYPE} on vLLM {version})"
    )


def reading(model: ModelGeometry, version: str) -> ModelGeometry:
    """``model`` as vLLM ``version`` builds it: where it builds every layer dense MLA (switch
    ``hy_v4_dense_layers``: 0.29.0, 0.30.0) its every-layer-dense reading, elsewhere as read (the
    hooks that see the model before :func:`for_release` ask it)."""
    extra = extra_of(model, SparseLayers)
    if extra is not None and extra.dense is not None and rules_for(version).hy_v4_dense_layers:
        return extra.dense
    return model


def _read(f: ConfigFields, architecture: str, sparse_types: frozenset[str]) -> ModelGeometry:
    """:func:`read` with the layers of ``sparse_types`` sparse (none: every layer dense)."""
    n = num_layers(f)
    heads = f.integer("num_attention_heads")
    rope = f.integer("qk_rope_head_dim", minimum=0)
    dims = (f.integer("qk_nope_head_dim", minimum=0), rope, f.integer("v_head_dim"))
    latent = f.integer("kv_lora_rank") + rope
    sparse = sparse_mask(f, n, sparse_types)
    common: dict[str, Any] = {
        "heads": (heads, 1, latent),
        "head_dim_v": 0,
        "mla_dims": dims,
        # the MTP module (HYV4MTPModel under --speculative-config method mtp): counted, not modelled
        "num_mtp_layers": f.integer("num_nextn_predict_layers", minimum=0),
    }
    if not any(sparse):
        return geometry(f, architecture, "hy_v4", sparse_layers((False,) * n)[0], **common)
    if not all(sparse):
        raise InputError(
            f.source,
            f.where("layer_types"),
            "dense MLA layers beside sparse ones (HYV4MLAAttention: each dense layer selects a dense MLA backend, "
            "each sparse one FLASHMLA_SPARSE): not modelled",
        )
    if f.get("q_lora_rank") is None:
        raise InputError(
            f.source,
            f.where("q_lora_rank"),
            "null: the sparse layers' indexer needs q_lora_rank (AssertionError: HYV4 sparse attention requires "
            "q_lora_rank to be set)",
        )
    indexed = tuple(t == "full" for t in indexer_types(f, n))
    kinds, decoder = sparse_layers(indexed)
    return geometry(
        f,
        architecture,
        "hy_v4",
        kinds,
        indexer_head_size=indexer_head_size(f.integer("index_head_dim")),
        index_topk=f.opt_int("index_topk"),
        decoder_layers=decoder,
        family_extra=SparseLayers(sinks=bool(f.get("learnable_sink"))),
        **common,
    )


def sink_backend_refusal(model: ModelGeometry, args: EngineArgs) -> str | None:
    """Why ``HYV4FlashMLASparseBackend`` does not validate for a sparse layer with a sink under
    ``args`` (``HYV4MLAAttention._resolve_sink_backend``), or ``None``: it does."""
    major, minor = args.device.capability
    model_dtype = (
        ("bfloat16" if model.dtype == "float32" else model.dtype)
        if args.dtype == "auto"
        else torch_dtype_of(args.dtype, model.dtype)
    )
    if model_dtype != "bfloat16":
        return f"model dtype {model_dtype} (FLASHMLA_SPARSE serves bfloat16)"
    if major not in SINK_BACKEND_MAJORS:
        return f"compute capability {major}.{minor} (FLASHMLA_SPARSE serves SM 9.x and 10.x)"
    dtype = args.kv_cache_dtype or "auto"
    if dtype not in SINK_BACKEND_KV_DTYPES:
        return f"KV cache dtype {dtype} (FLASHMLA_SPARSE serves {', '.join(sorted(SINK_BACKEND_KV_DTYPES))})"
    if args.block_size is not None and args.block_size % SINK_BACKEND_BLOCK:
        return f"block size {args.block_size} (FLASHMLA_SPARSE's kernel pages are multiples of {SINK_BACKEND_BLOCK})"
    return None


def no_sparse_backend(args: EngineArgs, index_topk: int | None = None) -> str | None:
    """The flag under which ``HYV4MLAAttention``'s probe finds no sparse MLA backend
    (``get_attn_backend(..., use_sparse=True)``, before any backend is bound), or ``None``: a
    ``--attention-backend`` that is not a sparse MLA one; a GPU below SM 9.x; on SM 9.x a block size
    other than a multiple of 64, or a KV cache dtype none of its sparse backends takes
    (:data:`SM90_SPARSE_KV_DTYPES`); on SM 12.x what FLASHINFER_MLA_SPARSE_SM120 refuses: a KV cache
    dtype it does not take, a block size other than a multiple of 64, ``index_topk`` (the config's)
    other than 2048 or FlashInfer missing (``--gpu``)."""
    named = args.attention_backend
    if named is not None and not (named in BACKENDS and BACKENDS[named].is_sparse):
        return "--attention-backend"
    major = args.device.capability[0]
    if major < 9:
        return "--gpu"
    if major == 12:
        sm120 = BACKENDS["FLASHINFER_MLA_SPARSE_SM120"]
        if not sm120.supports_kv_cache_dtype(args.kv_cache_dtype or "auto"):
            return "--kv-cache-dtype"
        if args.block_size is not None and not sm120.supports_block_size(args.block_size):
            return "--block-size"
        if sm120_sparse_reasons(args.flashinfer_cubin, index_topk):
            return "--gpu"
    if major == 9 and args.block_size is not None and args.block_size % SINK_BACKEND_BLOCK:
        return "--block-size"
    if major == 9 and (args.kv_cache_dtype or "auto") not in SM90_SPARSE_KV_DTYPES:
        return "--kv-cache-dtype"
    return None


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """A sparse HY V4 with learned sinks runs its MLA layers on ``FLASHMLA_SPARSE``
    (``HYV4FlashMLASparseBackend``), whatever sparse backend ``--attention-backend`` names: no CUDA
    sparse MLA backend advertises sinks, so the layer's own resolution replaces the selected one.
    Where that backend does not validate (:func:`sink_backend_refusal`) vLLM drops the sinks with
    a warning and keeps its selection, as without sinks: the flags as given; so too where no sparse
    backend serves at all, which :func:`check_backend` refuses when the model is built."""
    model = reading(model, rules_for(args.vllm_version).version)
    extra = extra_of(model, SparseLayers)
    if not model.sparse_mla or extra is None or not extra.sinks:
        return args
    if no_sparse_backend(args, model.attn.index_topk) is not None or sink_backend_refusal(model, args) is not None:
        return args
    return args.evolve(attention_backend=SINK_BACKEND)


def check_backend(model: ModelGeometry, args: EngineArgs) -> None:
    """``HYV4MLAAttention``'s probe of a sparse model (``get_attn_backend(..., use_sparse=True)``,
    while the model is built, before any backend is bound).

    :raises InputError: a plain nvfp4 cache (vLLM refuses it for any MLA model); where no sparse MLA
        backend serves the layers (:func:`no_sparse_backend`), in the probe's words."""
    model = reading(model, rules_for(args.vllm_version).version)
    dtype = args.kv_cache_dtype or "auto"
    if model.use_mla and dtype.startswith("nvfp4") and not dtype.endswith("_ds_mla"):
        # VllmConfig.validate_nvfp4_kv_cache_with_mla (0.32+), a config-stage refusal: no other
        # stage's refusal of these flags comes between (recorded on the tiny config)
        raise InputError(
            "--kv-cache-dtype",
            dtype,
            f"{model.architecture}: ValueError: nvfp4 KV cache is not supported with MLA (Multi-head Latent "
            "Attention) backends.",
        )
    if not model.sparse_mla:
        return
    flag = no_sparse_backend(args, model.attn.index_topk)
    if flag is None:
        return
    value = {
        "--attention-backend": args.attention_backend,
        "--gpu": args.device.name,
        "--block-size": str(args.block_size),
        "--kv-cache-dtype": args.kv_cache_dtype,
    }[flag]
    raise InputError(flag, value, f"{model.architecture}: RuntimeError: {NO_SPARSE_BACKEND}")


def backend_assumption(model: ModelGeometry) -> str | None:
    """``HYV4MLAAttention``: a sparse layer with a learned sink hands itself FLASHMLA_SPARSE."""
    extra = extra_of(model, SparseLayers)
    if not model.sparse_mla or extra is None or not extra.sinks:
        return None
    return (
        "HY V4's sparse layers with learned sinks hand themselves FLASHMLA_SPARSE (HYV4FlashMLASparseBackend), "
        "whatever --attention-backend names"
    )
