"""MuseGlimmer (``MuseGlimmerForCausalLM``, and ``MuseGlimmerForConditionalGeneration``, the same
class): iRoPE layers, each a full-attention or a sliding-window KV cache, read per release.

Mirrors ``vllm/model_executor/models/muse_glimmer.py`` (the language model reads
``config.text_config`` when there is one, else the config itself):

* every layer is one ``Attention`` of ``num_attention_heads`` heads, ``num_key_value_heads`` KV heads
  and head size ``config.head_dim``;
* which layers slide is decided differently by release (switch ``muse_glimmer_layer_types``):

  - 0.28.0-0.30.0 read the config with vLLM's own ``MuseGlimmerTextConfig``
    (``transformers_utils/configs/muse_glimmer.py``) and slide the RoPE layers,
    ``no_rope_layers[i] == 1`` (absent: every 4th layer counted back from the last is NoPE, the
    others RoPE); ``max_position_embeddings`` defaults to 16,384;
  - 0.33.0 reads it with transformers' ``MuseGlimmerTextConfig`` and slides the
    ``sliding_attention`` layers of ``layer_types`` (absent: every 4th layer counted back from the
    last is full); ``max_position_embeddings`` defaults to 131,072;

* a layer that does not slide takes vLLM's model-level window (``CacheConfig.sliding_window``),
  set only when every ``layer_types`` entry is ``sliding_attention`` (both config classes write
  ``layer_types`` when a file has none; vLLM 0.28's derives it from ``no_rope_layers``).

0.27.1 has no such model class or config class (vLLM refuses the ``model_type``); 0.31.0 and 0.32.0
read it as 0.28.0-0.30.0 do (recorded: ``tests/fidelity/data/release-architectures/``).

Muse Spark (``MuseSparkForConditionalGeneration``, vLLM 0.33.0's ``vllm/models/muse_spark``: its
``MuseSpark1xForCausalLM`` text stack under NaViT vision and waveform audio towers, which keep no KV
cache) lays out its layers as 0.33.0 lays out MuseGlimmer's: one ``Attention`` per layer of
``num_attention_heads`` heads, ``num_key_value_heads`` KV heads and ``head_dim``, sliding
``sliding_window`` where ``layer_types[i]`` is ``sliding_attention`` (no window: full). Its config is
vLLM's own ``MuseSparkConfig`` (``transformers_utils/configs/muse_spark.py``), whose text, vision and
audio classes have no defaults (``has_no_defaults_at_init``): every key the model reads must be in the
file, and the classes' checks (SiLU, bias-free attention, default RoPE, no shared experts, one
``layer_types`` / ``mlp_layer_types`` / ``layer_rope_theta`` entry per layer, the towers' widths) are
refusals. Only 0.33.0's registry has the architecture (:func:`verify_release`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.models.common import MAX_LAYERS, geometry, layer_types, window
from dryboot.vllm.models.dense import FULL, SLIDING, Decoder, heads
from dryboot.vllm.versions import VersionRules, known_model_types

if TYPE_CHECKING:
    from dryboot.vllm.engine_args import EngineArgs

#: the config classes' defaults for the keys that change the cache (both releases' classes agree
#: on these); ``max_position_embeddings`` differs and is set per reading
_DEFAULTS: dict[str, Any] = {
    "num_hidden_layers": 52,
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "hidden_size": 6656,
    "sliding_window": 2048,
}
#: transformers' ``MuseGlimmerTextConfig`` (0.33.0) and vLLM's own (0.28.0-0.30.0)
_MAX_POSITIONS_HF, _MAX_POSITIONS_VLLM = 131072, 16384
_SPEC = Decoder("muse_glimmer.py", head_dim="required")


@dataclass(frozen=True)
class NoRopeReading(FamilyExtra):
    """The model as vLLM's own config class and the 0.28.0-0.30.0 model class read the file
    (sliding layers from ``no_rope_layers``)."""

    model: ModelGeometry


def defaults(f: ConfigFields) -> dict[str, Any]:
    """The config class's defaults: MuseGlimmer's, none for Muse Spark (``has_no_defaults_at_init``)."""
    if f.root.get("model_type") == _SPARK_MODEL_TYPE:
        return {}
    return {**_DEFAULTS, "max_position_embeddings": _MAX_POSITIONS_HF}


def _every_fourth_from_last(n: int) -> list[bool]:
    """Whether layer ``i`` is the NoPE / full one: every 4th counted back from the last."""
    return [(n - 1 - i) % 4 == 0 for i in range(n)]


def _no_rope_layers(f: ConfigFields, n: int) -> list[int]:
    """``no_rope_layers`` as vLLM's ``MuseGlimmerTextConfig`` gives it (one int per layer).

    :raises InputError: not a list of ``n`` integers (not modelled).
    """
    value = f.get("no_rope_layers")
    if value is None:
        return [0 if nope else 1 for nope in _every_fourth_from_last(n)]
    if not isinstance(value, list) or len(value) != n or not all(type(x) is int for x in value):
        raise InputError(f.source, f.where("no_rope_layers"), f"must list one integer per layer ({n})")
    return list(value)


def _kinds(slides: list[bool], types: list[str], sw: int | None) -> tuple[LayerKind, ...]:
    model_window = sw is not None and all(t == SLIDING for t in types)
    return tuple(LayerKind.SLIDING if sw and (s or model_window) else LayerKind.FULL for s in slides)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """The model as 0.33.0 reads it, with 0.28.0-0.30.0's reading as :class:`NoRopeReading`.

    :raises InputError: a ``muse_glimmer`` config without a ``text_config`` giving
        ``num_hidden_layers`` (not modelled), a missing or malformed field, ``hidden_size`` not a multiple of the heads
        (transformers' ``validate_architecture``), KV heads that do not divide the heads; for Muse
        Spark, what :func:`read_spark` refuses.
    """
    if architecture in SPARK_ARCHITECTURES or f.root.get("model_type") == _SPARK_MODEL_TYPE:
        return read_spark(f, architecture)
    if f.root.get("model_type") == "muse_glimmer" and not f.prefix:
        # the multimodal config without a text_config holding the layer count: vLLM 0.28's class
        # moves flat text keys into its text config, transformers' builds a default one
        raise InputError(
            f.source,
            "text_config",
            "a muse_glimmer config whose text model is not a text_config with num_hidden_layers: not modelled",
        )
    n = f.integer("num_hidden_layers", maximum=MAX_LAYERS)
    attn = heads(f, _SPEC)
    hidden = f.integer("hidden_size")
    if hidden % attn[0]:
        raise InputError(
            f.source,
            f.where("hidden_size"),
            f"The hidden size ({hidden}) is not a multiple of the number of attention heads ({attn[0]}) "
            "(MuseGlimmerTextConfig refuses it)",
        )
    sw = window(f)
    given = layer_types(f, n)
    if given is not None and not set(given) <= {SLIDING, FULL}:
        raise InputError(f.source, f.where("layer_types"), f"{architecture} layers are {SLIDING} or {FULL}")
    # transformers' class (0.33.0)
    types = given or [FULL if full else SLIDING for full in _every_fourth_from_last(n)]
    hf = geometry(
        f, architecture, "muse_glimmer", _kinds([t == SLIDING for t in types], types, sw), heads=attn, sliding_window=sw
    )
    # vLLM's own class (0.28.0-0.30.0): its defaults where the file leaves a key out
    rope = _no_rope_layers(f, n)
    old_types = given or [FULL if r == 0 else SLIDING for r in rope]
    g = f.with_defaults({**_DEFAULTS, "max_position_embeddings": _MAX_POSITIONS_VLLM})
    old = geometry(
        g, architecture, "muse_glimmer", _kinds([r == 1 for r in rope], old_types, sw), heads=attn, sliding_window=sw
    )
    return replace(hf, family_extra=NoRopeReading(old))


def for_release(model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
    """``model`` as ``rules``' release reads it: ``layer_types`` (switch
    ``muse_glimmer_layer_types``) or ``no_rope_layers``.

    """
    extra = extra_of(model, NoRopeReading)
    if extra is None:
        return model
    return replace(model, family_extra=None) if rules.muse_glimmer_layer_types else extra.model


#: Muse Spark's architectures (vLLM 0.33.0's ``vllm/models/muse_spark``) and the ``model_type``
#: whose config class (vLLM's ``MuseSparkConfig``) they are built from
SPARK_ARCHITECTURES = ("MuseSparkForConditionalGeneration",)
_SPARK_MODEL_TYPE = "muse_spark"
#: each sub-config: its class, the keys vLLM's engine start reads from it (recorded on 0.33.0: without
#: any one, building the config or the model fails with AttributeError), and its checks
_SPARK_TEXT = (
    "MuseSparkTextConfig",
    (
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "max_position_embeddings",
        "rms_norm_eps",
        "tie_word_embeddings",
        "rope_parameters",
        "attention_bias",
        "sliding_window",
        "layer_types",
        "final_logit_softcapping",
        "qk_scale_factor",
        "output_multiplier",
        "post_norm_eps",
        "layer_rope_theta",
        "hidden_act",
        "moe_intermediate_size",
        "num_local_experts",
        "num_experts_per_tok",
        "num_shared_experts",
        "routed_scaling_factor",
        "moe_hidden_size",
        "mlp_layer_types",
        "residual_gate_temperature",
    ),
)
_SPARK_VISION = (
    "MuseSparkVisionConfig",
    (
        "patch_size",
        "pos_emb_height",
        "pos_emb_width",
        "num_attention_heads",
        "num_hidden_layers",
        "hidden_size",
        "intermediate_size",
        "hidden_act",
        "rope_parameters",
        "patch_temporal",
        "merge_size",
        "layer_norm_eps",
        "layer_types",
    ),
)
_SPARK_AUDIO = (
    "MuseSparkAudioConfig",
    (
        "patch_sizes",
        "hidden_sizes",
        "depths",
        "num_hidden_layers",
        "mlp_ratio",
        "conv_kernel_size",
        "hidden_act",
        "rms_norm_eps",
        "out_hidden_size",
    ),
)
_SPARK_SPEC = Decoder("vllm.models.muse_spark", head_dim="required")


def _spark_section(f: ConfigFields, key: str, spec: tuple[str, tuple[str, ...]]) -> dict[str, Any]:
    """``key``'s sub-config, every key its class has no default for present.

    :raises InputError: no such object ("Muse Spark requires an HF <key>"), or a key missing
        (vLLM: ``'<Class>' object has no attribute '<key>'``).
    """
    section = f.root.get(key)
    if not isinstance(section, dict):
        raise InputError(f.source, key, f"Muse Spark requires an HF {key} (MuseSparkConfig refuses the config)")
    cls, keys = spec
    for name in keys:
        if name not in section:
            raise InputError(
                f.source,
                f"{key}.{name}",
                f"'{cls}' object has no attribute '{name}' ({cls} has no defaults: vLLM fails without it)",
            )
    return section


def _spark_check(f: ConfigFields, ok: bool, where: str, message: str) -> None:
    """:raises InputError: ``message`` at ``where`` unless ``ok`` (a check of vLLM's config class)."""
    if not ok:
        raise InputError(f.source, where, f"{message} (vLLM's MuseSparkConfig refuses the config)")


def _per_layer(value: Any, n: int, allowed: set[str] | None = None) -> bool:
    """``value`` lists ``n`` entries (each in ``allowed`` when given)."""
    if not isinstance(value, list) or len(value) != n:
        return False
    return allowed is None or all(isinstance(v, str) and v in allowed for v in value)


def _spark_config(f: ConfigFields) -> None:
    """vLLM's ``MuseSparkConfig`` and its sub-configs' checks (``transformers_utils/configs/muse_spark.py``).

    :raises InputError: a missing sub-config or key, or a check the config class fails.
    """
    text = _spark_section(f, "text_config", _SPARK_TEXT)
    vision = _spark_section(f, "vision_config", _SPARK_VISION)
    audio = _spark_section(f, "audio_config", _SPARK_AUDIO)
    n = text["num_hidden_layers"]
    rope = text["rope_parameters"]
    _spark_check(
        f,
        text["hidden_act"] == "silu" and not text["attention_bias"],
        "text_config.hidden_act",
        "Muse Spark requires SiLU and bias-free attention",
    )
    _spark_check(
        f,
        isinstance(rope, dict) and rope.get("rope_type") == "default",
        "text_config.rope_parameters",
        "Unsupported Muse Spark text RoPE type",
    )
    _spark_check(
        f,
        not text["num_shared_experts"],
        "text_config.num_shared_experts",
        "Muse Spark shared experts are not supported",
    )
    for key, allowed in (("layer_types", {FULL, SLIDING}), ("mlp_layer_types", {"sparse", "dense"})):
        _layer_count(f, f"text_config.{key}", text[key], n)
        _spark_check(f, _per_layer(text[key], n, allowed), f"text_config.{key}", f"Invalid Muse Spark {key}")
    _spark_check(
        f,
        _per_layer(text["layer_rope_theta"], n),
        "text_config.layer_rope_theta",
        "Muse Spark requires one RoPE theta per layer",
    )
    vrope = vision["rope_parameters"]
    _spark_check(
        f, vision["hidden_act"] == "gelu", "vision_config.hidden_act", "Muse Spark requires GELU vision activations"
    )
    _spark_check(
        f,
        isinstance(vrope, dict) and vrope.get("rope_type") == "axial",
        "vision_config.rope_parameters",
        "Unsupported Muse Spark vision RoPE type",
    )
    _layer_count(f, "vision_config.layer_types", vision["layer_types"], vision["num_hidden_layers"])
    _spark_check(
        f,
        _per_layer(vision["layer_types"], vision["num_hidden_layers"], {FULL, "window_attention"}),
        "vision_config.layer_types",
        "Invalid Muse Spark vision attention types",
    )
    _spark_check(
        f, audio["hidden_act"] == "gelu", "audio_config.hidden_act", "Muse Spark requires GELU audio activations"
    )
    stages = [audio[k] for k in ("patch_sizes", "depths", "hidden_sizes")]
    _spark_check(
        f,
        all(isinstance(s, list) and len(s) == audio["num_hidden_layers"] for s in stages),
        "audio_config.num_hidden_layers",
        "Invalid Muse Spark audio stages",
    )
    out, projector = f.root.get("out_hidden_size"), f.root.get("projector_hidden_size")
    _spark_check(
        f,
        out is not None and projector is not None,
        "out_hidden_size",
        "Muse Spark requires vision projector dimensions",
    )
    _spark_check(
        f,
        f.root.get("projector_hidden_act", "gelu") == "gelu",
        "projector_hidden_act",
        "Muse Spark requires a GELU vision projector",
    )
    merged = vision["hidden_size"] * vision["merge_size"] ** 2 if _ints(vision, "hidden_size", "merge_size") else None
    _spark_check(f, out == merged, "out_hidden_size", "Muse Spark vision output must match patch merging")
    _spark_check(
        f,
        audio["out_hidden_size"] == text["hidden_size"],
        "audio_config.out_hidden_size",
        "Muse Spark audio output must match the text hidden size",
    )


def _layer_count(f: ConfigFields, where: str, value: Any, n: Any) -> None:
    """:raises InputError: ``value`` is a list whose length is not ``n`` (transformers' base class
    ``validate_layer_type`` refuses it first)."""
    if isinstance(value, list) and len(value) != n:
        name = where.rsplit(".", 1)[1]
        raise InputError(
            f.source,
            where,
            f"`num_hidden_layers` ({n}) must be equal to the number of `{name}` ({len(value)}) "
            "(transformers' validate_layer_type refuses the config)",
        )


def _ints(section: dict[str, Any], *keys: str) -> bool:
    return all(type(section[k]) is int for k in keys)


def read_spark(f: ConfigFields, architecture: str) -> ModelGeometry:
    """Muse Spark's text stack (``MuseSpark1xAttention``): a layer slides ``sliding_window`` where
    ``layer_types[i]`` is ``sliding_attention`` and the window is set, else it is full.

    :raises InputError: a ``model_type`` other than ``muse_spark`` with this architecture, or
        ``muse_spark`` with MuseGlimmer's (not modelled), a config vLLM's ``MuseSparkConfig``
        refuses (:func:`_spark_config`), a quantized checkpoint (not modelled), KV heads that do
        not divide the heads.
    """
    if f.root.get("model_type") == _SPARK_MODEL_TYPE:
        _spark_config(f)
    if architecture not in SPARK_ARCHITECTURES or f.root.get("model_type") != _SPARK_MODEL_TYPE or not f.prefix:
        raise InputError(
            f.source,
            "model_type",
            f"{architecture} with model_type {f.root.get('model_type')!r}: dryboot reads Muse Spark's layers only "
            f"from a {_SPARK_MODEL_TYPE} config's text_config (MuseSparkForConditionalGeneration): not modelled",
        )
    if f.given("quantization_config"):
        raise InputError(
            f.source,
            "quantization_config",
            "a quantized Muse Spark checkpoint is not modelled (its NVFP4 / fp8 MoE methods choose their kernels "
            "and refusals per GPU: muse_moe_runner.py)",
        )
    n = f.integer("num_hidden_layers", maximum=MAX_LAYERS)
    attn = heads(f, _SPARK_SPEC)
    sw = window(f)
    types = layer_types(f, n) or []
    return geometry(
        f, architecture, "muse_glimmer", _kinds([t == SLIDING for t in types], types, sw), heads=attn, sliding_window=sw
    )


def _spark_release_refusal(model: ModelGeometry, version: str) -> None:
    """Muse Spark is in 0.33.0's registry only. 0.28.0-0.30.0 read a ``muse_spark`` config with
    transformers' class and, their registry lacking the class, serve it through the Transformers
    modeling backend, whose engine start loads the checkpoint's tokenizer and processor
    (recorded on 0.28.0: vLLM fails without them); 0.27.1, 0.31.0 and 0.32.0 refuse the
    ``model_type`` before this is asked.

    :raises InputError: naming ``architectures``, on a release other than 0.33.0 that reads the
        ``model_type`` (the others are refused by it, later: ``config.resolve``).
    """
    known = known_model_types(version)
    if model.architecture in SPARK_ARCHITECTURES and version != "0.33.0" and (not known or _SPARK_MODEL_TYPE in known):
        raise InputError(
            model.source,
            "architectures",
            f"vLLM {version}'s registry has no {model.architecture} class: it serves the checkpoint through its "
            "Transformers modeling backend (TransformersMultiModalForCausalLM), whose engine start loads the "
            "checkpoint's tokenizer and processor (without them: Couldn't instantiate the backend tokenizer, "
            "recorded on 0.28.0): not modelled",
        )


def verify_release(model: ModelGeometry, rules: VersionRules) -> None:
    """What a release refuses while building the model: Muse Spark, but on 0.33.0
    (:func:`_spark_release_refusal`).

    :raises InputError: naming ``architectures``.
    """
    _spark_release_refusal(model, rules.version)


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """The flags Muse Spark's layers take on 0.33.0 (the only release that builds it), on Hopper:

    * its fused ``[Q, K, V, O-gate]`` projection (``MuseSpark1xQKVOGateParallelLinear``,
      ``muse_spark/common/layers.py``, every text layer) shards whole KV heads: it asserts that the
      ranks divide them (no KV-head padding);
    * on SM 9.x its bf16 MoE runs route-major Triton experts (``MuseSparkUnquantizedFusedMoE``,
      ``nvidia/muse_moe_runner.py``), which refuse data parallelism;
    * other GPUs take FlashInfer TRT-LLM experts whose routing checks (MiniMax2 classification) are
      not modelled; LoRA on the MoE is refused by the post-expert norm, and not modelled here.

    :raises InputError: naming the flag and vLLM's refusal, or what is not modelled.
    """
    if model.architecture not in SPARK_ARCHITECTURES or args.vllm_version != "0.33.0":
        return args
    gpu = args.device
    if gpu.capability[0] != 9:
        raise InputError(
            "--gpu",
            gpu.name,
            f"{model.source}: off Hopper, Muse Spark's MoE runs FlashInfer TRT-LLM experts whose routing checks "
            "(muse_moe_runner.py validate_deployment) are not modelled; dryboot plans it on SM 9.x",
        )
    kv = model.num_kv_heads
    if kv % args.tensor_parallel_size:
        raise InputError(
            "--tensor-parallel-size",
            str(args.tensor_parallel_size),
            f"{model.source}: KV-head padding is not supported for the fused QKV+O-gate projection: "
            f"total_num_kv_heads={kv}, tp_size={args.tensor_parallel_size} (vLLM's MuseSpark1xQKVOGateParallelLinear "
            "asserts it)",
        )
    if args.data_parallel_size != 1:
        raise InputError(
            "--data-parallel-size",
            str(args.data_parallel_size),
            f"{model.source}: MuseSpark1x Triton/Marlin currently requires DP1 and PCP1 (vLLM's route-major MoE "
            "experts on SM 9.x refuse data parallelism)",
        )
    if args.enable_lora:
        raise InputError(
            "--enable-lora", None, f"{model.source}: LoRA on Muse Spark (its post-expert-norm MoE) is not modelled"
        )
    return args
