"""GLM-5.3-Flash (``Glm5NextForCausalLM``; vLLM 0.33.0's ``vllm/models/glm5next``, config class
transformers' ``Glm5NextTextConfig``, model_type ``glm5_next_text``).

* ``layer_types[i]`` decides each decoder layer (default: every fourth layer, ``i % 4 == 3``, is
  ``indexed_attention``, the others ``linear_attention``): a ``linear_attention`` layer is
  ``Glm5NextLinearAttention`` (``common/kda.py``), a Kimi Delta Attention state at
  ``model.layers.i.self_attn`` (``kda_state_shape`` of ``linear_num_heads`` x ``linear_head_dim``,
  conv kernel ``linear_conv_kernel_dim``); its MambaSpec holds one prefill checkpoint block where
  its prefill backend is FlashKDA (``_resolve_kda_prefill_backend``: SM 9.x / 10.x / 12.x, bfloat16,
  ``linear_head_dim`` 128 and a gate lower bound, ``linear_lower_bound``, default -5).
* an ``indexed_attention`` layer is ``Glm5NextMLAAttention`` (``common/attention.py``): NoPE MLA
  (``kv_lora_rank`` latent values a token, ``qk_rope_head_dim`` 0) at ``model.layers.i.self_attn.attn``
  on a sparse MLA backend, which reads its cache as flat rows (``align_blocks_to_rows``: the block
  stride a multiple of one row), and, with ``index_topk`` set, its indexer's two caches, built first:
  ``.self_attn.indexer.k_cache`` (``Glm5NextIndexerCache``: an ``MLAAttentionSpec`` of one
  ``index_head_dim`` fp8 row plus a 4-byte scale per 128 values for each ``index_kpool`` tokens,
  ``tokens_per_state``; its backend, ``DEEPSEEK_V32_INDEXER`` by name, addresses
  ``index_kpool x 32`` or ``x 64`` token blocks, ``Glm5NextIndexerBackend``) and
  ``.self_attn.indexer.tail_cache`` (``Glm5NextTailCache``: a ``CircularBufferSpec`` of
  ``index_kpool x next_power_of_2(cdiv(index_kpool + num_speculative_tokens, index_kpool))`` tokens,
  two bfloat16 heads of ``index_head_dim``, on ``KPOOL_TAIL``, ``MultipleOf(1)``).
* The block: the smallest every backend addresses (``Platform._preferred_block_size_for_backends``
  over the indexer, the tail and the sparse MLA backends: ``index_kpool x 32`` tokens), then the
  hybrid alignment against the KDA state (the indexer's kernel blocks the alignment), the KDA pages
  padded to the MLA page. The indexer asks for the block-outermost ``BLHNC`` layout, so vLLM 0.33.0
  packs the pages by repeat pattern (:mod:`dryboot.vllm.kv_cache_utils.repeat_packed`): a Mamba
  group per KDA layer (a state bucket may not widen the block), an MLAAttention group of the
  indexer key caches with the MLA rows, a CircularBuffer group of the tail rings; the pool's bytes
  per block the widest group rounded up to the lcm of one MLA row, one tail row and the indexer's
  page at ``index_kpool x 64`` tokens where the block exceeds it.

* The MLA layers' backend by GPU (:func:`handed_backend`): SM 9.x ``FLASHINFER_MLA_SPARSE_SM90`` (one-row
  pages; ``FLASH_ATTN_MLA_SPARSE`` for a float16 model), SM 10.x ``FLASHINFER_MLA_SPARSE`` (32-row pages, an
  ``auto`` cache taken as fp8 by 0.33.0's ``Glm5NextModelConfig``, kept by 0.32.0); SM 8.x and SM 12.x find
  none (vLLM's ValueError).
* Under pipeline parallelism the groups span every stage's layers and each stage's worker sizes its pool from
  its own; a stage without an indexed layer is vLLM's AssertionError (the workers' layouts disagree).

Planned on vLLM 0.32.0 and 0.33.0 (recorded: ``tests/fidelity/data/glm5next/`` and, on 0.33.0, the
architecture's flag sets in ``data/release-architectures/``, its wrapper's too) on tiny stand-in configs:
no published config.json of GLM-5.3-Flash was found.

* vLLM 0.30.0 and 0.31.0 (:data:`ALL_INDEXED_RELEASES`, :func:`for_release`) read the config with their own
  ``Glm5NextTextConfig``, which keeps ``layer_types`` as given (default unset) and builds a KDA layer for a
  ``linear_attention`` entry only: without such an entry every layer is built indexed; each layer's indexer
  key cache, its tail ring (a ``KpoolTailSpec`` sliding window, allocated as full attention: the pages
  cannot be unified) and its MLA rows form one uniform-type group (:func:`grouped_side_caches`). The block:
  the first built backend's, the plain ``DEEPSEEK_V32_INDEXER``'s 64 tokens (0.31.0: the one every backend
  addresses, 64 too). The model stays hybrid, the KDA state sizing the block rounded to ``index_kpool x 32``
  (:func:`indexer_block_alignment`), unless every ``layer_types`` entry is ``full_attention``
  (``ModelConfig.is_hybrid``, :func:`counts_as_attention`): then no alignment, and a block the kpool
  indexer's pages do not tile (64 by default) is vLLM's AssertionError (``Glm5NextIndexerCache``), in its
  words. The kpool must divide the block the layers are built at (16 by default). With ``linear_attention``
  entries the KDA layers are built beside the indexed ones and laid out by those releases' own grouping
  (``_get_kv_cache_groups_glm5_next``, :func:`own_groups`): one group of the key caches and MLA rows, one of
  the tail rings padded to the key cache's page (a larger tail page is vLLM's AssertionError), the KDA states
  dealt round-robin, the pool's bytes per block the first group's pages (planned, no pipeline parallelism).
  Planned on an H200 (recorded on its default GPU only); a config that leaves ``index_kpool`` /
  ``index_head_dim`` to those releases' defaults is refused by name. One that leaves ``index_topk`` to them
  (``None``) is dense MLA there (:func:`_dense`: no indexer, vLLM's dense MLA backend), planned under
  default flags.

Not verified, refused by name: drafting other than n-gram and the hidden-state cache (the MTP module
among them), decode context parallelism, ``--prefix-match-unit``, a named backend other than
``FLASHINFER_MLA_SPARSE_SM90``, a float16 model off SM 9.x, dense MLA (``index_topk`` null).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.backends import DEEPSEEK_V32_INDEXER, FLASHINFER_MLA_SPARSE_SM90, AttentionBackend, KernelBlock
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, GatedDeltaNet, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.config.resolve import model_dtype_of
from dryboot.vllm.distributed import pp_stage_ranges
from dryboot.vllm.dtypes import KVQuantMode
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import AttentionSpec, LayerSpec, MambaSpec
from dryboot.vllm.models.common import geometry, num_layers
from dryboot.vllm.models.deepseek import indexer_head_size
from dryboot.vllm.platforms import cdiv
from dryboot.vllm.versions import VersionRules

LINEAR = "linear_attention"
INDEXED = "indexed_attention"
#: the releases whose engine start verified the KDA + indexed layout (repeat-packed caches)
RELEASES = frozenset({"0.32.0", "0.33.0"})
#: the earlier releases whose registries list it: their config class (vLLM's own
#: ``transformers_utils/configs/glm5_next.py`` ``Glm5NextTextConfig``) keeps ``layer_types`` as given, unset
#: by default, so the model class (``is_kda_layer``: a ``linear_attention`` entry only) builds every layer of
#: a config without such an entry as an indexed one; the KDA state still sizes the hybrid block
#: (``_align_hybrid_block_size``, then the kpool indexer's ``index_kpool x 32`` alignment,
#: ``CudaPlatform._get_indexer_block_alignment``), and the tail rings
#: (``KpoolTailSpec``, a sliding window of ``index_kpool``) cannot be unified with the MLA pages: they are
#: allocated as full attention, every layer in one uniform-type group (recorded:
#: ``data/glm5next/vllm-<release>.json``); other releases lack it (``absent_from_release``)
ALL_INDEXED_RELEASES = frozenset({"0.30.0", "0.31.0"})
#: the keys vLLM 0.30.0 / 0.31.0's config class defaults otherwise than transformers' (``index_topk`` and
#: ``index_head_dim`` ``None``: no indexer; ``index_kpool`` 4): a config that leaves one out is not verified there
ALL_INDEXED_KEYS = ("index_topk", "index_kpool", "index_head_dim")
#: ``index_kpool`` as vLLM 0.30.0 / 0.31.0's config class defaults it
DENSE_DEFAULT_KPOOL = 4
#: the largest ``index_kpool`` whose block alignment (``index_kpool x 32``) divides the 128 tokens a hybrid
#: MLA model's block is aligned to anyway: dense MLA (no ``index_topk``) is modelled up to it
DENSE_KPOOL_MAX = 4
#: the ``layer_types`` entries vLLM 0.31.0's transformers (5.24) takes (``configuration_utils.py``
#: ``ALLOWED_LAYER_TYPES``, checked by ``PreTrainedConfig.validate_layer_type``): ``indexed_attention`` is not one
TRANSFORMERS_LAYER_TYPES = (
    "full_attention",
    "sliding_attention",
    "chunked_attention",
    "window_attention",
    "compressed_sparse_attention",
    "heavily_compressed_attention",
    "minimax_m3_sparse",
    "conv",
    "moe",
    "hybrid",
    "hybrid_sliding",
    "deepseek_sparse_attention",
    "qwen_sparse_attention",
    "linear_attention",
    "sparse",
    "dense",
)
#: the releases whose ``Glm5NextModelConfig`` (``model_executor/models/config.py``) takes an ``auto`` cache
#: as fp8 on SM 10.x (0.32.0 has no such hook: ``auto`` stays the model dtype there; recorded)
AUTO_FP8_RELEASES = frozenset({"0.33.0"})
#: bytes of one indexer scale and the values it scales (``Indexer.quant_block_size``)
SCALE_BYTES = 4
#: pages of DeepGEMM's paged-MQA kernel (states): the indexer backend's kernel blocks are
#: ``index_kpool`` times these (``get_paged_mqa_page_sizes``; 64 alone on SM 12.x)
PAGED_MQA_STATES = (32, 64)
#: the releases whose tail ring is ``index_kpool`` tokens whatever the speculative tokens (0.30.0's
#: ``Glm5NextTailCache.get_kv_cache_spec``; from 0.31.0 :func:`tail_ring`)
FIXED_TAIL_RELEASES = frozenset({"0.30.0"})
#: the tail ring's spec on vLLM 0.30.0 / 0.31.0 beside KDA layers (``KpoolTailSpec``: one block a request)
KPOOL_TAIL_SPEC = "kpool_tail"
#: the KPOOL_TAIL backend (``KpoolTailBackend``: ``MultipleOf(1)``)
KPOOL_TAIL = AttentionBackend("KPOOL_TAIL", (KernelBlock(1, multiple_of=True),), False)
#: the KV cache dtypes an SM 9.x sparse MLA backend takes (``FLASHINFER_MLA_SPARSE_SM90``'s; fp8
#: rows are one byte a value, recorded)
KV_DTYPES = frozenset({"auto", "bfloat16", "fp8", "fp8_e4m3"})
#: the sparse MLA backends' kernel block (``MultipleOf(64)``): a block they take is a multiple of it
SPARSE_KERNEL_BLOCK = 64
#: CUDA's sparse MLA backends (a named one other than FLASHINFER_MLA_SPARSE_SM90 is not verified)
SPARSE_BACKENDS = frozenset(
    {"FLASHINFER_MLA_SPARSE_SM90", "FLASH_ATTN_MLA_SPARSE", "FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE"}
)
#: the speculative methods recorded served (no drafter layers beside the hidden-state cache)
SPECULATIVE = ("extract_hidden_states", "ngram")
#: GPU generations recorded serving it (H100 / H200, B200, B300)
SERVED_CAPABILITIES = frozenset({(9, 0), (10, 0), (10, 3)})


@dataclass(frozen=True)
class Glm5NextCaches(FamilyExtra):
    """What a GLM-5.3-Flash config caches beside its KDA and MLA layers.

    :param kpool: ``index_kpool`` (tokens one indexer key row pools).
    :param index_head_dim: ``index_head_dim`` (the tail ring's heads' width).
    :param index_row: bytes of one indexer key row (fp8 values and their scales).
    :param indexed: the config has ``index_topk`` (the MLA layers build the indexer).
    """

    kpool: int
    index_head_dim: int
    index_row: int
    indexed: bool
    #: the keys of :data:`ALL_INDEXED_KEYS` and ``layer_types`` the file itself sets
    given: frozenset[str] = frozenset()
    #: every layer built as an indexed one (vLLM 0.30.0 / 0.31.0: :func:`for_release`)
    all_indexed: bool = False
    #: ``layer_types`` as the file gives them (empty: unset)
    raw_layer_types: tuple[str, ...] = ()


def defaults(f: ConfigFields) -> dict[str, Any]:
    """``Glm5NextTextConfig``'s cache-relevant defaults (transformers' ``configuration_glm5_next.py``)."""
    return {
        "hidden_size": 4096,
        "num_hidden_layers": 45,
        "num_attention_heads": 64,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 0,
        "qk_nope_head_dim": 256,
        "v_head_dim": 256,
        "max_position_embeddings": 1048576,
        "index_topk": 2048,
        "index_head_dim": 128,
        "linear_head_dim": 128,
        "linear_num_heads": 64,
        "linear_conv_kernel_dim": 4,
        "linear_lower_bound": -5.0,
        "index_kpool": 16,
    }


def _layer_types(f: ConfigFields, n: int) -> list[str]:
    """``Glm5NextTextConfig.layer_types`` (``full_attention`` read as ``indexed_attention``), its
    default every fourth layer indexed.

    :raises InputError: a list shorter than the layers, or a type the model class does not build."""
    types = f.get("layer_types")
    if types is None:
        return [INDEXED if i % 4 == 3 else LINEAR for i in range(n)]
    if not isinstance(types, list) or len(types) < n:
        raise InputError(f.source, f.where("layer_types"), f"a list of at least {n} layer types is needed")
    out = [INDEXED if t == "full_attention" else str(t) for t in types[:n]]
    bad = sorted(set(out) - {LINEAR, INDEXED})
    if bad:
        raise InputError(f.source, f.where("layer_types"), f"{bad}: only {LINEAR} and {INDEXED} layers are built")
    return out


def _linear_attn(f: ConfigFields) -> GatedDeltaNet:
    """The KDA state's parameters (``linear_*``, or a ``linear_attn_config`` object's keys, as
    ``Glm5NextTextConfig.__post_init__`` reads them); a full-rank-gate layer whose FlashKDA prefill
    keeps checkpoints (:func:`~dryboot.vllm.models.kimi_linear.kda_prefill_checkpoint_blocks`)."""
    heads, dim = f.integer("linear_num_heads"), f.integer("linear_head_dim")
    conv = f.integer("linear_conv_kernel_dim")
    bound = f.get("linear_lower_bound")
    sub = f.get("linear_attn_config")
    if isinstance(sub, dict):
        heads = int(sub.get("num_heads", heads))
        dim = int(sub.get("head_dim", dim))
        conv = int(sub.get("short_conv_kernel_size", conv))
        bound = sub.get("gate_lower_bound", bound)
        if sub.get("safe_gate", True) and bound is None:
            bound = -5.0
    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, (int, float))):
        raise InputError(f.source, f.where("linear_lower_bound"), f"must be a number or null, got {bound!r}")
    return GatedDeltaNet(heads, heads, dim, dim, conv, True, None if bound is None else float(bound))


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """:raises InputError: what vLLM or its config class refuses (named), or what is not planned
    (a quantized checkpoint, a vision tower on the text model, no indexed layer, RoPE rows)."""
    n = num_layers(f)
    if f.get("quantization_config") is not None:
        raise InputError(
            f.source, f.where("quantization_config"), f"a quantized {architecture} checkpoint is not verified"
        )
    if f.get("vision_config") is not None:
        raise InputError(
            f.source,
            f.where("vision_config"),
            f"{architecture}'s vision tower is not modelled (planned: the text model)",
        )
    types = _layer_types(f, n)
    if INDEXED not in types:
        raise InputError(
            f.source, f.where("layer_types"), "no indexed_attention (MLA) layer: the KDA layers alone are not verified"
        )
    heads = f.integer("num_attention_heads")
    kv_heads = f.opt_int("num_key_value_heads")
    if kv_heads is not None and kv_heads != heads:
        raise InputError(
            f.source,
            f.where("num_key_value_heads"),
            f"ValueError: num_attention_heads ({heads}) must be the same as num_key_value_heads ({kv_heads}) "
            "(Glm5NextTextConfig.validate_architecture)",
        )
    rope = f.integer("qk_rope_head_dim", minimum=0)
    if rope:
        raise InputError(
            f.source,
            f.where("qk_rope_head_dim"),
            f"ValueError: Expecting NoPE for the DSA attention layers, but got {rope} as RoPE dim. "
            "(Glm5NextTextConfig.validate_architecture)",
        )
    if f.get("q_lora_rank") is None:
        raise InputError(
            f.source,
            f.where("q_lora_rank"),
            "ValueError: For DSA usage in the attention layers, the `q_lora_rank` is strictly required!",
        )
    kpool = f.integer("index_kpool", minimum=0)
    indexed = f.get("index_topk") is not None
    if not indexed:
        raise InputError(
            f.source,
            f.where("index_topk"),
            "null: dense MLA layers without the kpool indexer are not verified against vLLM 0.33.0",
        )
    topk = f.integer("index_topk")
    if kpool < 2 or topk % kpool:
        raise InputError(
            f.source,
            f.where("index_kpool"),
            f"{kpool}: the indexer caches assert index_kpool > 1 and index_topk ({topk}) must be divisible by it",
        )
    if f.get("index_kpool_always_select_tail") is False:
        raise InputError(
            f.source,
            f.where("index_kpool_always_select_tail"),
            "ValueError: GLM-5.3 sparse indexer requires index_kpool_always_select_tail=True",
        )
    index_dim = f.integer("index_head_dim")
    given = frozenset(k for k in (*ALL_INDEXED_KEYS, "layer_types") if f.given(k))
    raw = f.data.get("layer_types")
    raw_types = tuple(str(t) for t in raw) if isinstance(raw, list) else ()
    caches = Glm5NextCaches(kpool, index_dim, indexer_head_size(index_dim), indexed, given, raw_layer_types=raw_types)
    kinds = tuple(LayerKind.KDA if t == LINEAR else LayerKind.MLA for t in types)
    names = tuple(f"model.layers.{i}.self_attn" + ("" if t == LINEAR else ".attn") for i, t in enumerate(types))
    return geometry(
        f,
        architecture,
        "glm5next",
        kinds,
        heads=(heads, 1, f.integer("kv_lora_rank")),
        head_dim_v=0,
        mla_dims=(f.integer("qk_nope_head_dim", minimum=0), 0, f.integer("v_head_dim")),
        mla_config=True,
        indexer_head_size=caches.index_row,
        kda=_linear_attn(f),
        hybrid_class=True,
        # Glm5NextForCausalLM is no SupportsMambaPrefixCaching (0.30.0-0.33.0): --mamba-cache-mode all falls
        # back to align (recorded on 0.30.0 / 0.31.0; 0.32+'s parser refuses 'all')
        mamba_prefix_caching=False,
        layer_names=names,
        family_extra=caches,
    )


def _caches(model: ModelGeometry) -> Glm5NextCaches:
    caches = extra_of(model, Glm5NextCaches)
    if caches is None:
        raise InputError("--model", model.source, f"{model.architecture}: no GLM-5.3-Flash caches to plan")
    return caches


def for_release(model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
    """``model`` as vLLM 0.30.0 / 0.31.0 build it (:data:`ALL_INDEXED_RELEASES`): a KDA layer for each
    ``layer_types`` entry ``linear_attention`` (none without ``layer_types``), every other decoder layer an
    indexed one (``model.layers.i.self_attn.attn``, its indexer's caches beside it: :func:`grouped_side_caches`,
    or :func:`own_groups` beside KDA layers), the KDA state also sizing the hybrid block (float32:
    :func:`_float32_state`); every entry ``full_attention`` is no hybrid (:func:`counts_as_attention`). As
    read on the later releases.

    :raises InputError: on those releases, a ``layer_types`` entry transformers refuses (0.31.0:
        ``validate_layer_type`` refuses ``indexed_attention``, recorded), a key of :data:`ALL_INDEXED_KEYS`
        left to the release's defaults, an ``index_kpool`` not a power of two (not verified)."""
    caches = _caches(model)
    if rules.version not in ALL_INDEXED_RELEASES:
        return model
    arch, version = model.architecture, rules.version
    bad = [t for t in caches.raw_layer_types if t not in TRANSFORMERS_LAYER_TYPES]
    if version == "0.31.0" and bad:
        raise InputError(
            model.source,
            "layer_types",
            f"{arch}: StrictDataclassClassValidationError: Class validation error for validator "
            f"'validate_layer_type': ValueError: The `layer_types` entries must be in {TRANSFORMERS_LAYER_TYPES} "
            f"({bad[0]!r}: transformers' PreTrainedConfig under vLLM 0.31.0)",
        )
    missing = [k for k in ALL_INDEXED_KEYS if k not in caches.given]
    n = len(model.layer_kinds)
    if "index_topk" in missing:
        return _dense(model, caches, version)
    if missing:
        raise InputError(
            model.source,
            missing[0],
            f"{arch} on vLLM {version}: left to that release's config class defaults ({', '.join(missing)}: "
            "index_topk and index_head_dim None, index_kpool 4, not transformers'), which are not verified",
        )
    kpool = caches.kpool
    if kpool & (kpool - 1):
        raise InputError(
            model.source,
            "index_kpool",
            f"{arch} on vLLM {version}: index_kpool {kpool} (not a power of two) is not verified there",
        )
    raw = caches.raw_layer_types
    kinds = tuple(LayerKind.KDA if i < len(raw) and raw[i] == LINEAR else LayerKind.MLA for i in range(n))
    return model.evolve(
        layer_kinds=kinds,
        layer_names=tuple(
            f"model.layers.{i}.self_attn" + ("" if k is LayerKind.KDA else ".attn") for i, k in enumerate(kinds)
        ),
        family_extra=replace(caches, all_indexed=True),
        hf_layer_types=counts_as_attention(raw),
        kda=_float32_state(model),
    )


def _float32_state(model: ModelGeometry) -> GatedDeltaNet | None:
    """The KDA state as vLLM 0.30.0 / 0.31.0's model class sizes it: ``get_mamba_state_dtype_from_config``
    passes ``kda_state_dtype`` the conv dtype alone, so the recurrent state is float32 whatever
    ``--mamba-ssm-cache-dtype`` (recorded: ``glm5-flash8-ssmbf16``, a 1,536-token block, not 1,024)."""
    kda = model.mamba.kda
    return None if kda is None else replace(kda, ssm_dtype_flag=False)


def counts_as_attention(layer_types: tuple[str, ...]) -> bool:
    """vLLM 0.30.0 / 0.31.0's config class keeps ``layer_types`` as given, and ``ModelConfig.is_hybrid``
    (``config/model.py``) counts a list whose every entry is ``"attention"`` or ``"full_attention"`` as no
    hybrid: no mamba cache mode, no hybrid block alignment (the indexer backend's block stays). Such a list
    is kept as the model's ``layer_types`` (``hf_layer_types``, read by
    :func:`dryboot.vllm.config.resolve.is_hybrid` over the layers, all MLA here); another (an
    ``indexed_attention`` entry, or none given) keeps the class's ``IsHybrid``."""
    return bool(layer_types) and all(t in ("attention", "full_attention") for t in layer_types)


def _dense(model: ModelGeometry, caches: Glm5NextCaches, version: str) -> ModelGeometry:
    """vLLM 0.30.0 / 0.31.0's reading of a config without ``index_topk``: their config class leaves it
    ``None`` (``is_v32`` false), so every layer is dense MLA (``model.layers.i.self_attn.attn``, no indexer,
    no tail ring: the dense MLA backend vLLM selects), its ``index_kpool`` (default 4) still rounding the
    hybrid block to ``index_kpool x 32`` (``CudaPlatform._get_indexer_block_alignment``), which the MLA
    models' 128-token alignment already covers up to a kpool of :data:`DENSE_KPOOL_MAX`.

    :raises InputError: a larger ``index_kpool`` (not verified)."""
    kpool = caches.kpool if "index_kpool" in caches.given else DENSE_DEFAULT_KPOOL
    if kpool > DENSE_KPOOL_MAX:
        raise InputError(
            model.source,
            "index_kpool",
            f"{model.architecture} on vLLM {version}: dense MLA (index_topk left to that release's default, None) "
            f"with index_kpool {kpool} is not verified (its block alignment beyond 128 tokens)",
        )
    n = len(model.layer_kinds)
    return model.evolve(
        layer_kinds=(LayerKind.MLA,) * n,
        layer_names=tuple(f"model.layers.{i}.self_attn.attn" for i in range(n)),
        indexer_head_size=None,
        family_extra=replace(caches, kpool=kpool, indexed=False, all_indexed=True),
        kda=_float32_state(model),
    )


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """The flags as GLM-5.3-Flash's config hook leaves them (``Glm5NextModelConfig``, 0.33.0: an ``auto`` KV
    cache is fp8 on SM 10.x, its sparse indexer being set; 0.30.0-0.32.0 keep ``auto``).

    :raises InputError: on vLLM 0.30.0 / 0.31.0, a block the kpool indexer's cache refuses while the
        model is built (``Glm5NextIndexerCache``: ``--block-size``, or the default 16 tokens, a multiple
        of ``index_kpool``; vLLM's AssertionError, recorded)."""
    version = args.vllm_version
    caches = extra_of(model, Glm5NextCaches)
    if version in ALL_INDEXED_RELEASES and caches is not None and caches.indexed:
        built = args.block_size or 16  # CacheConfig's default block while the layers are built
        if built % caches.kpool:
            raise InputError(
                "--block-size",
                str(built),
                f"{model.architecture}: AssertionError: Glm5NextIndexerCache: cache_config.block_size ({built}) "
                f"must be a multiple of index_kpool ({caches.kpool}) so chunked-prefill boundaries stay "
                "pool-aligned.",
            )
    auto = (args.kv_cache_dtype or "auto") == "auto"
    if version in AUTO_FP8_RELEASES and args.device.capability[0] == 10 and auto:
        # Glm5NextModelConfig.verify_and_update_config: "Using fp8 KV cache for GLM-5.3-Flash" on SM 10.x
        return replace(args, kv_cache_dtype="fp8")
    return args


def _no_backend(arch: str, what: str) -> str:
    return (
        f"{arch}: ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=512, "
        f"{what}, use_mla=True, ... use_sparse=True ...) (no SM 9.x sparse MLA backend takes it)"
    )


def verify_layers(model: ModelGeometry, args: EngineArgs) -> None:
    """What was not verified of the layers as vLLM builds them.

    :raises InputError: a speculative method other than ``extract_hidden_states`` / ``ngram``,
        decode context parallelism, ``--prefix-match-unit`` (not verified)."""
    arch, version = model.architecture, args.vllm_version
    method = args.speculative_method
    for flag, value, bad in (
        ("--speculative-config", str(method), method not in (None, *SPECULATIVE)),
        (
            "--decode-context-parallel-size",
            str(args.decode_context_parallel_size),
            args.decode_context_parallel_size > 1,
        ),
        ("--prefix-match-unit", str(args.prefix_match_unit), args.prefix_match_unit is not None),
    ):
        if bad:
            raise InputError(
                flag,
                value,
                f"{arch}: its caches under this flag are not verified against vLLM {version} (not modelled)",
            )


def check_pipeline(model: ModelGeometry, args: EngineArgs) -> None:
    """The pipeline stages' KV cache layouts (the engine's check once every worker is built).

    :raises InputError: stages of which some hold an MLA layer and some none (vLLM's
        AssertionError: their workers report different KV cache layouts)."""
    arch = model.architecture
    pp = args.pipeline_parallel_size
    if pp > 1:
        ranges = pp_stage_ranges(len(model.layer_kinds), pp, args.pp_layer_partition)
        mla = [any(model.layer_kinds[i] is LayerKind.MLA for i in r) for r in ranges]
        if any(mla) and not all(mla):
            raise InputError(
                "--pipeline-parallel-size",
                str(pp),
                f"{arch}: stage(s) {[s for s, m in enumerate(mla) if not m]} hold no indexed_attention layer, the "
                "others do: AssertionError: Workers disagree on supported KV cache layouts (the indexer takes the "
                "block-outermost BLHNC layout only)",
            )


def check_backend(model: ModelGeometry, args: EngineArgs) -> None:
    """The MLA layers' backend selection on the GPU planned, before the handed
    :data:`FLASHINFER_MLA_SPARSE_SM90`.

    :raises InputError: a GPU generation other than SM 9.x (not verified); a KV cache dtype or a
        block no SM 9.x sparse MLA backend takes, or a named backend that is not a sparse MLA one
        (vLLM's ValueError, in its words); a float16 model, another named sparse backend (not
        verified)."""
    arch = model.architecture
    capability = tuple(args.device.capability)
    dtype = args.kv_cache_dtype or "auto"
    if is_dense(model):
        _check_dense(model, args)
        return
    if dtype.startswith("nvfp4") and not dtype.endswith("_ds_mla"):
        # VllmConfig.validate_nvfp4_kv_cache_with_mla, a config-stage refusal (recorded)
        raise InputError(
            "--kv-cache-dtype",
            dtype,
            f"{arch}: ValueError: nvfp4 KV cache is not supported with MLA (Multi-head Latent Attention) backends.",
        )
    if capability[0] < 9 or (capability[0] == 12 and dtype in ("auto", "bfloat16")):
        # recorded: an A100 (no sparse MLA backend below SM 9.0); an RTX 5090 (FLASHINFER_MLA_SPARSE_SM120
        # refuses the 512-wide NoPE latent)
        raise InputError("--gpu", args.device.name, _no_backend(arch, f"kv_cache_dtype={dtype}"))
    if args.vllm_version in ALL_INDEXED_RELEASES and capability[0] != 9:
        raise InputError(
            "--gpu",
            args.device.name,
            f"{arch} on vLLM {args.vllm_version} off SM 9.x is not modelled: its every-layer-indexed layout was "
            "recorded on an H200 alone",
        )
    if capability not in SERVED_CAPABILITIES:
        raise InputError(
            "--gpu",
            args.device.name,
            f"{arch} on SM {capability[0]}.{capability[1]} is not modelled: its sparse MLA backend, the indexer's "
            "kernel blocks and the FlashKDA checkpoints there were not verified (recorded: SM 9.0, 10.0, 10.3)",
        )
    named = args.attention_backend
    if named is not None and named != FLASHINFER_MLA_SPARSE_SM90.name:
        if named not in SPARSE_BACKENDS:
            raise InputError(
                "--attention-backend",
                named,
                f"{arch}: ValueError: Selected backend AttentionBackendEnum.{named} is not valid for this "
                "configuration (its MLA layers are sparse: MLA sparse backends only)",
            )
        raise InputError(
            "--attention-backend", named, f"{arch}: its MLA layers on {named} are not verified (not modelled)"
        )
    if dtype not in KV_DTYPES:
        raise InputError("--kv-cache-dtype", dtype, _no_backend(arch, f"kv_cache_dtype={dtype}"))
    block = args.block_size
    if block is not None and block % SPARSE_KERNEL_BLOCK:
        raise InputError("--block-size", str(block), _no_backend(arch, f"block_size={block}"))
    model_dtype = model_dtype_of(model, args)
    if model_dtype == "float16" and capability[0] == 9 and dtype not in SIXTEEN_BIT_KV:
        # FLASHINFER_MLA_SPARSE_SM90 takes bfloat16 models only, FLASH_ATTN_MLA_SPARSE 16-bit caches only
        raise InputError("--kv-cache-dtype", dtype, _no_backend(arch, f"dtype=torch.float16, kv_cache_dtype={dtype}"))
    if model_dtype != "bfloat16" and not (model_dtype == "float16" and capability[0] == 9):
        raise InputError(
            "--dtype",
            model_dtype,
            f"{arch}: a {model_dtype} model on SM {capability[0]}.{capability[1]} is not verified (not modelled)",
        )


def is_dense(model: ModelGeometry) -> bool:
    """Every layer dense MLA, no indexer (vLLM 0.30.0 / 0.31.0 on a config without ``index_topk``: :func:`_dense`)."""
    caches = extra_of(model, Glm5NextCaches)
    return caches is not None and not caches.indexed


def _check_dense(model: ModelGeometry, args: EngineArgs) -> None:
    """The flags dense MLA was recorded under on vLLM 0.30.0 / 0.31.0: an H200 (SM 9.x), a bfloat16 model and
    cache, vLLM's own backend and block (recorded at TP 1 and 4).

    :raises InputError: anything else (not verified)."""
    arch, version = model.architecture, args.vllm_version
    capability = tuple(args.device.capability)
    for flag, value, bad in (
        ("--gpu", args.device.name, capability[0] != 9),
        ("--kv-cache-dtype", str(args.kv_cache_dtype), (args.kv_cache_dtype or "auto") not in ("auto", "bfloat16")),
        ("--dtype", model_dtype_of(model, args), model_dtype_of(model, args) != "bfloat16"),
        ("--attention-backend", str(args.attention_backend), args.attention_backend is not None),
        ("--block-size", str(args.block_size), args.block_size is not None),
        ("--speculative-config", str(args.speculative_method), args.speculative_method is not None),
    ):
        if bad:
            raise InputError(
                flag,
                value,
                f"{arch} on vLLM {version} as dense MLA (index_topk left to that release's default, None): this "
                "flag is not verified there (recorded: an H200, bfloat16, vLLM's own backend and block)",
            )


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """The heads against TP: the KDA layers assert ``linear_num_heads % tp == 0``, the MLA layers
    split ``num_attention_heads``.

    :raises InputError: naming the field."""
    tp = tensor_parallel_size
    kda = model.mamba.kda
    for field, heads in (
        ("linear_num_heads", kda.num_k_heads if kda is not None else 0),
        ("num_attention_heads", model.num_attention_heads),
    ):
        if heads % tp:
            raise InputError(
                model.source,
                field,
                f"{heads} at tensor parallel size {tp}: AssertionError ({heads} heads do not split over {tp} ranks)",
            )


def indexer_backend(model: ModelGeometry, capability_major: int) -> AttentionBackend:
    """The indexer key cache's backend (``Glm5NextIndexerBackend``, named ``DEEPSEEK_V32_INDEXER``):
    kernel blocks of ``index_kpool`` x DeepGEMM's paged-MQA pages (32 or 64 states; 64 alone on SM 12.x)."""
    kpool = _caches(model).kpool
    states = PAGED_MQA_STATES[1:] if capability_major == 12 else PAGED_MQA_STATES
    return AttentionBackend("DEEPSEEK_V32_INDEXER", tuple(KernelBlock(kpool * s) for s in states), True, is_mla=True)


#: the KV cache dtypes FLASH_ATTN_MLA_SPARSE takes
SIXTEEN_BIT_KV = frozenset({"auto", "float16", "bfloat16"})
#: the sparse MLA backend vLLM 0.33.0 falls back to on SM 9.x for a float16 model
#: (``flashattn_mla_sparse.py`` ``FlashAttnMLASparseBackend``: float16 / bfloat16 models, 16-bit caches,
#: ``MultipleOf(64)`` kernel blocks, rows read flat)
FLASH_ATTN_MLA_SPARSE = AttentionBackend(
    "FLASH_ATTN_MLA_SPARSE",
    (KernelBlock(64, multiple_of=True),),
    True,
    is_mla=True,
    kv_cache_dtypes=frozenset(SIXTEEN_BIT_KV),
    is_sparse=True,
    model_dtypes=frozenset({"float16", "bfloat16"}),
)
#: the sparse MLA backend vLLM 0.33.0 picks on SM 10.x (``flashinfer_mla_sparse.py``
#: ``FlashInferMLASparseTRTLLMBackend``: ``MultipleOf(32)`` kernel blocks, its rows read as 32-row pages)
FLASHINFER_MLA_SPARSE = AttentionBackend(
    "FLASHINFER_MLA_SPARSE",
    (KernelBlock(32, multiple_of=True),),
    True,
    is_mla=True,
    kv_cache_dtypes=frozenset({"auto", "float16", "bfloat16", "fp8", "fp8_e4m3"}),
    is_sparse=True,
    head_sizes=frozenset({512, 576}),
)
#: rows a sparse MLA backend reads its cache as, a page (``align_blocks_to_rows``), by GPU generation
ROWS_A_PAGE = {9: 1, 10: 32}


def handed_backend(model: ModelGeometry, args: EngineArgs, requested: str | None) -> AttentionBackend | None:
    """The MLA layers' sparse backend on the GPU planned (vLLM 0.33.0's CUDA priorities for a
    512-wide NoPE latent): SM 9.x ``FLASHINFER_MLA_SPARSE_SM90`` (``FLASH_ATTN_MLA_SPARSE`` for a float16
    model), SM 10.x ``FLASHINFER_MLA_SPARSE``;
    ``None`` elsewhere (:func:`check_backend` refuses those GPUs first) and for dense MLA (:func:`is_dense`:
    vLLM's own dense MLA selection)."""
    if is_dense(model):
        return None
    major = args.device.capability[0]
    if major == 9 and model_dtype_of(model, args) == "float16":
        return FLASH_ATTN_MLA_SPARSE  # FLASHINFER_MLA_SPARSE_SM90 takes bfloat16 models only
    return {9: FLASHINFER_MLA_SPARSE_SM90, 10: FLASHINFER_MLA_SPARSE}.get(major)


def handed_on_every_gpu(model: ModelGeometry) -> bool:
    """The handed backend is chosen per GPU generation (recorded on SM 9.0, 10.0 and 10.3)."""
    return True


def backend_assumption(model: ModelGeometry) -> str | None:
    """What the plan assumes of the MLA layers' backend (``None``: dense MLA, vLLM's selection)."""
    if is_dense(model):
        return None
    return (
        "vLLM 0.33.0's first sparse MLA backend for a 512-wide NoPE latent: FLASHINFER_MLA_SPARSE_SM90 on SM 9.x "
        "(FlashInfer >= 0.6.18, as the CUDA wheel ships; FLASH_ATTN_MLA_SPARSE for a float16 model), "
        "FLASHINFER_MLA_SPARSE on SM 10.x"
    )


def block_backends(model: ModelGeometry, args: EngineArgs, backend: AttentionBackend) -> list[AttentionBackend]:
    """The attention backends the block is chosen over, in the order their layers are built
    (``Platform._find_non_ssm_backends``): the indexer key cache's, the tail ring's, the MLA
    layers' ``backend``; none for dense MLA (:func:`is_dense`: the planner's own choice over ``backend``).
    On vLLM 0.30.0 / 0.31.0 (every layer indexed) the key cache's backend is the plain
    ``DeepseekV32IndexerBackend`` (``v1/attention/backends/mla/indexer.py``: 64-token kernel blocks on CUDA,
    whatever ``index_kpool``), so the block it prefers is 64; the kpool's own alignment applies to a hybrid
    block alone (:func:`indexer_block_alignment`)."""
    if is_dense(model):
        return []
    if _caches(model).all_indexed:
        return [DEEPSEEK_V32_INDEXER, KPOOL_TAIL, backend]
    return [indexer_backend(model, args.device.capability[0]), KPOOL_TAIL, backend]


def indexer_block_alignment(model: ModelGeometry, args: EngineArgs) -> int | None:
    """What vLLM 0.30.0 / 0.31.0 round a hybrid block up to beyond the backends' alignment, in mamba cache
    mode ``none`` / ``align`` (``CudaPlatform._get_indexer_block_alignment``, read from the config's
    ``index_kpool``, ``index_topk`` or not): ``index_kpool`` x DeepGEMM's smallest paged-MQA page (32; the
    largest, 64, on SM 12.x); ``None`` on the later releases, whose kpool indexer backend's kernel blocks
    carry it (:func:`indexer_backend`), and for a kpool of 1 or none."""
    caches = extra_of(model, Glm5NextCaches)
    if args.vllm_version not in ALL_INDEXED_RELEASES or caches is None or caches.kpool <= 1:
        return None
    page = PAGED_MQA_STATES[1] if args.device.capability[0] == 12 else PAGED_MQA_STATES[0]
    return caches.kpool * page


def kv_cache_layout(model: ModelGeometry) -> str:
    """The indexer's block-outermost layout: the pages are packed by repeat pattern (vLLM 0.32.0,
    0.33.0); vLLM's KV cache groups where every layer is built indexed (0.30.0, 0.31.0); their own
    GLM-5.3-Flash grouping beside KDA layers there (:func:`own_groups`, sized as a packed pool)."""
    if not _caches(model).all_indexed or _kda_beside(model):
        return "repeat-packed"
    return "grouped"


def _kda_beside(model: ModelGeometry) -> bool:
    """KDA layers beside the indexed ones, as vLLM 0.30.0 / 0.31.0 build a ``layer_types`` with
    ``linear_attention`` entries."""
    return _caches(model).all_indexed and LayerKind.KDA in model.layer_kinds


def grouped_side_caches(
    model: ModelGeometry, args: EngineArgs, layers: list[tuple[str, LayerSpec]]
) -> dict[str, LayerSpec]:
    """vLLM 0.30.0 / 0.31.0's cache layers (every layer indexed), in ``static_forward_context``'s order:
    each MLA layer's ``.self_attn.indexer.k_cache`` (an ``MLAAttentionSpec`` of one ``index_row``-byte
    row a ``index_kpool`` tokens, ``tokens_per_state``) and ``.self_attn.indexer.tail_cache`` (a
    ``KpoolTailSpec``: a sliding window of its ring's tokens, :func:`_ring`, blocks of two bfloat16 heads of
    ``index_head_dim``) before its ``.self_attn.attn``; other models' layers as given.

    :raises InputError: a block the indexer cache or the tail ring refuses (not a multiple of
        ``index_kpool x 32``, or of the ring: vLLM's AssertionErrors, in its words)."""
    caches = extra_of(model, Glm5NextCaches)
    if caches is None or not caches.all_indexed or not caches.indexed or _kda_beside(model):
        return dict(layers)
    kpool = caches.kpool
    out: dict[str, LayerSpec] = {}
    for name, spec in layers:
        if isinstance(spec, AttentionSpec) and name.endswith(".self_attn.attn"):
            block = spec.block_size
            if block % (kpool * 32):
                raise InputError("--block-size", str(block), _kpool_assertion(model.architecture, kpool, block))
            prefix = name[: -len("attn")] + "indexer."
            out[prefix + "k_cache"] = replace(
                _indexer_spec(caches, block, 1), layer_kind=LayerKind.MLA_INDEXER, block_stride_alignment=None
            )
            ring = _ring(caches, args, block, model.architecture)
            out[prefix + "tail_cache"] = replace(
                _tail_spec(caches, ring), layer_kind=LayerKind.SLIDING, sliding_window=ring, spec_name=None
            )
        out[name] = spec
    return out


def _ring(caches: Glm5NextCaches, args: EngineArgs, block: int, arch: str) -> int:
    """Tokens of one tail ring on vLLM 0.30.0 / 0.31.0: ``index_kpool`` on :data:`FIXED_TAIL_RELEASES`, else
    :func:`tail_ring` (recorded: 0.31.0 with 3 n-gram tokens, a 32-token ring), which must divide ``block``.

    :raises InputError: a ring that does not divide the block (0.31.0's AssertionError, in its words)."""
    if args.vllm_version in FIXED_TAIL_RELEASES:
        return caches.kpool
    ring = tail_ring(caches.kpool, args.num_speculative_tokens)
    if block % ring:
        raise InputError(
            "--block-size",
            str(block),
            f"{arch}: AssertionError: Glm5NextTailCache: cache_config.block_size ({block}) must be a multiple of "
            f"the tail ring ({ring})",
        )
    return ring


def tail_ring(kpool: int, num_speculative_tokens: int) -> int:
    """Tokens of one tail ring (``Glm5NextTailCache.get_kv_cache_spec``):
    ``kpool x next_power_of_2(cdiv(kpool + num_speculative_tokens, kpool))``."""
    pools = cdiv(kpool + num_speculative_tokens, kpool)
    return kpool * (1 << (pools - 1).bit_length())


def side_cache_specs(
    model: ModelGeometry,
    args: EngineArgs,
    rules: VersionRules,
    model_dtype: str,
    layers: list[tuple[str, LayerSpec]],
) -> dict[str, LayerSpec]:
    """Every cache layer in vLLM's order (``static_forward_context``): each MLA layer's
    ``<layer>.self_attn.indexer.k_cache`` and ``.tail_cache`` before its ``.self_attn.attn`` (the
    MLA rows, as ``layers`` has them, their block stride aligned to one row); the KDA states as the
    hybrid alignment laid them out.

    :raises InputError: a block the tail ring does not divide (vLLM's AssertionError); the pipeline
        splits :func:`check_pipeline` refuses."""
    check_pipeline(model, args)
    caches = _caches(model)
    if caches.all_indexed:
        return _own_grouping_specs(model, args, caches, layers)
    ring = tail_ring(caches.kpool, args.num_speculative_tokens)
    out: dict[str, LayerSpec] = {}
    for name, spec in layers:
        if isinstance(spec, AttentionSpec) and name.endswith(".self_attn.attn"):
            block = spec.block_size
            if block % ring:
                raise InputError(
                    "--block-size",
                    str(block),
                    f"{model.architecture}: AssertionError: Glm5NextTailCache: cache_config.block_size ({block}) "
                    f"must be a multiple of the tail ring ({ring})",
                )
            prefix = name[: -len("attn")] + "indexer."
            out[prefix + "k_cache"] = _indexer_spec(caches, block, max(kb.size for kb in _kernel_blocks(model, args)))
            out[prefix + "tail_cache"] = _tail_spec(caches, ring)
            # align_blocks_to_rows: a page of the sparse backend's rows (one on SM 9.x, 32 on SM 10.x)
            spec = replace(spec, block_stride_alignment=ROWS_A_PAGE.get(args.device.capability[0], 1))
        out[name] = spec
    return out


def _own_grouping_specs(
    model: ModelGeometry, args: EngineArgs, caches: Glm5NextCaches, layers: list[tuple[str, LayerSpec]]
) -> dict[str, LayerSpec]:
    """vLLM 0.30.0 / 0.31.0's cache layers of KDA layers beside indexed ones, in ``static_forward_context``'s
    order: each KDA layer's state as the hybrid alignment padded it, without a prefill checkpoint page
    (``Glm5NextLinearAttention`` keeps ``MambaBase``'s spec there); before each ``.self_attn.attn`` (the MLA
    rows) its ``.self_attn.indexer.k_cache`` (``tokens_per_state``: one ``index_row``-byte row a kpool) and its
    ``.self_attn.indexer.tail_cache`` (``KpoolTailSpec``: its ring's tokens, :func:`_ring`, of two bfloat16
    heads, one block a request), the tail padded to the key cache's page (``_get_kv_cache_groups_glm5_next``).

    :raises InputError: a block the kpool indexer's pages do not tile, or a tail page larger than the key
        cache's page (vLLM's AssertionErrors, recorded)."""
    arch = model.architecture
    kpool = caches.kpool
    _check_drafter_layers(model, caches, layers)
    out: dict[str, LayerSpec] = {}
    for name, spec in layers:
        if isinstance(spec, MambaSpec):
            spec = replace(spec, num_prefill_checkpoint_blocks=0)
        elif isinstance(spec, AttentionSpec) and name.endswith(".self_attn.attn"):
            block = spec.block_size
            if block % (kpool * 32):
                raise InputError("--block-size", str(block), _kpool_assertion(arch, kpool, block))
            index = replace(
                _indexer_spec(caches, block, 1), layer_kind=LayerKind.MLA_INDEXER, block_stride_alignment=None
            )
            ring = _ring(caches, args, block, arch)
            tail = replace(_tail_spec(caches, ring), spec_name=KPOOL_TAIL_SPEC, block_stride_alignment=None)
            if tail.page_size_bytes > index.page_size_bytes:
                raise InputError(
                    "--block-size",
                    str(block),
                    f"{arch}: AssertionError (KVCacheSpec.page_size_bytes: assert self.page_size_padded >= "
                    f"self.unpadded_page_size_bytes): the tail ring's {tail.page_size_bytes:,}-byte page is padded "
                    f"to the indexer key cache's {index.page_size_bytes:,} bytes at {block} tokens "
                    "(_get_kv_cache_groups_glm5_next; the pool's bytes per block fail)",
                )
            prefix = name[: -len("attn")] + "indexer."
            out[prefix + "k_cache"] = index
            out[prefix + "tail_cache"] = tail.with_padded_page(index.page_size_bytes)
        out[name] = spec
    return out


def _check_drafter_layers(model: ModelGeometry, caches: Glm5NextCaches, layers: list[tuple[str, LayerSpec]]) -> None:
    """A drafter's hidden-state cache beside KDA and indexed layers on vLLM 0.30.0 / 0.31.0: not an
    ``MLAAttentionSpec``, so ``_get_kv_cache_groups_glm5_next`` declines and vLLM unifies the pages
    (``unify_kv_cache_spec_page_size``), where the first indexer key cache whose page does not divide the
    largest page fails (recorded: ``hyb-glm5-linfull-hidden``).

    :raises InputError: vLLM's NotImplementedError, in its words; a key cache page that divides it (not
        verified)."""
    if not any(isinstance(s, AttentionSpec) and s.layer_kind is LayerKind.HIDDEN_STATE for _, s in layers):
        return
    largest = max(s.page_size_bytes for _, s in layers)
    for name, spec in layers:
        if isinstance(spec, AttentionSpec) and name.endswith(".self_attn.attn"):
            key_cache = _indexer_spec(caches, spec.block_size, 1)
            key_name = name[: -len("attn")] + "indexer.k_cache"
            if largest % key_cache.page_size_bytes:
                raise InputError(
                    "--speculative-config",
                    "extract_hidden_states",
                    f"{model.architecture}: NotImplementedError: Layer {key_name}: page size is not divisible by the "
                    "maximum page size and cannot be padded. Padding is only supported for non-MLA attention layers.",
                )
    raise InputError(
        "--speculative-config",
        "extract_hidden_states",
        f"{model.architecture}: a hidden-state cache beside KDA and indexed layers whose key cache pages divide the "
        "largest page is not verified (not modelled)",
    )


def _kpool_assertion(arch: str, kpool: int, block: int) -> str:
    """vLLM's words where the kpool pages do not tile the block (``Glm5NextIndexerCache.get_kv_cache_spec``)."""
    return (
        f"{arch}: AssertionError: Glm5NextIndexerCache: kpool indexer requires cache block_size to be a multiple of "
        f"index_kpool * 32 ({kpool * 32}) so that DeepGEMM paged-MQA pool pages (32 or 64 entries) tile the storage "
        f"block, got block_size={block} -> storage_block_size={block // kpool}. "
        "(Glm5NextIndexerCache.get_kv_cache_spec)"
    )


def own_groups(
    model: ModelGeometry, specs: dict[str, LayerSpec], stages: Sequence[frozenset[str]] | None = None
) -> tuple[tuple[str, ...], ...] | None:
    """vLLM 0.30.0 / 0.31.0's GLM-5.3-Flash groups (``_get_kv_cache_groups_glm5_next``) of KDA layers beside
    indexed ones: one uniform-type group of every indexer key cache and MLA layer, one of the tail rings, and
    the KDA states dealt round-robin into :func:`kda_group_count` groups; the pool's bytes per block are then
    the first group's pages (``_get_kv_cache_bytes_per_block``). ``stages``: each pipeline stage's cache
    layers (``None``: one stage). ``None`` elsewhere (the repeat pattern's groups).

    :raises InputError: a stage of KDA layers without an MLA layer (vLLM's ValueError)."""
    if not _kda_beside(model):
        return None
    names = list(specs)
    attn = tuple(n for n in names if isinstance(specs[n], AttentionSpec) and specs[n].kind != KPOOL_TAIL_SPEC)
    tails = tuple(n for n in names if specs[n].kind == KPOOL_TAIL_SPEC)
    states = [n for n in names if isinstance(specs[n], MambaSpec)]
    mla = [n for n in attn if n.endswith(".self_attn.attn")]
    count = kda_group_count(states, mla, stages)
    if count is None:
        raise InputError(
            "--pipeline-parallel-size",
            str(len(stages or ())),
            f"{model.architecture}: ValueError: a pipeline stage has mamba layers but no MLA layer to share slots "
            "with; realign the stage boundaries (VLLM_PP_LAYER_PARTITION) (_get_kv_cache_groups_glm5_next)",
        )
    return (attn, tails, *(tuple(states[i::count]) for i in range(count)))


def kda_group_count(states: Sequence[str], mla: Sequence[str], stages: Sequence[frozenset[str]] | None) -> int | None:
    """The KDA groups (``_pp_balanced_mamba_group_count``): ``cdiv(KDA layers, MLA layers)`` over the model,
    raised to each pipeline stage's own ``cdiv(its KDA layers, its MLA layers)`` so every stage's states fit
    its MLA slots; ``None`` where a stage holds KDA layers and no MLA layer. ``states``, ``mla``: the layer
    names; ``stages``: each stage's layer names (``None``: one stage)."""
    count = cdiv(len(states), len(mla))
    for held in stages or ():
        kda = sum(n in held for n in states)
        attn = sum(n in held for n in mla)
        if kda and not attn:
            return None
        if kda:
            count = max(count, cdiv(kda, attn))
    return count


def _kernel_blocks(model: ModelGeometry, args: EngineArgs) -> tuple[KernelBlock, ...]:
    return indexer_backend(model, args.device.capability[0]).kernel_blocks


def _indexer_spec(caches: Glm5NextCaches, block: int, kernel: int) -> AttentionSpec:
    """The indexer key cache: one ``index_row``-byte row a ``kpool`` tokens, its block stride a
    multiple of its page at ``kernel`` tokens (``customize_attention_spec``: fixed kernel blocks
    only, the largest)."""
    return AttentionSpec(
        layer_kind=LayerKind.GLM5_KPOOL_INDEXER,
        block_size=block,
        num_kv_heads=1,
        head_size=caches.index_row,
        head_size_v=0,
        torch_dtype="uint8",
        kv_cache_dtype="uint8",
        quant_mode=KVQuantMode.NONE,
        content_bytes=caches.index_row,
        backend="DEEPSEEK_V32_INDEXER",
        indexes_kv_by_block_stride=True,
        compress_ratio=caches.kpool,
        block_stride_alignment=kernel,
    )


def _tail_spec(caches: Glm5NextCaches, ring: int) -> AttentionSpec:
    """The tail ring: ``ring`` tokens of two bfloat16 heads of ``index_head_dim`` (raw keys, gate
    scores), its stride a multiple of one token's row (``MultipleOf(1)``)."""
    return AttentionSpec(
        layer_kind=LayerKind.GLM5_KPOOL_TAIL,
        block_size=ring,
        num_kv_heads=2,
        head_size=caches.index_head_dim,
        head_size_v=0,
        torch_dtype="bfloat16",
        kv_cache_dtype="bfloat16",
        quant_mode=KVQuantMode.NONE,
        content_bytes=caches.index_head_dim * 2,
        backend=KPOOL_TAIL.name,
        indexes_kv_by_block_stride=False,
        block_stride_alignment=1,
        spec_name="circular_buffer",
    )
