"""DeepSeek-V2/V3/V3.2, GLM-5, A.X K1 and Sarvam-M: multi-head latent attention (one latent
head per layer), and DeepSeek-V2/V3 without MLA (plain attention).

Mirrors ``vllm/model_executor/models/deepseek_v2.py`` (MLA layers: ``kv_lora_rank +
qk_rope_head_dim`` per token, no V part, not split by TP) and ``deepseek_mtp.py``
(``num_nextn_predict_layers`` MLA layers under ``"method": "mtp"``), with transformers'
``DeepseekV2Config``/``DeepseekV3Config`` (vLLM reads ``deepseek_v32`` with the latter) and
``GlmMoeDsaConfig`` defaults; ``AXK1.py`` and ``sarvam.py`` (``SarvamMLAForCausalLM``) build the
same MLA layers, without indexer or MTP module, from vLLM's ``AXK1Config`` and transformers'
``SarvamMLAConfig``.

Sparse MLA (DeepSeek Sparse Attention; vLLM's ``is_v32``: the config has ``index_topk``, which
``GlmMoeDsaConfig`` always sets): each MLA layer ``i`` that computes its own top-k
(``DeepseekV2MLAAttention``: not skipped by ``index_topk_freq`` / ``index_skip_topk_offset`` /
``index_topk_pattern``; MTP layers always) builds a sparse-attention ``Indexer`` whose key cache
``model.layers.<i>.self_attn.indexer.k_cache`` (``DeepseekV32IndexerCache``) is registered before
the layer's MLA cache: one uint8 head of ``index_head_dim + index_head_dim // 128 * 4`` bytes per
token (fp8 keys and one fp32 scale per 128). Every MLA layer of such a model is sparse: it takes
a sparse MLA backend and no MLA prefill backend (so the SM90 prefill dimensions below do not
apply); the indexer needs ``q_lora_rank``.

Without MLA: ``qk_nope_head_dim = qk_rope_head_dim = 0`` makes ``DeepseekV2DecoderLayer`` build
``DeepseekAttention`` (plain attention, ``num_key_value_heads`` KV heads of ``hidden_size //
num_attention_heads``, one full-attention cache per layer, backends chosen as for any standard
attention layer): DeepSeek-OCR's language model (``language_config``, ``kv_lora_rank`` null). A
``kv_lora_rank`` beside those zero dims (the model config then says MLA while the layers are not)
is refused by name; with the dims set and ``kv_lora_rank`` null, vLLM builds ``DeepseekV2Attention``
and fails on the missing rank, and so does dryboot (refused).

On the GPU dryboot assumes (SM90: H100/H200), the only MLA prefill backend is FlashAttention,
which serves (qk_nope, qk_rope, v) head dims (128, 64, 128), (192, 64, 256) and (64, 64, 128)
(``v1/attention/backends/mla/prefill/flash_attn.py``, ``selector.py``); other dimensions are
refused, as vLLM refuses them while building the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dryboot.errors import InputError, missing_field
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.models.common import MAX_LAYERS, config_class_lacks, geometry, num_layers
from dryboot.vllm.versions import VersionRules

if TYPE_CHECKING:
    from dryboot.vllm.engine_args import EngineArgs

_DEFAULTS: dict[str, dict[str, Any]] = {
    "deepseek_v2": {
        "max_position_embeddings": 2048,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "q_lora_rank": 1536,
    },
    "deepseek_v3": {
        "max_position_embeddings": 4096,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "q_lora_rank": 1536,
    },
    # vLLM reads kimi_k2 with DeepseekV3Config (transformers_utils/config.py; Kimi's EAGLE-3 heads)
    "kimi_k2": {
        "max_position_embeddings": 4096,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "q_lora_rank": 1536,
    },
    # vLLM reads deepseek_v32 with DeepseekV3Config (index_* have no defaults there)
    "deepseek_v32": {
        "max_position_embeddings": 4096,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "q_lora_rank": 1536,
    },
    # GlmMoeDsaConfig: every layer sparse (index_* always set)
    "glm_moe_dsa": {
        "max_position_embeddings": 202752,
        "num_hidden_layers": 78,
        "num_attention_heads": 64,
        "q_lora_rank": 2048,
        "qk_nope_head_dim": 192,
        "v_head_dim": 256,
        "index_topk": 2048,
        "index_head_dim": 128,
        "index_n_heads": 32,
    },
    # vLLM's own AXK1Config (transformers_utils/configs/AXK1.py)
    "axk1": {
        "max_position_embeddings": 131072,
        "num_hidden_layers": 61,
        "num_attention_heads": 64,
        "q_lora_rank": 1536,
    },
    # transformers' SarvamMLAConfig
    "sarvam_mla": {"max_position_embeddings": 4096, "num_hidden_layers": 32, "num_attention_heads": 64},
    # transformers' Glm4MoeLiteConfig
    "glm4_moe_lite": {
        "max_position_embeddings": 202752,
        "num_attention_heads": 20,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 192,
        "v_head_dim": 256,
        "n_routed_experts": 64,
    },
    # transformers' LongcatFlashConfig
    "longcat_flash": {
        "max_position_embeddings": 131072,
        "num_layers": 28,
        "num_attention_heads": 64,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "n_routed_experts": 512,
    },
}
#: Model types whose ``num_nextn_predict_layers`` MTP layers vLLM 0.28.0 builds under
#: ``"method": "mtp"`` (``SpeculativeConfig.hf_config_override`` turns them into
#: ``DeepSeekMTPModel``); for the others vLLM raises "Unsupported speculative method: 'mtp'".
MTP_MODEL_TYPES = frozenset({"deepseek_v3", "deepseek_v32", "glm_moe_dsa"})
#: Model types whose layers are ``DeepseekV2DecoderLayer``'s, which builds plain attention
#: (``DeepseekAttention``) when ``qk_nope_head_dim = qk_rope_head_dim = 0`` (dense ones: a sparse
#: model's indexer with such dims is not modelled).
V2_DECODER_TYPES = frozenset({"deepseek_v2", "deepseek_v3"})
_MLA = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}

#: (qk_nope_head_dim, qk_rope_head_dim, v_head_dim) the SM90 MLA prefill backend serves.
SM90_PREFILL_DIMS = frozenset({(128, 64, 128), (192, 64, 256), (64, 64, 128)})


@dataclass(frozen=True)
class AllLayersIndexed(FamilyExtra):
    """``layers``: (``layer_kinds``, ``decoder_layers``) with an indexer in every layer, for a
    GLM-5 config whose IndexCache keys skip some, as releases whose ``GlmMoeDsaConfig`` drops
    those keys build it (switch ``glm_moe_dsa_drops_index_keys``)."""

    layers: tuple[tuple[LayerKind, ...], tuple[int, ...]]


@dataclass(frozen=True)
class Eagle3Head(FamilyExtra):
    """An EAGLE-3 head of MLA layers (``deepseek_eagle3.py``): ``yarn``, whether its rope is YaRN
    (``rope_scaling`` / ``rope_parameters`` of type ``yarn`` or ``deepseek_yarn``), which vLLM
    0.27.1 builds every such head's rotary as (:func:`verify_release`)."""

    yarn: bool


#: transformers' ``LongcatFlashConfig.num_hidden_layers`` default where it is a field of its own
#: (transformers <5.18: vLLM 0.31.0's pin, 5.17.0 recorded; 0.27.1's environment, 5.10.4)
LONGCAT_HF_HIDDEN_LAYERS = 56


#: what ``longcat_flash.py`` (0.32+) reads that transformers' ``LongcatFlashConfig`` does not define,
#: in read order (``scale_mla_lora_norms_on_load``, then ``LongcatMoe``)
LONGCAT_HF_REQUIRED = ("mla_scale_q_lora", "mla_scale_kv_lora", "zero_expert_type")


@dataclass(frozen=True)
class LongcatLayers(FamilyExtra):
    """A LongCat-Flash config's two layer counts: ``num_layers`` (the checkpoint's decoder layers)
    and ``num_hidden_layers`` as config.json gives it (``None``: absent), which a release whose
    transformers keeps it as a field of its own builds instead (:func:`check_longcat_layers`);
    ``unset``: the fields of :data:`LONGCAT_HF_REQUIRED` config.json leaves out, in read order."""

    num_layers: int
    num_hidden_layers: int | None
    unset: tuple[str, ...] = ()


def check_longcat_layers(source: str, layers: LongcatLayers, rules: VersionRules) -> None:
    """Refuse a LongCat-Flash config whose decoder layers the release builds from
    ``num_hidden_layers`` (switch ``longcat_hidden_layers_field``: 0.27.1, 0.31.0, ``longcat_flash.py``
    ``FlashModel`` over ``FlashConfig(**hf_config.__dict__)``, transformers' field defaulting to
    :data:`LONGCAT_HF_HIDDEN_LAYERS`) where that is not ``num_layers``: vLLM builds that many
    layers (its no-weights engine start serves them: ``data/release-architectures/vllm-0.31.0.json``)
    and a checkpoint of ``num_layers`` layers leaves the others unloaded, which
    ``DefaultModelLoader.load_weights`` refuses ("Following weights were not initialized from
    checkpoint") before any KV cache is sized.

    :raises InputError: named ``num_layers``, as above."""
    if not rules.longcat_hidden_layers_field:
        return
    built = LONGCAT_HF_HIDDEN_LAYERS if layers.num_hidden_layers is None else layers.num_hidden_layers
    if built != layers.num_layers:
        given = "config.json's" if layers.num_hidden_layers is not None else "its default,"
        raise InputError(
            source,
            "num_layers",
            f"vLLM {rules.version} builds LongCat-Flash with transformers' LongcatFlashConfig.num_hidden_layers "
            f"decoder layers ({given} {built}), not num_layers ({layers.num_layers}): a checkpoint of "
            f"{layers.num_layers} layers leaves layers {layers.num_layers}-{built - 1} unloaded and vLLM fails "
            "loading it (Following weights were not initialized from checkpoint)"
            if built > layers.num_layers
            else f"vLLM {rules.version} builds LongCat-Flash with transformers' LongcatFlashConfig.num_hidden_layers "
            f"decoder layers ({given} {built}), not num_layers ({layers.num_layers}): not modelled",
        )


def _eagle3_head(f: ConfigFields, architecture: str) -> Eagle3Head | None:
    if not architecture.startswith("Eagle3"):
        return None
    rope = f.get("rope_parameters") or f.get("rope_scaling") or {}
    kind = rope.get("rope_type", rope.get("type")) if isinstance(rope, dict) else None
    return Eagle3Head(yarn=kind in ("yarn", "deepseek_yarn"))


def defaults(f: ConfigFields) -> dict[str, Any]:
    return {**_MLA, **_DEFAULTS.get(str(f.get("model_type") or ""), {})}


def _latent(f: ConfigFields) -> tuple[int, tuple[int, int, int]]:
    """(latent head size ``kv_lora_rank + qk_rope_head_dim``, (qk_nope, qk_rope, v) head dims);
    dims no MLA prefill backend serves are refused when the model is built (:func:`verify_release`)."""
    rope = f.integer("qk_rope_head_dim", minimum=0)
    dims = (f.integer("qk_nope_head_dim", minimum=0), rope, f.integer("v_head_dim"))
    return f.integer("kv_lora_rank") + rope, dims


def _no_prefill_backend(dims: tuple[int, int, int]) -> str:
    return (
        "No valid MLA prefill backend found on SM90 for (qk_nope_head_dim, qk_rope_head_dim, v_head_dim) = "
        f"{dims}: FlashAttention serves {sorted(SM90_PREFILL_DIMS)}"
    )


def check_mla_prefill(model: ModelGeometry) -> None:
    """The MLA prefill backend vLLM selects when an MLA layer is built (``GPUModelRunner.load_model``),
    after that layer's decode attention backend: a ``verify_release`` check, not a config-reading one.

    :raises InputError: (qk_nope, qk_rope, v) head dims no SM90 MLA prefill backend serves."""
    dims = model.attn.mla_dims
    if model.use_mla and not model.sparse_mla and dims is not None and dims not in SM90_PREFILL_DIMS:
        raise InputError(model.source, "qk_rope_head_dim", _no_prefill_backend(dims))


def verify_release(model: ModelGeometry, rules: VersionRules) -> None:
    """A dense MLA model's prefill backend, selected when its attention layers are built
    (also an MLA EAGLE-3 head's: 0.27's rope rewrite fails on a head without YaRN)
    (``GPUModelRunner.load_model``), after each layer's decode attention backend: so after the
    engine config (a draft model without ``SupportsPP`` under pipeline parallelism, an nvfp4 KV
    cache), the runner's drafter checks (an ``extract_hidden_states`` proposer without layer ids)
    and the attention backend (none valid, or a named one that is not), as vLLM 0.28.0 and 0.30.0
    refuse them first; not at config reading.

    :raises InputError: (qk_nope, qk_rope, v) head dims no SM90 MLA prefill backend serves; a
        LongCat-Flash config whose layer count the release reads otherwise (:func:`check_longcat_layers`),
        or that leaves out a field of :data:`LONGCAT_HF_REQUIRED` where transformers' class reads it.
    """
    longcat = extra_of(model, LongcatLayers)
    if longcat is not None:
        check_longcat_layers(model.source, longcat, rules)
        if longcat.unset and "LongcatFlashForCausalLM" in rules.hf_config_class_architectures:
            key = longcat.unset[0]
            raise InputError(model.source, key, config_class_lacks("LongCat-Flash", "LongcatFlashConfig", key))
    head = extra_of(model, Eagle3Head)
    if head is not None and not head.yarn and rules.deepseek_eagle3_yarn_only:
        raise InputError(
            model.source,
            "rope_scaling",
            f"vLLM {rules.version} builds a DeepSeek EAGLE-3 head's rotary as deepseek_yarn and fails on one "
            "without YaRN (KeyError: 'factor')",
        )
    check_mla_prefill(model)


def indexer_head_size(index_head_dim: int) -> int:
    """Bytes per token of a sparse-attention indexer's key cache: ``index_head_dim`` fp8 values
    and one fp32 scale per 128 of them (``Indexer.__init__``, ``quant_block_size`` 128)."""
    return index_head_dim + index_head_dim // 128 * 4


def indexed_layers(f: ConfigFields, n: int) -> tuple[bool, ...]:
    """Which of the ``n`` backbone layers build an indexer (``DeepseekV2MLAAttention``'s
    IndexCache rule): with ``index_topk_pattern``, layer ``i`` skips when ``pattern[i] == "S"``;
    else it skips when ``max(i - index_skip_topk_offset + 1, 0) % index_topk_freq != 0``
    (defaults 2 and 1: no layer skips).

    :raises InputError: an ``index_topk_freq`` of 0 (vLLM divides by it) or a malformed field.
    """
    pattern = f.get("index_topk_pattern")
    if pattern is not None:
        if not isinstance(pattern, str | list):
            raise InputError(f.source, f.where("index_topk_pattern"), "must be a string or a list")
        return tuple(not (i < len(pattern) and pattern[i] == "S") for i in range(n))
    freq = f.integer("index_topk_freq", minimum=0) if f.has("index_topk_freq") else 1
    offset = f.integer("index_skip_topk_offset", minimum=-(2**31)) if f.has("index_skip_topk_offset") else 2
    if freq == 0:
        raise InputError(
            f.source, f.where("index_topk_freq"), "0: vLLM builds no model (ZeroDivisionError: integer modulo by zero)"
        )
    return tuple(max(i - offset + 1, 0) % freq == 0 for i in range(n))


def _sarvam_pipeline(f: ConfigFields) -> dict[str, Any]:
    """Sarvam-M's model class needs an MoE layer (``SarvamMLAMoE``) on every pipeline stage
    (``SarvamMixtureOfExperts.extract_moe_parameters``): layers from ``first_k_dense_replace``
    (default 1) on, every ``moe_layer_freq``-th. With a frequency other than 1 which stages hold
    one is not modelled (refused under pipeline parallelism)."""
    freq = f.integer("moe_layer_freq") if f.has("moe_layer_freq") else 1
    if freq != 1:
        return {"pp_refusal": f"moe_layer_freq {freq}: which pipeline stages hold an MoE layer is not modelled"}
    first = f.integer("first_k_dense_replace", minimum=0) if f.has("first_k_dense_replace") else 1
    return {"first_moe_layer": first, "no_moe_layer": "No SarvamMLAMoE layer found in model.layers."}


def sparse_layers(indexed: tuple[bool, ...]) -> tuple[tuple[LayerKind, ...], tuple[int, ...]]:
    """(layer kinds, their decoder layers) of a sparse MLA model whose layer ``i`` builds an
    indexer when ``indexed[i]``: its key cache, then the layer's MLA cache."""
    kinds: list[LayerKind] = []
    decoder: list[int] = []
    for i, has_indexer in enumerate(indexed):
        if has_indexer:
            kinds.append(LayerKind.MLA_INDEXER)
            decoder.append(i)
        kinds.append(LayerKind.MLA)
        decoder.append(i)
    return tuple(kinds), tuple(decoder)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    if architecture == "Glm4MoeLiteForCausalLM":
        return _glm4_moe_lite(f, architecture)
    if architecture == "LongcatFlashForCausalLM":
        return _longcat_flash(f, architecture)
    n = num_layers(f)
    heads = f.integer("num_attention_heads")
    rope = f.integer("qk_rope_head_dim", minimum=0)
    model_type = str(f.get("model_type") or "")
    # DeepseekV2DecoderLayer's choice (AXK1's own decoder layer, Sarvam's MLA-only one: below)
    v2_layer = model_type in V2_DECODER_TYPES and f.get("index_topk") is None
    if model_type in V2_DECODER_TYPES and not f.prefix and "kv_lora_rank" in f.data and f.data["kv_lora_rank"] is None:
        # transformers' DeepseekV2Config / DeepseekV3Config type it int (strict); only a wrapper's
        # text config class (vLLM's DeepseekVLV2TextConfig: int | None) takes null
        raise InputError(
            f.source,
            f.where("kv_lora_rank"),
            "null: vLLM refuses the config (StrictDataclassFieldValidationError: Validation error for field "
            "'kv_lora_rank': expected int, got NoneType)",
        )
    if v2_layer and f.integer("qk_nope_head_dim", minimum=0) == 0 and rope == 0:
        return _multi_head(f, architecture, n, heads)
    if v2_layer and f.get("kv_lora_rank") is None:
        raise InputError(
            f.source,
            f.where("kv_lora_rank"),
            "null with qk_nope_head_dim / qk_rope_head_dim set: vLLM builds DeepseekV2Attention without a latent "
            "rank and fails (TypeError: None + int in kv_a_proj_with_mqa)",
        )
    dims = (f.integer("qk_nope_head_dim", minimum=0), rope, f.integer("v_head_dim"))
    latent = f.integer("kv_lora_rank") + rope
    if model_type == "axk1" and dims[0] == 0 and rope == 0:
        raise InputError(
            f.source,
            f.where("qk_nope_head_dim"),
            "0 with qk_rope_head_dim 0: AXK1 then builds plain multi-head attention (DeepseekAttention), "
            "which is not modelled",
        )
    has_mtp = model_type in MTP_MODEL_TYPES and f.has("num_nextn_predict_layers")
    mtp = f.integer("num_nextn_predict_layers", minimum=0) if has_mtp else 0
    if f.get("index_topk") is None:
        return geometry(
            f,
            architecture,
            "deepseek",
            (LayerKind.MLA,) * n,
            heads=(heads, 1, latent),
            head_dim_v=0,
            mla_dims=dims,
            num_mtp_layers=mtp,
            mtp_kind=LayerKind.MLA,
            family_extra=_eagle3_head(f, architecture),
            **(_sarvam_pipeline(f) if model_type == "sarvam_mla" else {}),
        )
    if f.get("q_lora_rank") is None:
        raise InputError(
            f.source,
            f.where("q_lora_rank"),
            "null: the sparse-attention indexer (index_topk) needs q_lora_rank; vLLM fails to build the model "
            "(AssertionError in DeepseekV2MLAAttention)",
        )
    if not f.has("index_head_dim"):
        raise InputError(
            f.source,
            f.where("index_head_dim"),
            "missing: the sparse-attention indexer (index_topk) reads it; vLLM fails to build the model "
            "(AttributeError)",
        )
    indexer = indexer_head_size(f.integer("index_head_dim"))
    indexed = indexed_layers(f, n)
    kinds, decoder = sparse_layers(indexed)
    every = sparse_layers((True,) * n)
    return geometry(
        f,
        architecture,
        "deepseek",
        tuple(kinds),
        heads=(heads, 1, latent),
        head_dim_v=0,
        mla_dims=dims,
        num_mtp_layers=mtp,
        mtp_kind=LayerKind.MLA,
        indexer_head_size=indexer,
        index_topk=f.opt_int("index_topk"),
        decoder_layers=decoder,
        # transformers 5.10's GlmMoeDsaConfig (vLLM 0.27.1) consumes the IndexCache keys
        family_extra=AllLayersIndexed(every) if model_type == "glm_moe_dsa" and not all(indexed) else None,
    )


def _multi_head(f: ConfigFields, architecture: str, n: int, heads: int) -> ModelGeometry:
    """DeepSeek-V2/V3 without MLA: ``qk_nope_head_dim = qk_rope_head_dim = 0`` makes
    ``DeepseekV2DecoderLayer`` build ``DeepseekAttention`` (plain attention, whatever
    ``kv_lora_rank`` says): ``num_key_value_heads`` KV heads (split across TP ranks, replicated
    when fewer) of ``hidden_size // num_attention_heads``, K and V alike, one full-attention cache
    per layer (``model.layers.<i>.self_attn.attn``). No MTP layers are built under it.

    :raises InputError: a ``kv_lora_rank`` beside the zero head dims (the model config then says
        MLA while the layers are plain attention: not modelled), or malformed fields.
    """
    if f.get("kv_lora_rank") is not None:
        raise InputError(
            f.source,
            f.where("kv_lora_rank"),
            f"{f.get('kv_lora_rank')} with qk_nope_head_dim = qk_rope_head_dim = 0: vLLM builds plain attention "
            "layers (DeepseekAttention) under a model config that says MLA (use_mla): not modelled",
        )
    hidden = f.integer("hidden_size")
    return geometry(
        f,
        architecture,
        "deepseek",
        (LayerKind.FULL,) * n,
        heads=(heads, f.integer("num_key_value_heads"), hidden // heads),
    )


def _glm4_moe_lite(f: ConfigFields, architecture: str) -> ModelGeometry:
    """GLM-4.7-Flash (``glm4_moe_lite.py``): DeepSeek-V2's MLA layers (``DeepseekV2MLAAttention``)
    under GLM-4-MoE blocks. Its MoE model class finds an MoE block on every pipeline stage or
    fails (``Glm4MixtureOfExperts.extract_moe_parameters``); the first is layer
    ``first_k_dense_replace`` (read by the class, no config default). Its MTP module
    (``Glm4MoeLiteMTPModel``) is not modelled.

    :raises InputError: ``kv_lora_rank`` null (no MLA: vLLM builds standard attention, not
        modelled), ``moe_layer_freq`` other than 1, no routed experts, ``first_k_dense_replace``
        missing, or a ``head_dim`` that transformers' ``attribute_map`` would write over
        ``qk_rope_head_dim``.
    """
    n = num_layers(f)
    if f.get("kv_lora_rank") is None:
        raise InputError(f.source, f.where("kv_lora_rank"), "null: vLLM then builds MHA layers, not modelled")
    if f.get("head_dim") is not None and f.get("head_dim") != f.get("qk_rope_head_dim"):
        raise InputError(
            f.source,
            f.where("head_dim"),
            "Glm4MoeLiteConfig maps head_dim onto qk_rope_head_dim (attribute_map): a head_dim other than "
            "qk_rope_head_dim is not modelled",
        )
    if f.get("moe_layer_freq") not in (None, 1):
        raise InputError(f.source, f.where("moe_layer_freq"), "an MoE block other than every layer is not modelled")
    if f.get("n_routed_experts") is None:
        raise InputError(
            f.source,
            f.where("n_routed_experts"),
            "null: vLLM's Glm4MoeLiteForCausalLM finds no MoE layer (RuntimeError)",
        )
    if not f.given("first_k_dense_replace"):
        raise InputError(f.source, f.where("first_k_dense_replace"), missing_field("vLLM's Glm4MoeLite reads it"))
    latent, dims = _latent(f)
    return geometry(
        f,
        architecture,
        "deepseek",
        (LayerKind.MLA,) * n,
        heads=(f.integer("num_attention_heads"), 1, latent),
        head_dim_v=0,
        mla_dims=dims,
        num_mtp_layers=f.opt_int("num_nextn_predict_layers") or 0,
        mtp_kind=None,
        first_moe_layer=f.integer("first_k_dense_replace", minimum=0),
    )


def _longcat_flash(f: ConfigFields, architecture: str) -> ModelGeometry:
    """LongCat-Flash (``longcat_flash.py``): ``num_layers`` decoder layers, each with two
    DeepSeek-V2 MLA attentions (``model.layers.<i>.self_attn.<0|1>``), so two MLA caches per
    decoder layer; pipeline stages split the ``num_layers`` decoder layers (``FlashModel`` builds
    ``FlashConfig(num_layers=...)``). Its MoE block asserts ``zero_expert_type`` (no class
    default). Its MTP module (``LongCatFlashMTPModel``) is not modelled.

    :raises InputError: ``kv_lora_rank`` null, ``zero_expert_type`` missing, or a
        ``num_hidden_layers`` that is not twice ``num_layers`` (transformers' class derives one
        from the other; a file giving both otherwise is not modelled).
    """
    n = f.integer("num_layers", maximum=MAX_LAYERS // 2)
    if f.given("num_hidden_layers") and f.get("num_hidden_layers") != 2 * n:
        raise InputError(
            f.source,
            f.where("num_hidden_layers"),
            f"LongcatFlashConfig counts two attention layers per decoder layer (num_hidden_layers = "
            f"2 * num_layers = {2 * n}): another value is not modelled",
        )
    if f.get("kv_lora_rank") is None:
        raise InputError(f.source, f.where("kv_lora_rank"), "null: not modelled (vLLM builds MLA only)")
    if f.get("zero_expert_type") is None:
        raise InputError(f.source, f.where("zero_expert_type"), missing_field("vLLM's LongcatMoe asserts it"))
    latent, dims = _latent(f)
    return geometry(
        f,
        architecture,
        "deepseek",
        (LayerKind.MLA,) * (2 * n),
        heads=(f.integer("num_attention_heads"), 1, latent),
        head_dim_v=0,
        mla_dims=dims,
        # longcat_flash_mtp.py: one DeepSeek-V2 MLA decoder layer whatever num_nextn_predict_layers
        # says, numbered after twice FlashConfig's num_hidden_layers (num_layers: the transformers
        # class's num_hidden_layers is a property, left out of the config's __dict__)
        num_mtp_layers=1,
        mtp_kind=LayerKind.MLA,
        mtp_layer_names=(f"model.layers.{2 * n}.self_attn.attn",),
        decoder_layers=tuple(i for i in range(n) for _ in range(2)),
        layer_names=tuple(f"model.layers.{i}.self_attn.{j}.attn" for i in range(n) for j in range(2)),
        family_extra=LongcatLayers(
            n,
            f.get("num_hidden_layers") if f.given("num_hidden_layers") else None,
            tuple(k for k in LONGCAT_HF_REQUIRED if k not in f.data),
        ),
    )


def for_release(model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
    """GLM-5 with an indexer in every layer where the release's ``GlmMoeDsaConfig`` drops the
    IndexCache keys (switch ``glm_moe_dsa_drops_index_keys``)."""
    extra = extra_of(model, AllLayersIndexed)
    if rules.glm_moe_dsa_drops_index_keys and extra is not None:
        kinds, decoder = extra.layers
        return model.evolve(layer_kinds=kinds, decoder_layers=decoder, family_extra=None)
    return model


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """DeepSeek-V3.2's config hook (``DeepseekV32ForCausalLM.verify_and_update_config``,
    0.27.1-0.33.0) takes a ``bfloat16`` KV cache as ``auto``: the same cache wherever ``auto`` is
    the model's bfloat16, but on SM 12.x FLASHINFER_MLA_SPARSE_SM120 stores ``auto`` as
    ``fp8_ds_mla``; other flags as given."""
    if model.architecture == "DeepseekV32ForCausalLM" and args.kv_cache_dtype == "bfloat16":
        return args.evolve(kv_cache_dtype="auto")
    return args
