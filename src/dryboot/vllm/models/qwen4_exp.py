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

PLE layers (``ple_layer_ids``, 1-based decoder layers; vLLM 0.30.0-0.33.0): each such decoder layer also
builds a ``Qwen4ExpPLELayer`` before its mixer, whose cache is one more ``MambaSpec`` (mamba type
``SHORT_CONV``, :data:`LayerKind.PLE`, at ``<layer>.ple``): a short-convolution state of
``(ple_conv_kernel_size - 1) * ngram_size + num_speculative_tokens`` rows of ``hc_count *
hidden_size``, TP-replicated, in the convolution state's dtype (:func:`side_mamba_states`), padded
to the common page like the Gated DeltaNet states; it groups apart (its own spec). Recorded on
0.30.0-0.33.0 (``tests/fidelity/data/qwen4-ple/``; 0.30 / 0.31's own config class puts PLE on any
layer it names); 0.29.0 refused by name (not recorded).

Refused by name: QSA layers (``indexer_n_heads`` and the other ``indexer_*`` fields), PLE layers
on releases other than :data:`PLE_RELEASES`, layer types other than ``linear_attention`` /
``full_attention``, and the MTP drafter (``--speculative-config`` method ``mtp``: ``Qwen4ExpMTP``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.dtypes import dtype_bytes
from dryboot.vllm.models.common import LAYER_TYPE_NAMES, attention_heads, geometry, layer_types, num_layers
from dryboot.vllm.models.dense import verify as dense_verify
from dryboot.vllm.models.qwen3_next import GDN_DEFAULTS, gated_delta_net

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
#: the multimodal wrapper (its text model is this layout under ``language_model``)
WRAPPER_ARCH = "Qwen4ExpForConditionalGeneration"
#: ``Qwen3VLVisionConfig``'s ``num_heads`` (the wrapper's vision tower)
VISION_HEADS_DEFAULT = 16

#: the QSA fields (``qwen4_exp/config.py`` ``_QSA_CONFIG_FIELDS``); with ``indexer_n_heads`` set the
#: attention layers are ``Qwen4ExpQSAAttention``
QSA_FIELDS = ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget", "indexer_compress_ratio")

#: the layer types every release builds as this layout's layers
PLAIN_LAYER_TYPES = ("linear_attention", "full_attention")

_WHY_QSA = (
    "are QSA layers (Qwen4ExpQSAAttention): each keeps a ring of raw index keys (CircularBufferSpec) and a "
    "compressed key cache (MLAAttentionSpec with tokens_per_state) beside its KV cache, which dryboot does not model"
)
#: the releases whose PLE layers are recorded against vLLM (``tests/fidelity/data/qwen4-ple/``)
PLE_RELEASES = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")
_WHY_PLE = (
    "are PLE layers (Qwen4ExpPLELayer: a TP-replicated short-convolution state hc_count x hidden_size wide, a "
    "second MambaSpec, beside the layer's own cache), recorded on vLLM 0.30.0-0.33.0 only"
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
    #: the decoder layers (0-based) with a PLE layer (``layer_idx + 1`` in ``ple_layer_ids``)
    ple_layers: tuple[int, ...] = ()


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def _refuse_qsa(f: ConfigFields) -> None:
    """QSA layers, named.

    :raises InputError: a QSA field set."""
    qsa = [k for k in QSA_FIELDS if f.get(k) is not None]
    if qsa:
        raise InputError(
            f.source,
            f.where(qsa[0]),
            f"Qwen4-Exp's attention layers with {', '.join(qsa)} set {_WHY_QSA} (its plain layout, no indexer_* "
            "field, is planned)",
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

    :raises InputError: QSA or PLE layers, a layer type other than :data:`PLAIN_LAYER_TYPES`, or
        ``hc_count`` <= 1 (both config classes refuse it)."""
    _refuse_qsa(f)
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
    gdn = gated_delta_net(f)
    extra = Qwen4ExpExtra(
        ple_state_rows=(f.integer("ple_conv_kernel_size", minimum=1) - 1) * f.integer("ngram_size", minimum=1),
        ple_state_width=f.integer("hidden_size") * hc,
        layer_kinds_hf_class=hf_class_kinds,
        own_class_refusal=_own_class_refusal(f),
        hf_class_refusal=_hf_class_refusal(f) or _ple_refusal(f, hf_types or types),
        ple_layers=ple_layers(f, n),
    )
    model = geometry(
        f,
        architecture,
        "qwen4_exp",
        tuple(LAYER_TYPE_NAMES[t] for t in types),
        heads=attention_heads(f),
        gdn=gdn,
        hybrid_class=True,
        family_extra=extra,
        tower_heads=_tower_heads(f, architecture),
    )
    if architecture == WRAPPER_ARCH:
        # the wrapper's language model is its language_model attribute (recorded on 0.33.0)
        model = model.evolve(layer_prefix="language_model.model.layers")
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
    ``qwen3_next_hf_config_class``): its layer pattern."""
    extra = extra_of(model, Qwen4ExpExtra)
    if rules.qwen3_next_hf_config_class and extra is not None and extra.layer_kinds_hf_class is not None:
        model = replace(model, layer_kinds=extra.layer_kinds_hf_class)
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
