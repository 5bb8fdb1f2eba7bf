"""Qwen4-Exp's plain layout: Qwen3.5's Gated DeltaNet layers beside full-attention layers, on a
hyper-connection stream (``vllm/models/qwen4_exp/nvidia/model.py``, vLLM 0.29.0-0.33.0).

A config without QSA (no ``indexer_*`` field: every attention layer is ``Qwen3NextAttention``)
and without PLE layers (``ple_layer_ids`` empty) keeps Qwen3-Next's caches: one ``MambaSpec``
per Gated DeltaNet layer, one ``FullAttentionSpec`` per attention layer. Its config class is
vLLM's own ``Qwen4ExpTextConfig`` (a ``Qwen3NextConfig``: absent ``layer_types``, every 4th layer
is attention, ``full_attention_interval`` unread) on 0.29-0.31 and transformers' from 0.32
(``full_attention_interval``, default 4, read; ``full_attention`` renamed ``indexed_attention``):
switch ``qwen3_next_hf_config_class``, as for Qwen3-Next.

One rule of its own: ``Platform._align_hybrid_block_size`` sizes the attention block from the
larger page of the model class's ``get_mamba_specs_from_config``, the Gated DeltaNet state's and
the PLE short-convolution state's, even where no layer is a PLE layer
(:func:`alignment_mamba_pages`).

QSA layers (``indexer_n_heads`` set: every attention layer is ``Qwen4ExpQSAAttention``, vLLM
0.29.0-0.33.0): each keeps, beside its own ``FullAttentionSpec``, a ring of raw index keys
(``QSAKeyStateCache``: a ``CircularBufferSpec`` of ``round_up(ratio + num_speculative_tokens,
ratio)`` rows of ``indexer_head_dim`` bfloat16) and its compressed keys (``QSACompressedKeyCache``:
an ``MLAAttentionSpec`` of one ``indexer_head_dim`` bfloat16 row per ``indexer_compress_ratio``
tokens), which 0.29.0-0.32.0 (``kv_cache_utils.py``) and 0.33.0 (``kv_cache_planning.py``) lay
out by the same repeat-pattern packing (:mod:`dryboot.vllm.kv_cache_utils.repeat_packed`), reached
through :func:`kv_cache_layout` and :func:`side_cache_specs`. On 0.29.0-0.31.0 vLLM's own config
class refuses a QSA layout unless ``indexer_budget / indexer_compress_ratio`` is 512 or 2048
(modelled), and 0.29.0's / 0.30.0's QSA layer a main KV cache other than bfloat16. 0.29.0's packing
caps Mamba buckets only (not the ring), which changes no recorded figure, and its engine block ends
on every group's smallest, the ring's (4 where the cache block is 48:
``VersionRules.engine_block_all_groups``).


PLE layers (``ple_layer_ids``, 1-based decoder layers; vLLM 0.29.0-0.33.0): each such decoder layer also
builds a ``Qwen4ExpPLELayer`` before its mixer, whose cache is one more ``MambaSpec`` (mamba type
``SHORT_CONV``, :data:`LayerKind.PLE`, at ``<layer>.ple``): a short-convolution state of
``(ple_conv_kernel_size - 1) * ngram_size + num_speculative_tokens`` rows of ``hc_count *
hidden_size``, TP-replicated, in the convolution state's dtype (:func:`side_mamba_states`), padded
to the common page like the Gated DeltaNet states; it groups apart (its own spec). Recorded on
0.29.0-0.33.0 (``tests/fidelity/data/qwen4-ple/``; 0.29-0.31's own config class puts PLE on any
layer it names; 0.29.0 has no n-gram embedding nor ``--engram-config``). QSA and PLE layers in one model take both:
the PLE state is a bucket of its own in the repeat-pattern packing (a TP-replicated ``MambaSpec``
is not uniform with the Gated DeltaNet states: ``MambaSpec.tp_replicated``), recorded on
0.29.0-0.33.0.


Refused by name: layer types other than ``linear_attention`` / ``full_attention``, QSA layers
under pipeline parallelism, and the MTP drafter
(``--speculative-config`` method ``mtp``: ``Qwen4ExpMTP``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.dtypes import KVQuantMode, dtype_bytes
from dryboot.vllm.kv_cache_interface import AttentionSpec, LayerSpec
from dryboot.vllm.models.common import LAYER_TYPE_NAMES, attention_heads, geometry, layer_types, num_layers
from dryboot.vllm.models.dense import verify as dense_verify
from dryboot.vllm.models.qwen3_next import GDN_DEFAULTS, gated_delta_net
from dryboot.vllm.platforms import cdiv

if TYPE_CHECKING:
    from dryboot.vllm.engine_args import EngineArgs
    from dryboot.vllm.versions import VersionRules

#: the defaults both config classes share (vLLM's ``Qwen3NextConfig`` under ``Qwen4ExpTextConfig``
#: on 0.29-0.31; transformers' ``Qwen4ExpTextConfig``, 5.19 / 5.20, from 0.32)
_DEFAULTS = {
    **GDN_DEFAULTS,
    "num_key_value_heads": 2,
    "hc_count": 4,
    "ple_conv_kernel_size": 4,
    "ngram_size": 3,
    "heads_per_ngram": 8,
    "hc_lowrank": 320,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
}

#: the drafters vLLM's config hook accepts for Qwen4-Exp (``model_executor/models/config.py``)
SPECULATIVE_METHODS = frozenset({"mtp", "ngram", "ngram_gpu"})
#: the wrapper's decoder layers' module path (``Qwen4ExpForConditionalGeneration.language_model``)
WRAPPER_LAYER_PREFIX = "language_model.model.layers"
#: the multimodal wrapper (its text model is this layout under ``language_model``)
WRAPPER_ARCH = "Qwen4ExpForConditionalGeneration"
#: ``Qwen3VLVisionConfig``'s ``num_heads`` (the wrapper's vision tower)
VISION_HEADS_DEFAULT = 16

#: the QSA fields (``qwen4_exp/config.py`` ``_QSA_CONFIG_FIELDS``); with ``indexer_n_heads`` set the
#: attention layers are ``Qwen4ExpQSAAttention``
QSA_FIELDS = ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget", "indexer_compress_ratio")

#: the layer types every release builds as this layout's layers
PLAIN_LAYER_TYPES = ("linear_attention", "full_attention")

#: the release whose QSA caches dryboot plans (its repeat-pattern packing, recorded)
QSA_RELEASES = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: ``indexer_budget / indexer_compress_ratio`` vLLM's own ``Qwen4ExpTextConfig`` takes (0.29-0.31)
QSA_OWN_CLASS_RATIOS = (512, 2048)
#: KV cache dtypes a QSA layer's main cache takes (``Qwen4ExpQSAAttention``)
QSA_KV_DTYPES = frozenset({"auto", "bfloat16", "fp8", "fp8_e4m3"})
#: the releases whose QSA layer keeps a bfloat16 main cache only (recorded on 0.29.0 / 0.30.0: "Qwen4Exp QSA
#: requires a BF16 main KV cache"; fp8 served from 0.32.0)
QSA_BF16_ONLY_RELEASES = frozenset({"0.29.0", "0.30.0"})
#: the releases whose PLE layers are recorded against vLLM (``tests/fidelity/data/qwen4-ple/``)
PLE_RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
_WHY_PLE = (
    "are PLE layers (Qwen4ExpPLELayer: a TP-replicated short-convolution state hc_count x hidden_size wide, a "
    "second MambaSpec, beside the layer's own cache), recorded on vLLM 0.29.0-0.33.0 only"
)


@dataclass(frozen=True)
class Qwen4ExpExtra(FamilyExtra):
    """What :func:`alignment_mamba_pages` reads: the PLE state's rows without speculative tokens
    (``(ple_conv_kernel_size - 1) * ngram_size``) and width (``hidden_size * hc_count``), and the
    layer pattern transformers' config class gives where it differs (as ``Qwen3NextExtra``)."""

    ple_state_rows: int
    ple_state_width: int
    layer_kinds_hf_class: tuple[LayerKind, ...] | None
    #: (field, vLLM's words) where the release's config class refuses the file: vLLM's own class
    #: (0.29-0.31, PLE fields checked with or without PLE layers), transformers' (0.32 on)
    own_class_refusal: tuple[str, str] | None = None
    hf_class_refusal: tuple[str, str] | None = None
    qsa: QSAIndexer | None = None

    #: the decoder layers (0-based) with a PLE layer (``layer_idx + 1`` in ``ple_layer_ids``)
    ple_layers: tuple[int, ...] = ()


@dataclass(frozen=True)
class QSAIndexer:
    """A QSA layer's indexer caches (``QSAIndexer``, ``qwen4_exp/nvidia/indexer_qsa.py``).

    :param head_dim: ``indexer_head_dim`` (a ring row's and a compressed row's width, elements).
    :param compress_ratio: ``indexer_compress_ratio`` (tokens per compressed row).
    :param mrope: the text config's RoPE has an ``mrope_section`` (``uses_mrope``: the ring then
        stores positions too).
    """

    head_dim: int
    compress_ratio: int
    mrope: bool


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def _qsa(f: ConfigFields) -> QSAIndexer | None:
    """The QSA indexer's cache geometry, ``None`` without ``indexer_n_heads``.

    :raises InputError: a QSA field missing or not a positive integer (transformers'
        ``Qwen4ExpTextConfig.validate_architecture``' words; vLLM's own class, 0.29-0.31, was not
        verified without every field)."""
    if all(f.get(k) is None for k in QSA_FIELDS):
        return None
    missing = [k for k in QSA_FIELDS if f.get(k) is None]
    if missing:
        raise InputError(f.source, f.where(missing[0]), f"QSA config is missing required fields: {missing}.")
    for k in QSA_FIELDS:
        value = f.get(k)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InputError(f.source, f.where(k), f"QSA config values must be positive (got {value!r})")
    rope = f.get("rope_parameters") or f.get("rope_scaling") or {}
    return QSAIndexer(
        head_dim=f.integer("indexer_head_dim"),
        compress_ratio=f.integer("indexer_compress_ratio"),
        mrope=isinstance(rope, dict) and "mrope_section" in rope,
    )


def ple_layers(f: ConfigFields, n: int) -> tuple[int, ...]:
    """The decoder layers (0-based, sorted) that build a PLE layer: ``Qwen4ExpDecoderLayer``
    builds one where ``layer_idx + 1`` is in ``ple_layer_ids`` (ids outside 1..n name no layer).

    :raises InputError: ``ple_layer_ids`` not a list of integers."""
    ids = f.get("ple_layer_ids")
    if ids is None:
        return ()
    if not isinstance(ids, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
        raise InputError(f.source, f.where("ple_layer_ids"), f"must be a list of layer numbers, got {ids!r}")
    return tuple(sorted({i - 1 for i in ids if 1 <= i <= n}))


def _own_class_refusal(f: ConfigFields) -> tuple[str, str] | None:
    """vLLM's own ``Qwen4ExpTextConfig._validate_ple_config`` (0.29-0.31), run with or without PLE
    layers: (field, its words), or ``None``."""
    ngram, heads = f.integer("ngram_size"), f.integer("heads_per_ngram")
    embed = f.integer("ple_embed_dim") if f.get("ple_embed_dim") is not None else f.integer("hidden_size")
    if f.integer("hc_lowrank") <= 0:
        return "hc_lowrank", "hc_lowrank must be positive"
    if ngram < 2:
        return "ngram_size", f"ngram_size must be >= 2, got {ngram}"
    if heads <= 0:
        return "heads_per_ngram", "heads_per_ngram must be positive"
    if embed <= 0:
        return "ple_embed_dim", f"ple_embed_dim must be positive, got {embed}"
    if embed % ((ngram - 1) * heads):
        return "ple_embed_dim", (
            f"ple_embed_dim must be divisible by total ngram heads: {embed} % {(ngram - 1) * heads} != 0"
        )
    n = num_layers(f)
    ids = f.get("ple_layer_ids") or []
    invalid = [i for i in ids if isinstance(i, int) and not 1 <= i <= n]
    if invalid:
        return (
            "ple_layer_ids",
            f"ple_layer_ids are 1-based and must refer to an existing layer; got {invalid} for {n} layers",
        )
    if f.get("indexer_n_heads") is not None:
        budget, ratio = f.integer("indexer_budget", minimum=1), f.integer("indexer_compress_ratio", minimum=1)
        if budget / ratio not in QSA_OWN_CLASS_RATIOS:
            got = budget // ratio if budget % ratio == 0 else budget / ratio
            return (
                "indexer_budget",
                f"QSA requires indexer_budget / indexer_compress_ratio to be 512 or 2048, got {got}",
            )
    return None


def _hf_class_refusal(f: ConfigFields) -> tuple[str, str] | None:
    """transformers' ``Qwen4ExpTextConfig.validate_architecture`` (0.32 on), the checks a config
    without QSA and PLE layers meets: (field, its words), or ``None``."""
    gate = f.get("output_gate_type") or f.get("hidden_act") or "silu"
    experts, per_tok = f.integer("num_experts"), f.integer("num_experts_per_tok")
    if gate not in ("sigmoid", "silu"):
        return "output_gate_type", f"Unsupported Qwen4-Exp output gate activation: {gate}"
    if experts <= 0:
        return "num_experts", f"num_experts must be > 0, got {experts}"
    if not 0 < per_tok <= experts:
        return "num_experts_per_tok", "num_experts_per_tok must be in [1, num_experts]"
    if f.integer("moe_intermediate_size") <= 0 or f.integer("shared_expert_intermediate_size") <= 0:
        return "moe_intermediate_size", "moe_intermediate_size and shared_expert_intermediate_size must be > 0"
    if f.get("indexer_n_heads") is not None:
        return _hf_class_qsa_refusal(f)
    return None


def _hf_class_qsa_refusal(f: ConfigFields) -> tuple[str, str] | None:
    """transformers' QSA checks (``validate_architecture``, 0.32 on), every field given: one
    index KV head, a budget the ratio divides, the attention's rotary dims within the index head."""
    if f.integer("indexer_kv_heads") != 1:
        return "indexer_kv_heads", "Qwen4-Exp QSA requires indexer_kv_heads=1."
    if f.integer("indexer_budget") % f.integer("indexer_compress_ratio"):
        return "indexer_budget", "indexer_budget must be divisible by indexer_compress_ratio."
    rope = f.get("rope_parameters") or {}
    factor = rope.get("partial_rotary_factor", 1.0) if isinstance(rope, dict) else 1.0
    head_dim = (
        f.integer("head_dim")
        if f.get("head_dim") is not None
        else f.integer("hidden_size") // f.integer("num_attention_heads")
    )
    rotary = int(head_dim * factor)
    if rotary > f.integer("indexer_head_dim"):
        return (
            "indexer_head_dim",
            "Qwen4-Exp attention RoPE dimensions must fit the QSA index head: "
            f"rotary_dim={rotary}, indexer_head_dim={f.integer('indexer_head_dim')}.",
        )
    return None


def _ple_refusal(f: ConfigFields, hf_types: list[str]) -> tuple[str, str] | None:
    """transformers' ``Qwen4ExpTextConfig.validate_architecture`` (0.32 on) on PLE layers, after
    its other checks: (field, its words), or ``None``. ``hf_types``: the layer types that class
    reads."""
    ids = sorted(set(f.get("ple_layer_ids") or []))
    if not ids:
        return None
    heads = (f.integer("ngram_size") - 1) * f.integer("heads_per_ngram")
    embed = f.integer("ple_embed_dim") if f.get("ple_embed_dim") is not None else f.integer("hidden_size")
    if heads <= 0 or embed <= 0 or embed % heads:
        return "ple_embed_dim", (
            "ple_embed_dim and the total number of n-gram heads must be positive, and ple_embed_dim must be "
            f"divisible by the number of heads: {embed} % {heads} != 0."
        )
    n = len(hf_types)
    outside = [i for i in ids if i < 1 or i > n]
    if outside:
        return "ple_layer_ids", f"ple_layer_ids must contain one-indexed ids in [1, {n}], got {outside}."
    other = [i for i in ids if hf_types[i - 1] != "linear_attention"]
    if other:
        return (
            "ple_layer_ids",
            f"Qwen4-Exp PLE is only supported on linear_attention layers, got PLE on layers {other}.",
        )
    eos = f.get("eos_token_id")
    if eos is None or eos == []:
        return "eos_token_id", "eos_token_id must be set when Qwen4-Exp PLE layers are enabled."
    return None


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """The plain layout's geometry.

    :raises InputError: a QSA field missing, a layer type other than
        :data:`PLAIN_LAYER_TYPES`, or ``hc_count`` <= 1 (both config classes refuse it)."""
    qsa = _qsa(f)
    n = num_layers(f)
    types = layer_types(f, n)
    hf_class_kinds = None
    hf_types = types
    if types is None:
        # vLLM's Qwen3NextConfig: every 4th layer; transformers' class reads the interval
        types = ["linear_attention" if (i + 1) % 4 else "full_attention" for i in range(n)]
        hf_every = f.integer("full_attention_interval", minimum=1) if f.has("full_attention_interval") else 4
        hf_types = ["linear_attention" if (i + 1) % hf_every else "full_attention" for i in range(n)]
        if hf_every != 4:
            hf_class_kinds = tuple(LAYER_TYPE_NAMES[t] for t in hf_types)
    other = sorted(set(types) - set(PLAIN_LAYER_TYPES))
    if other:
        raise InputError(
            f.source,
            f.where("layer_types"),
            f"Qwen4-Exp layer types {other} are not modelled (only {' / '.join(PLAIN_LAYER_TYPES)}: the plain layout)",
        )
    hc = f.integer("hc_count")
    if hc <= 1:
        raise InputError(f.source, f.where("hc_count"), f"Qwen4Exp requires hc_count > 1, got {hc}")
    ple = ple_layers(f, n)
    gdn = gated_delta_net(f)
    extra = Qwen4ExpExtra(
        ple_state_rows=(f.integer("ple_conv_kernel_size", minimum=1) - 1) * f.integer("ngram_size", minimum=1),
        ple_state_width=f.integer("hidden_size") * hc,
        layer_kinds_hf_class=hf_class_kinds,
        own_class_refusal=_own_class_refusal(f),
        hf_class_refusal=_hf_class_refusal(f) or _ple_refusal(f, hf_types or types),
        qsa=qsa,
        ple_layers=ple,
    )
    model = geometry(
        f,
        architecture,
        "qwen4_exp",
        tuple(LAYER_TYPE_NAMES[t] for t in types),
        heads=attention_heads(f),
        gdn=gdn,
        hybrid_class=True,
        # vLLM's own Qwen4ExpTextConfig keeps layer_types (full_attention names; for_release: from 0.32
        # transformers' class names them indexed_attention, which ModelConfig.is_hybrid never counts)
        hf_layer_types=architecture != WRAPPER_ARCH,
        family_extra=extra,
        tower_heads=_tower_heads(f, architecture),
    )
    if architecture == WRAPPER_ARCH:  # its text model is language_model.model (recorded on 0.33.0)
        return model.evolve(layer_prefix=WRAPPER_LAYER_PREFIX)
    return model


def _tower_heads(f: ConfigFields, architecture: str) -> tuple[tuple[str, int], ...]:
    """The wrapper's Qwen3-VL vision tower (``Qwen3_VisionTransformer``) splits its attention heads
    across tensor-parallel ranks (``vision_config.num_heads``, ``Qwen3VLVisionConfig``'s default 16).

    :raises InputError: a head count that is not a positive integer."""
    if architecture != WRAPPER_ARCH:
        return ()
    vision = f.root.get("vision_config")
    heads = (vision if isinstance(vision, dict) else {}).get("num_heads", VISION_HEADS_DEFAULT)
    if isinstance(heads, bool) or not isinstance(heads, int) or heads <= 0:
        raise InputError(f.source, "vision_config.num_heads", f"must be a positive integer, got {heads!r}")
    return (("vision_config.num_heads", heads),)


def for_release(model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
    """From 0.32 transformers' ``Qwen4ExpTextConfig`` reads the file (switch
    ``qwen3_next_hf_config_class``): its layer pattern, and its ``layer_types`` name attention
    layers ``indexed_attention`` (no ``layer_types`` that ``ModelConfig.is_hybrid`` counts as
    all attention: ``hf_layer_types`` off)."""
    extra = extra_of(model, Qwen4ExpExtra)
    if rules.qwen3_next_hf_config_class and extra is not None and extra.layer_kinds_hf_class is not None:
        model = replace(model, layer_kinds=extra.layer_kinds_hf_class)
    if rules.qwen3_next_hf_config_class:
        model = model.evolve(hf_layer_types=False)
    if extra is not None and extra.ple_layers and rules.version in PLE_RELEASES:
        model = with_ple_layers(model, extra.ple_layers)
    return model


def with_ple_layers(model: ModelGeometry, ple: tuple[int, ...]) -> ModelGeometry:
    """``model`` with a :data:`LayerKind.PLE` cache before the mixer of each decoder layer of
    ``ple`` (``Qwen4ExpDecoderLayer.__init__`` builds ``self.ple`` first: its spec comes first in
    the runner's layer order), named ``<layer>.ple``; ``decoder_layers`` maps every cache to its
    decoder layer (pipeline stages split decoder layers)."""
    prefix = model.naming.layer_prefix
    kinds: list[LayerKind] = []
    names: list[str] = []
    decoder: list[int] = []
    for i, kind in enumerate(model.layer_kinds):
        if i in ple:
            kinds.append(LayerKind.PLE)
            names.append(f"{prefix}.{i}.ple")
            decoder.append(i)
        kinds.append(kind)
        names.append(model.layer_name(i))
        decoder.append(i)
    return model.evolve(layer_kinds=tuple(kinds), layer_names=tuple(names), decoder_layers=tuple(decoder))


def verify_release(model: ModelGeometry, rules: VersionRules) -> None:
    """What the release's config class refuses (:class:`Qwen4ExpExtra`: vLLM's own class on
    0.29-0.31, transformers' from 0.32, switch ``qwen3_next_hf_config_class``).

    :raises InputError: naming the field and the config class's words; PLE layers on a release
        other than :data:`PLE_RELEASES`."""
    extra = extra_of(model, Qwen4ExpExtra)
    if extra is None:
        return
    if extra.ple_layers and rules.version not in PLE_RELEASES:
        raise InputError(
            model.source,
            "ple_layer_ids",
            f"Qwen4-Exp's layers {[i + 1 for i in extra.ple_layers]} {_WHY_PLE}, not {rules.version}",
        )
    refusal = extra.hf_class_refusal if rules.qwen3_next_hf_config_class else extra.own_class_refusal
    if refusal is not None:
        raise InputError(model.source, refusal[0], f"{refusal[1]} (Qwen4ExpTextConfig)")


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """vLLM's config hook (``Qwen4ExpForConditionalGenerationConfig``, 0.29.0-0.33.0) refuses any
    drafter but MTP and n-gram; the MTP drafter is refused by name; PLE layers refuse pipeline
    parallelism (``Qwen4ExpNGramEmbedding``, recorded on 0.33.0).

    :raises InputError: ``--speculative-config`` method other than ``mtp`` / ``ngram`` /
        ``ngram_gpu`` (vLLM's NotImplementedError), or ``mtp``; PLE layers under
        ``--pipeline-parallel-size`` > 1."""
    method = args.speculative_method
    if method is not None and method not in SPECULATIVE_METHODS:
        raise InputError(
            "--speculative-config",
            method,
            "Qwen4Exp speculative decoding supports only its native MTP checkpoint and linear n-gram proposers "
            "(vLLM's NotImplementedError)",
        )
    extra = extra_of(model, Qwen4ExpExtra)
    if extra is not None and extra.ple_layers and args.pipeline_parallel_size > 1:
        raise InputError(
            "--pipeline-parallel-size",
            str(args.pipeline_parallel_size),
            "Qwen4Exp N-gram PLE embedding requires pipeline_parallel_size=1 because non-first pipeline ranks do "
            "not receive the raw input_ids it needs (vLLM's NotImplementedError)",
        )
    if method is not None and method.endswith("mtp"):
        raise InputError(
            "--speculative-config",
            method,
            f"{model.architecture}'s MTP drafter (Qwen4ExpMTP: its layers on the hyper-connection stream) is not "
            "modelled",
        )
    return args


def alignment_mamba_pages(model: ModelGeometry, args: EngineArgs, conv_dtype: str) -> tuple[int, ...]:
    """The PLE short-convolution state's page (bytes), which ``Platform._align_hybrid_block_size``
    takes the larger of with the Gated DeltaNet state's (``get_mamba_specs_from_config``), PLE
    layers or not: ``(rows + num_speculative_tokens) * hidden_size * hc_count`` elements of the
    convolution state's dtype, TP-replicated (``short_conv_state_shape`` with ``tp_world_size=1``).

    :param conv_dtype: the convolution state's torch dtype (``MambaStateDtypeCalculator``:
        ``--mamba-cache-dtype``, else the model's).
    """
    extra = extra_of(model, Qwen4ExpExtra)
    if extra is None:
        return ()
    rows = extra.ple_state_rows + args.num_speculative_tokens
    return (rows * extra.ple_state_width * dtype_bytes(conv_dtype),)


def side_mamba_states(
    model: ModelGeometry, args: EngineArgs, conv_dtype: str
) -> dict[LayerKind, tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]]:
    """The PLE layers' state (``Qwen4ExpPLELayer.get_state_shape`` / ``get_state_dtype``,
    0.33.0): one ``(rows + num_speculative_tokens, hidden_size * hc_count)`` convolution state
    (``short_conv_state_shape`` with ``tp_world_size=1``) of ``conv_dtype``
    (``short_conv_state_dtype``: ``--mamba-cache-dtype``, else the model's), where the model
    has PLE layers.

    :param conv_dtype: the convolution state's torch dtype."""
    extra = extra_of(model, Qwen4ExpExtra)
    if extra is None or LayerKind.PLE not in model.kinds:
        return {}
    rows = extra.ple_state_rows + args.num_speculative_tokens
    return {LayerKind.PLE: (((rows, extra.ple_state_width),), (conv_dtype,))}


def built_towers(model: ModelGeometry, args: EngineArgs) -> ModelGeometry:
    """The wrapper without its vision tower under ``--language-model-only``: its model class
    (``Qwen4ExpForConditionalGeneration.__init__``, 0.29.0-0.33.0) then puts a
    ``StageMissingLayer`` in the tower's place and never builds ``Qwen3_VisionTransformer``, so
    tensor parallelism need not divide ``vision_config.num_heads``. A zero
    ``--limit-mm-per-prompt`` for images and videos does not: the tower is built on the meta
    device (``_mark_tower_model``) and asserts as without it (both recorded,
    ``tests/fidelity/data/wrappers/``).

    :returns: ``model`` with no tower heads, or ``model`` itself."""
    if args.language_model_only and model.parallel.tower_heads:
        return model.evolve(tower_heads=())
    return model


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """The wrapper's vision tower: tensor parallelism must divide its heads (``dense.verify``).

    :raises InputError: naming ``vision_config.num_heads``."""
    dense_verify(model, tensor_parallel_size)


def kv_cache_layout(model: ModelGeometry) -> str:
    """QSA layers' caches take the repeat-pattern packing (0.32.0, 0.33.0) (``"repeat-packed"``: their pages
    differ from the Gated DeltaNet states'); the plain layout vLLM's groups."""
    extra = extra_of(model, Qwen4ExpExtra)
    return "repeat-packed" if extra is not None and extra.qsa is not None else "grouped"


def side_cache_specs(
    model: ModelGeometry,
    args: EngineArgs,
    rules: VersionRules,
    model_dtype: str,
    layers: list[tuple[str, LayerSpec]],
) -> dict[str, LayerSpec]:
    """Every cache layer of a QSA model in vLLM's order (``static_forward_context``): each QSA
    layer's ``<layer>.self_attn.indexer.raw_key_cache`` (the ring) and ``.compressed_key_cache``
    before its ``.self_attn.attn`` (the layer's own KV, as ``layers`` has it, with the Gated
    DeltaNet states laid out by the hybrid alignment).

    Ring: ``CircularBufferSpec`` of ``round_up(ratio + num_speculative_tokens, ratio)`` tokens,
    one bfloat16 head of :func:`ring_head_size` (``QSAKeyStateCache.get_kv_cache_spec``).
    Compressed keys: ``MLAAttentionSpec`` of the cache block, one head of ``indexer_head_dim``
    bfloat16, ``tokens_per_state`` the ratio (``QSACompressedKeyCache``).

    :raises InputError: a release other than :data:`QSA_RELEASES`; what vLLM refuses of a QSA
        layer (a model dtype other than bfloat16, a KV cache dtype outside :data:`QSA_KV_DTYPES`,
        context parallelism, a block the ratio or the ring does not divide); pipeline parallelism
        (not modelled: recorded refused where a stage holds no QSA layer).
    """
    extra = extra_of(model, Qwen4ExpExtra)
    assert extra is not None and extra.qsa is not None
    qsa, arch, version = extra.qsa, model.architecture, rules.version
    if model_dtype != "bfloat16":
        raise InputError("--dtype", model_dtype, f"{arch}: NotImplementedError: Qwen4Exp QSA currently requires BF16")
    dtype = args.kv_cache_dtype or "auto"
    if version in QSA_BF16_ONLY_RELEASES and dtype not in ("auto", "bfloat16"):
        raise InputError(
            "--kv-cache-dtype", dtype, f"{arch}: NotImplementedError: Qwen4Exp QSA requires a BF16 main KV cache"
        )
    if dtype not in QSA_KV_DTYPES:
        raise InputError(
            "--kv-cache-dtype",
            dtype,
            f"{arch}: NotImplementedError: Qwen4Exp QSA requires a BF16 or FP8-e4m3 main KV cache",
        )
    if args.decode_context_parallel_size > 1:
        raise InputError(
            "--decode-context-parallel-size",
            str(args.decode_context_parallel_size),
            f"{arch}: NotImplementedError: Qwen4Exp QSA does not support context parallelism",
        )
    if version not in QSA_RELEASES:
        raise InputError(
            "--vllm-version",
            version,
            f"{arch}'s QSA layers on vLLM {version} are not modelled: vLLM {version} packs their index-key rings "
            "(CircularBufferSpec) and compressed keys (MLAAttentionSpec) beside the Gated DeltaNet states by rules "
            f"dryboot verified on {', '.join(sorted(QSA_RELEASES))} only",
        )
    if args.pipeline_parallel_size > 1:
        raise InputError(
            "--pipeline-parallel-size",
            str(args.pipeline_parallel_size),
            f"{arch}'s QSA layers under pipeline parallelism are not modelled (recorded: a stage without QSA layers "
            "and one with them report different layouts, AssertionError: Workers disagree on supported KV cache "
            "layouts; a QSA layer takes block-outermost layouts only)",
        )
    ratio = qsa.compress_ratio
    capacity = cdiv(ratio + args.num_speculative_tokens, ratio) * ratio
    out: dict[str, LayerSpec] = {}
    for name, spec in layers:
        if isinstance(spec, AttentionSpec) and name.endswith(".self_attn.attn"):
            block = spec.block_size
            if block % ratio:
                raise InputError(
                    "--block-size",
                    str(block),
                    f"{arch}: ValueError: QSA cache block size must be divisible by the compression ratio ({ratio})",
                )
            if block % capacity:
                raise InputError(
                    "--block-size",
                    str(block),
                    f"{arch}: AssertionError: QSA ring capacity {capacity} must divide the attention block size "
                    f"{block}",
                )
            prefix = name[: -len("attn")] + "indexer."
            out[prefix + "raw_key_cache"] = _state_spec(LayerKind.QSA_RING, capacity, ring_head_size(qsa), 1)
            out[prefix + "compressed_key_cache"] = _state_spec(LayerKind.QSA_COMPRESSED, block, qsa.head_dim, ratio)
        out[name] = spec
    return out


#: bfloat16 slots one int64 position takes, and the positions a row keeps under multimodal RoPE
#: (``QSAKeyStateCache``: ``_BF16_PER_INT64``, ``_NUM_ROPE_AXES``)
BF16_PER_INT64 = 4
ROPE_AXES = 3


def ring_head_size(qsa: QSAIndexer) -> int:
    """A ring row's width in bfloat16 elements (``QSAKeyStateCache.__init__``): ``indexer_head_dim``,
    or under multimodal RoPE (``uses_mrope``: the row keeps its three int64 positions too)
    ``round_up(indexer_head_dim, 4) + 3 * 4``."""
    if not qsa.mrope:
        return qsa.head_dim
    return cdiv(qsa.head_dim, BF16_PER_INT64) * BF16_PER_INT64 + ROPE_AXES * BF16_PER_INT64


def _state_spec(kind: LayerKind, block: int, head_dim: int, ratio: int) -> AttentionSpec:
    """A QSA side cache's spec: one bfloat16 head of ``head_dim``, no V, ``ratio`` tokens a row."""
    return AttentionSpec(
        layer_kind=kind,
        block_size=block,
        num_kv_heads=1,
        head_size=head_dim,
        head_size_v=0,
        torch_dtype="bfloat16",
        kv_cache_dtype="bfloat16",
        quant_mode=KVQuantMode.NONE,
        content_bytes=head_dim * dtype_bytes("bfloat16"),
        backend="QSA_STATE",
        indexes_kv_by_block_stride=False,
        compress_ratio=ratio,
    )
