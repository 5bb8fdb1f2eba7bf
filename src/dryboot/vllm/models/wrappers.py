"""Multimodal wrappers (and one alias) whose language model is an architecture another family
reads: vLLM builds the language model with ``init_vllm_registered_model`` on the text config, so
dryboot reads the text config with that architecture's family and keeps the wrapper's name.

Two tables: :data:`WRAPPERS` (the text config's ``architectures`` or ``model_type`` picks the
language model) and :data:`BUILT_AS` (the wrapper's model class names it itself).
:data:`TEXT_CONFIG_PATHS` says where a wrapper's text config lives when not ``text_config``.

The registry lists these wrappers, so this module cannot import it: the family that reads a
language model is looked up through the ``families`` mapping the registry passes to :func:`read`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from dryboot.errors import InputError, missing_field, not_positive_integer
from dryboot.vllm.config.hf import ConfigFields, ModelGeometry
from dryboot.vllm.distributed import NOT_SUPPORTS_PP, TOWER_NOT_SUPPORTS_PP, UNNAMED_TEXT_CONFIG_PP
from dryboot.vllm.models.dense import DECODERS
from dryboot.vllm.models.dense import verify as verify
from dryboot.vllm.versions import rules_for

if TYPE_CHECKING:
    from dryboot.vllm.engine_args import EngineArgs


class LanguageModelFamily(Protocol):
    """What a wrapper needs of the family that reads its language model."""

    def defaults(self, f: ConfigFields) -> dict[str, Any]: ...

    def read(self, f: ConfigFields, architecture: str) -> ModelGeometry: ...


#: The text models a wrapper may hand ``init_vllm_registered_model`` by its text config's
#: ``model_type`` alone (no ``architectures``): the causal-LM class of that ``model_type`` in vLLM's
#: registry, for the families dryboot plans. One rule for the wrappers of :func:`text_wrapper`.
TEXT_MODELS: dict[str, str] = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "ministral3": "Ministral3ForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
}


def text_wrapper(vllm_file: str, **own_types: str) -> tuple[str, dict[str, str]]:
    """A :data:`WRAPPERS` entry for a wrapper whose model class builds
    ``init_vllm_registered_model(hf_config=config.text_config)`` (vLLM picks the language model by
    the text config's ``architectures``, else its ``model_type``): any text model of
    :data:`TEXT_MODELS`; a text config without a ``model_type`` of its own is its config class's
    default, given per wrapper ``model_type`` (``own_types``: wrapper type -> default text type)."""
    return (vllm_file, {**TEXT_MODELS, **{own: TEXT_MODELS[text] for own, text in own_types.items()}})


#: multimodal wrapper -> (its vLLM file, text ``model_type`` -> the architecture vLLM builds as
#: its language model). The text config's ``architectures`` picks it when given (one of these),
#: else its ``model_type`` (the wrapper's own ``model_type`` stands for the config class's default
#: text model); any other language model is refused.
WRAPPERS: dict[str, tuple[str, dict[str, str]]] = {
    "PaliGemmaForConditionalGeneration": (
        "paligemma.py",
        {"gemma": "GemmaForCausalLM", "paligemma": "GemmaForCausalLM"},
    ),
    # LlavaConfig / LlavaNextConfig build text_config by its model_type (llama when absent); the
    # model class builds whatever text architecture that config names
    "LlavaForConditionalGeneration": (
        "llava.py",
        {
            "llama": "LlamaForCausalLM",
            "llava": "LlamaForCausalLM",
            "mistral": "MistralForCausalLM",
            "qwen2": "Qwen2ForCausalLM",
        },
    ),
    "LlavaNextForConditionalGeneration": (
        "llava_next.py",
        {
            "llama": "LlamaForCausalLM",
            "llava_next": "LlamaForCausalLM",
            "mistral": "MistralForCausalLM",
            "qwen2": "Qwen2ForCausalLM",
        },
    ),
    "Idefics3ForConditionalGeneration": ("idefics3.py", {"llama": "LlamaForCausalLM", "idefics3": "LlamaForCausalLM"}),
    "SmolVLMForConditionalGeneration": ("smolvlm.py", {"llama": "LlamaForCausalLM", "smolvlm": "LlamaForCausalLM"}),
    "InternVLForConditionalGeneration": (
        "interns1.py",
        {"qwen2": "Qwen2ForCausalLM", "internvl": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"},
    ),
    "Cohere2VisionForConditionalGeneration": (
        "cohere2_vision.py",
        {"cohere2": "Cohere2ForCausalLM", "cohere2_vision": "Cohere2ForCausalLM"},
    ),
    "Blip2ForConditionalGeneration": ("blip2.py", {"opt": "OPTForCausalLM", "blip-2": "OPTForCausalLM"}),
    "Qwen2AudioForConditionalGeneration": (
        "qwen2_audio.py",
        {"qwen2": "Qwen2ForCausalLM", "qwen2_audio": "Qwen2ForCausalLM"},
    ),
    "Exaone4_5_ForConditionalGeneration": (
        "exaone4_5.py",
        {"exaone4": "Exaone4ForCausalLM", "exaone4_5": "Exaone4ForCausalLM"},
    ),
    "PaddleOCRVLForConditionalGeneration": (
        "paddleocr_vl.py",
        {"paddleocr_vl_text": "Ernie4_5ForCausalLM", "paddleocr_vl": "Ernie4_5ForCausalLM"},
    ),
    "GraniteSpeechForConditionalGeneration": (
        "granite_speech.py",
        {"granite": "GraniteForCausalLM", "granite_speech": "GraniteForCausalLM"},
    ),
    "GraniteSpeechPlusForConditionalGeneration": (
        "granite_speech_plus.py",
        {"granite": "GraniteForCausalLM", "granite_speech_plus": "GraniteForCausalLM"},
    ),
    # OvisConfig (vLLM's) builds llm_config by its model_type as text_config
    "Ovis": (
        "ovis.py",
        {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"},
    ),
    # QianfanOCRConfig (vLLM's) builds text_config by its model_type (qwen3 when absent); the model
    # class is internvl.py's InternVLChatModel
    "QianfanOCRForConditionalGeneration": (
        "qianfan_ocr.py",
        {"qwen3": "Qwen3ForCausalLM", "qwen2": "Qwen2ForCausalLM"},
    ),
    # InternVLChatConfig (the checkpoint's own config class, auto_map: InternVL 2.5 / 3 / 3.5's
    # configuration_internvl_chat.py, read only under --trust-remote-code) builds llm_config by its
    # architectures[0]; vLLM reads it as text_config (transformers_utils/config.py maps llm_config to
    # text_config) and internvl.py's InternVLChatModel builds that architecture
    # (init_vllm_registered_model), its InternViT tower beside it. InternVL 2 / 2.5's InternLM2
    # checkpoints ship an older InternVLChatConfig that builds InternLM2Config for
    # InternLM2ForCausalLM (their own configuration_internlm2.py)
    "InternVLChatModel": (
        "internvl.py",
        {
            "llama": "LlamaForCausalLM",
            "qwen2": "Qwen2ForCausalLM",
            "qwen3": "Qwen3ForCausalLM",
            "qwen3_moe": "Qwen3MoeForCausalLM",
            "gpt_oss": "GptOssForCausalLM",
            "internlm2": "InternLM2ForCausalLM",
        },
    ),
    # UltravoxConfig builds wrapped_model_config from text_config's model_type (a text_model_id
    # naming another checkpoint is not read)
    "UltravoxModel": (
        "ultravox.py",
        {
            "llama": "LlamaForCausalLM",
            "mistral": "MistralForCausalLM",
            "qwen2": "Qwen2ForCausalLM",
            "qwen3": "Qwen3ForCausalLM",
        },
    ),
    # the text config is handed to init_vllm_registered_model as is (vLLM 0.28.0 and 0.33.0); the
    # config classes' default text models: Mistral3Config mistral, LlavaOnevisionConfig qwen2,
    # LlavaNextVideoConfig llama; LightOnOCR's checkpoints are a Mistral3Config or (transformers'
    # lighton_ocr) a LightOnOcrConfig, whose default text model is qwen3
    # HCXVisionV2Config's text config defaults to hyperclovax; the model class builds whatever text
    # architecture it names (init_vllm_registered_model), its vision tower Qwen2.5-VL's
    "HCXVisionV2ForCausalLM": (
        "hyperclovax_vision_v2.py",
        {**TEXT_MODELS, "hyperclovax": "HyperCLOVAXForCausalLM", "hyperclovax_vision_v2": "HyperCLOVAXForCausalLM"},
    ),
    # HCXVisionConfig (vLLM's) builds text_config by its model_type (no default: a checkpoint
    # gives it); the model class builds whatever text architecture it names
    # (init_vllm_registered_model), its vision tower CLIP's or SigLIP's
    "HCXVisionForCausalLM": (
        "hyperclovax_vision.py",
        {
            "llama": "LlamaForCausalLM",
            "hyperclovax": "HyperCLOVAXForCausalLM",
            "gpt2": "GPT2LMHeadModel",
        },
    ),
    "Mistral3ForConditionalGeneration": text_wrapper("mistral3.py", mistral3="mistral"),
    "LightOnOCRForConditionalGeneration": text_wrapper("lightonocr.py", mistral3="mistral", lighton_ocr="qwen3"),
    "LlavaOnevisionForConditionalGeneration": text_wrapper("llava_onevision.py", llava_onevision="qwen2"),
    "LlavaNextVideoForConditionalGeneration": text_wrapper("llava_next_video.py", llava_next_video="llama"),
    # Step3VLConfig (vLLM's) reads text_config as a Step3TextConfig, handed to
    # init_vllm_registered_model as is: its architectures must be given (NAMED_ONLY)
    "Step3VLForConditionalGeneration": ("step3_vl.py", {"step3_text": "Step3TextForCausalLM"}),
    # Step5VLConfig (vLLM 0.33.0's own) reads text_config as a Step5Config, handed to
    # init_vllm_registered_model as is (step5/nvidia/vl.py: Step3p7ForConditionalGeneration's
    # __init__): Step5's text rules, its DSA caches on the repeat-pattern packing included
    "Step5ForConditionalGeneration": ("vllm.models.step5", {"step5": "Step5ForCausalLM"}),
    # not a wrapper: DeepseekV3ForCausalLM with Mistral's weight names (mistral_large_3.py)
    "MistralLarge3ForCausalLM": ("mistral_large_3.py", {"deepseek_v3": "DeepseekV3ForCausalLM"}),
}


#: :data:`WRAPPERS` whose plan names the language model's layers by their module path in the
#: wrapper (its ``language_model`` attribute), where its family's plan lists layer names
LANGUAGE_MODEL_LAYERS = {"Step5ForConditionalGeneration": "language_model.model.layers"}


#: :data:`WRAPPERS` whose text ``model_type`` transformers maps to no causal-LM class: vLLM
#: builds the language model only when the text config names its ``architectures`` (a text config
#: built from a dict keeps ``architectures=None`` whatever its class says), else it refuses.
#: Step5VLConfig's Step5Config likewise (vLLM 0.33.0 refuses a text config without them, recorded:
#: ``tests/fidelity/data/refused-0.33/``, case step5-vl-unnamed).
NAMED_ONLY = frozenset({"Step3VLForConditionalGeneration", "Step5ForConditionalGeneration"})


@dataclass(frozen=True)
class BuiltAs:
    """A multimodal wrapper whose model class names its language model's architecture itself
    (``init_vllm_registered_model(..., architectures=[...])``, whatever the text config says).

    :param vllm_file: the wrapper's ``vllm/model_executor/models/`` file.
    :param inner: the architecture it builds the language model as.
    :param model_type: the ``model_type`` the inner family reads the text config as (its rules and
        defaults), whatever the file says: the config class that reads the text sub-config.
    :param defaults: that config class's defaults where they differ from the family's for
        ``model_type``.
    :param refuse_keys: text-config keys whose presence means attention not modelled here.
    :param required: dotted paths from the file's top that the model class reads and no config
        class defaults (vLLM fails building the model without them).
    :param text_types: the text ``model_type`` values the file may give (another one builds a
        different config class: refused); empty: any (the config class ignores it).
    :param named: the model class takes the architecture the text config names (``architectures``,
        else its ``model_type``'s causal-LM class): the names accepted (all read as ``inner``);
        empty: the model class names it itself.
    :param needs: text-config keys whose absence means attention not modelled here.
    :param tower_heads: (dotted path, its config class default or ``None``: required) of the
        attention heads of encoder towers vLLM shards by tensor parallelism (``QKVParallelLinear``:
        TP must divide them, else an AssertionError while building the model).
    :param towers_if: a config key (its config class defaults it true) without whose truth the
        model class builds none of the ``tower_heads`` towers at all (Bagel's visual understanding
        path: ``if config.visual_und``), so TP need not divide them.
    :param pp_refusal: vLLM's refusal of pipeline parallelism (a class without ``SupportsPP``).
    :param rewrite: how the model class turns the text config into the one the inner family reads
        (keys it sets or converts whatever the file says), applied after the checks above.
    :param hybrid_class: whether the wrapper's class is ``IsHybrid`` where it differs from the
        inner architecture's (``None``: as the inner family reads it); ``False`` also drops the
        inner reader's Mamba2 mixer (the class builds no state layer).
    :param model_fields: what the wrapper's own model class changes in the model it builds
        (:meth:`ModelGeometry.evolve` keywords: the family whose hooks apply, a spec class of its
        own attention layers).
    :param deepstack: (dotted path, its config class default) of the vision layers whose deepstack
        features the model class adds to its first decoder layers: a later pipeline stage must start
        after as many layers (it asserts ``start_layer >= len(...)``).
    :param asserted_true: dotted paths from the file's top that must be JSON ``true`` (absent: the
        config class's default, false): the model class asserts them while building.
    """

    vllm_file: str
    inner: str
    model_type: str
    defaults: dict[str, Any] = field(default_factory=dict)
    refuse_keys: dict[str, str] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    text_types: tuple[str, ...] = ()
    named: tuple[str, ...] = ()
    needs: dict[str, str] = field(default_factory=dict)
    tower_heads: tuple[tuple[str, int | None], ...] = ()
    towers_if: str | None = None
    pp_refusal: str | None = None
    rewrite: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    hybrid_class: bool | None = None
    model_fields: dict[str, Any] = field(default_factory=dict)
    asserted_true: tuple[str, ...] = ()
    deepstack: tuple[str, list[int]] | None = None


def _as_nemotron_h_layers(text: dict[str, Any]) -> dict[str, Any]:
    """A Cosmos3-Edge text config as the Nemotron-H config its model class builds
    (``cosmos3_edge.py``: vLLM 0.28.0's ``Cosmos3EdgeTextConfig``, 0.33.0's
    ``_to_nemotron_h_config``): each of its ``num_hidden_layers`` decoder layers is an attention
    layer then an MLP layer, ``2 * num_hidden_layers`` Nemotron-H layers of pattern ``"*-"``."""
    n = text.get("num_hidden_layers", 28)  # both releases' config classes default 28
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        return text  # the family's reader names the bad value
    return {**text, "num_hidden_layers": 2 * n, "hybrid_override_pattern": "*-" * n, "layers_block_type": None}


def _compass_text(text: dict[str, Any]) -> dict[str, Any]:
    """Cohere Compass's text config as its decoder layers read it (transformers'
    ``CohereCompassTextConfig``, vLLM 0.30.0-0.33.0's ``cohere_compass.py``): ``layer_types`` absent
    is every layer full attention (no ``sliding_window_pattern``, as Cohere2Config's), ``head_dim``
    is always ``hidden_size // num_attention_heads``; each layer type's RoPE is
    ``rope_parameters[layer_type]`` (absent: no RoPE).

    :raises InputError: a layer type's RoPE other than the default one (its scaling of the context is
        not modelled), or per-layer-type RoPE leaving out a layer type in use (vLLM 0.31.0's
        transformers fails on it, later ones build no RoPE there: refused on every release)."""
    rope = text.get("rope_parameters") or {}
    if isinstance(rope, dict):
        if rope.get("rope_type", "default") != "default":
            raise InputError(
                "config.json",
                "text_config.rope_parameters.rope_type",
                f"{rope.get('rope_type')!r}: a scaled RoPE of Cohere Compass's layers is not modelled",
            )
        given = text.get("layer_types")
        types = given if isinstance(given, list) else []
        if not set(rope).isdisjoint(types):
            unkeyed = sorted({str(t) for t in types} - set(rope))
            if unkeyed:
                raise InputError(
                    "config.json",
                    "text_config.rope_parameters",
                    f"per layer type without {', '.join(unkeyed)}: transformers 5.17 (vLLM 0.31.0) fails reading "
                    "it (a KeyError), later releases build those layers without RoPE: not modelled (give each "
                    "layer type, null for none)",
                )
        for kind, params in rope.items():
            if isinstance(params, dict) and params.get("rope_type", "default") != "default":
                raise InputError(
                    "config.json",
                    f"text_config.rope_parameters.{kind}.rope_type",
                    f"{params.get('rope_type')!r}: a scaled RoPE of Cohere Compass's layers is not modelled",
                )
    out = {k: v for k, v in text.items() if k not in ("head_dim", "sliding_window_pattern")}
    if out.get("layer_types") is None:
        n = text.get("num_hidden_layers", 40)  # CohereCompassTextConfig's default
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            out["layer_types"] = ["full_attention"] * n
    return out


def _k_eq_v(text: dict[str, Any]) -> dict[str, Any]:
    """DiffusionGemma's text config as its model class builds Gemma4Model on it
    (``diffusion_gemma.py`` sets ``attention_k_eq_v = True`` whatever the file says)."""
    return {**text, "attention_k_eq_v": True}


#: ``ConformerEncoder``'s keyword arguments (``conformer_encoder.py``, vLLM 0.27.1-0.33.0), those
#: without a default first
_CONFORMER_REQUIRED = ("idim", "n_layers_enc", "n_head", "d_model")
_CONFORMER_KEYS = (*_CONFORMER_REQUIRED, "kernel_size", "pe_maxlen")


def _conformer_checked(text: dict[str, Any]) -> dict[str, Any]:
    """FireRedASR2's top-level config, unchanged, once its audio tower would build:
    ``fireredasr2.py`` builds ``ConformerEncoder(**audio_encoder_conf)`` (a key it does not take is
    a TypeError; ``n_head`` must divide ``d_model`` and ``kernel_size`` (33) be odd, else an
    AssertionError) and reads ``encoder_downsample_rate`` (no default: an AttributeError).

    :raises InputError: any of these, naming the field."""
    conf = text.get("audio_encoder_conf")
    if not isinstance(conf, dict):
        raise InputError("config.json", "audio_encoder_conf", missing_field("the Conformer encoder's arguments"))
    for key in conf:
        if key not in _CONFORMER_KEYS:
            raise InputError(
                "config.json", f"audio_encoder_conf.{key}", "not an argument of vLLM's ConformerEncoder (a TypeError)"
            )
    values = {"kernel_size": 33, **conf}
    for key in (*_CONFORMER_REQUIRED, "kernel_size"):
        if key not in values:
            raise InputError("config.json", f"audio_encoder_conf.{key}", missing_field("ConformerEncoder"))
        v = values[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError("config.json", f"audio_encoder_conf.{key}", not_positive_integer(v))
    if values["d_model"] % values["n_head"]:
        raise InputError(
            "config.json",
            "audio_encoder_conf.n_head",
            f"must divide d_model ({values['d_model']}): vLLM's encoder attention asserts it",
        )
    if values["kernel_size"] % 2 == 0:
        raise InputError("config.json", "audio_encoder_conf.kernel_size", "must be odd: vLLM's convolution asserts it")
    rate = text.get("encoder_downsample_rate")
    if rate is None:
        raise InputError("config.json", "encoder_downsample_rate", missing_field("FireRedASR2's adapter"))
    if isinstance(rate, bool) or not isinstance(rate, int) or rate < 1:
        raise InputError("config.json", "encoder_downsample_rate", not_positive_integer(rate))
    return text


#: the keys ``isaac.py`` reads from the top-level IsaacConfig (a Qwen3Config) for the language model
#: it builds, with ``Qwen3Config``'s defaults: ``head_dim`` (the M-RoPE sections), ``hidden_size``,
#: ``vocab_size`` and ``tie_word_embeddings`` (Qwen3ForCausalLM's lm_head); every other key of the
#: model (its decoder layers, vLLM's ``hf_text_config``) is read from ``text_config``
_ISAAC_TOP_LEVEL_KEYS: dict[str, Any] = {
    "head_dim": 128,
    "hidden_size": 4096,
    "vocab_size": 151936,
    "tie_word_embeddings": False,
}
#: the top-level keys an Isaac text config keeps beneath its own (vLLM's model dtype is the
#: top-level config's where the text config names none)
_ISAAC_KEPT = ("torch_dtype", "dtype")


def _isaac_checked(text: dict[str, Any]) -> dict[str, Any]:
    """The Qwen3 config Isaac's decoder layers are built from, once the model class can build it.

    ``IsaacConfig`` (vLLM's, a ``Qwen3Config``) builds ``text_config`` from the file's
    ``text_config`` object, else from its own top-level keys (then both are one config). Qwen2Model's
    layers and vLLM's ``hf_text_config`` (the derived max length, the KV geometry: recorded, a
    ``text_config`` with 4 KV heads under a top level of 2 gets a 4-head KV cache) read
    ``text_config``; the model class reads :data:`_ISAAC_TOP_LEVEL_KEYS` at the top level. So:
    the file's ``text_config`` (under the top level's dtype) when it gives one, else the top level;
    a ``text_config`` whose value of one of those keys differs from the top level's (either
    omitted: ``Qwen3Config``'s default) builds one model from two configs and is refused (a
    different ``head_dim`` fails vLLM's M-RoPE assertion, recorded); a ``head_dim`` that 8 does not
    divide, or a partial rotary factor, fails ``MRotaryEmbedding``'s check that the sections
    ``[d/4, d/8, d/8]`` sum to half the rotary dimension (an AssertionError, recorded).

    :raises InputError: any of these, naming the field."""
    nested = text.get("text_config")
    if nested is not None and not isinstance(nested, dict):
        raise InputError("config.json", "text_config", "must be an object (IsaacConfig reads it as a Qwen3Config)")
    if nested is not None:
        for key, default in _ISAAC_TOP_LEVEL_KEYS.items():
            if nested.get(key, default) != text.get(key, default):
                raise InputError(
                    "config.json",
                    f"text_config.{key}",
                    f"{nested.get(key, default)!r} where the top level gives {text.get(key, default)!r}: Isaac's "
                    "model class builds its decoder layers from text_config and its lm_head and M-RoPE sections "
                    "from the top level; two configs for one model are not modelled",
                )
    head_dim = text.get("head_dim", 128)  # Qwen3Config's default
    if isinstance(head_dim, int) and not isinstance(head_dim, bool) and head_dim % 8:
        raise InputError(
            "config.json",
            "head_dim",
            f"{head_dim} is not a multiple of 8: Isaac's M-RoPE sections [head_dim // 4, head_dim // 8, "
            "head_dim // 8] would not sum to half of it (vLLM's MRotaryEmbedding asserts it)",
        )
    model = text if nested is None else {**{k: text[k] for k in _ISAAC_KEPT if k in text}, **nested}
    rope = model.get("rope_parameters") or model.get("rope_scaling") or {}
    partial = model.get("partial_rotary_factor", rope.get("partial_rotary_factor", 1) if isinstance(rope, dict) else 1)
    if partial != 1:
        raise InputError(
            "config.json",
            "partial_rotary_factor",
            f"{partial}: Isaac's M-RoPE sections span the whole head_dim (vLLM's MRotaryEmbedding asserts it)",
        )
    vision = text.get("vision_config")
    if isinstance(vision, dict):
        hidden, heads = vision.get("hidden_size", 768), vision.get("num_attention_heads", 12)
        if isinstance(hidden, int) and isinstance(heads, int) and heads > 0 and hidden % heads:
            raise InputError(
                "config.json",
                "vision_config.num_attention_heads",
                f"must divide vision_config.hidden_size ({hidden}): Isaac's SigLIP-2 attention asserts it",
            )
    return model


#: ``Moondream3TextConfig``'s defaults (vLLM's own config class, ``model_type`` ``moondream3``) for
#: the keys its attention layers read, by the file's names (``config.text``)
_MOONDREAM3_TEXT: dict[str, Any] = {
    "dim": 2048,
    "n_layers": 24,
    "n_heads": 32,
    "n_kv_heads": 32,
    "max_context": 4096,
    "vocab_size": 51200,
}
#: the rotary dimension Moondream3Attention gives ``get_rope`` (``partial_rotary_factor`` 32 / head_dim)
_MOONDREAM3_ROTARY = 32


def _moondream3_text(root: dict[str, Any]) -> dict[str, Any]:
    """The Llama-shaped text config of Moondream3's decoder attention, from the file's top level.

    ``Moondream3Config`` (vLLM's, ``transformers_utils/configs/moondream3.py``) reads the file's
    ``config.text`` object as a ``Moondream3TextConfig``; each ``Moondream3Attention`` layer (every
    one of ``n_layers``, full causal attention; the MoE of layers from ``moe.start_layer`` is
    weights only) holds ``n_heads`` query and ``n_kv_heads`` KV heads of ``dim // n_heads``
    (floor division), its context ``max_context``. The model dtype is the top level's.

    :raises InputError: ``config`` / ``config.text`` not objects, a ``dim`` that ``n_heads`` does
        not divide (the out projection's width would not be the heads' output: not modelled), or a
        head_dim under the 32 rotary dimensions its RoPE takes."""
    config = root.get("config", {})
    if not isinstance(config, dict):
        raise InputError("config.json", "config", "must be an object (Moondream3Config reads config.text from it)")
    text = config.get("text", {})
    if not isinstance(text, dict):
        raise InputError("config.json", "config.text", "must be an object (a Moondream3TextConfig)")
    values = {key: text.get(key, default) for key, default in _MOONDREAM3_TEXT.items()}
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError("config.json", f"config.text.{key}", not_positive_integer(value))
    if values["dim"] % values["n_heads"]:
        raise InputError(
            "config.json",
            "config.text.n_heads",
            f"must divide config.text.dim ({values['dim']}): Moondream3Attention's head_dim is dim // n_heads "
            "and its out projection reads dim inputs; a remainder is not modelled",
        )
    head_dim = values["dim"] // values["n_heads"]
    if head_dim < _MOONDREAM3_ROTARY:
        raise InputError(
            "config.json",
            "config.text.n_heads",
            f"head_dim {head_dim} (dim // n_heads) is under the {_MOONDREAM3_ROTARY} rotary dimensions "
            "Moondream3Attention's RoPE takes: not modelled",
        )
    model: dict[str, Any] = {k: root[k] for k in ("torch_dtype", "dtype") if k in root}
    return {
        **model,
        "hidden_size": values["dim"],
        "num_hidden_layers": values["n_layers"],
        "num_attention_heads": values["n_heads"],
        "num_key_value_heads": values["n_kv_heads"],
        "head_dim": head_dim,
        "max_position_embeddings": values["max_context"],
        "vocab_size": values["vocab_size"],
    }


def _moondream3_forward(root: Mapping[str, Any]) -> dict[str, Any]:
    """Moondream3's file as the profile run's widths read it: ``Moondream3TextConfig``'s standard
    attributes (vLLM's config class sets ``hidden_size`` = ``dim``, ``intermediate_size`` =
    ``ff_dim``, ``vocab_size``, the heads, ``num_experts_per_tok`` = ``moe.n_experts_per_tok``
    (default 8), the expert width ``moe.expert_inner_dim`` (default 1024)) as ``text_config``, and
    its image encoder (``config.vision``, a ``moondream3_vision`` tower that
    ``get_supported_mm_limits`` offers images only) as ``image_encoder_config`` (the profile
    run's image-only encoder key).

    :raises InputError: as :func:`_moondream3_text`; ``config.text.moe`` not an object, or an
        MoE width not a positive integer."""
    text = _moondream3_text(dict(root))
    raw = root.get("config", {}).get("text") or {}  # both objects: _moondream3_text checked them
    moe = raw.get("moe")
    if moe is None:
        moe = {}
    if not isinstance(moe, dict):
        raise InputError("config.json", "config.text.moe", "must be an object (Moondream3TextConfig reads it)")
    widths = {
        "intermediate_size": ("ff_dim", raw.get("ff_dim", 8192)),
        "moe_intermediate_size": ("moe.expert_inner_dim", moe.get("expert_inner_dim", 1024)),
        "num_experts_per_tok": ("moe.n_experts_per_tok", moe.get("n_experts_per_tok", 8)),
    }
    for key, value in widths.values():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError("config.json", f"config.text.{key}", not_positive_integer(value))
    text.update({name: value for name, (_, value) in widths.items()})
    return {**root, "text_config": text, "image_encoder_config": {"model_type": "moondream3_vision"}}


#: wrappers whose file lays the profile run's widths out under names of its own (:func:`forward_config`)
_FORWARD_CONFIGS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "Moondream3ForCausalLM": _moondream3_forward,
    "HfMoondream": _moondream3_forward,
}


def forward_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``forward_config`` hook (``registry.Family``): ``config`` as the profile run's widths are
    read from it (the sampler's vocabulary, the hidden / MLP / attention widths, the encoder keys),
    for a wrapper whose file gives them under names of its own (Moondream3's ``config.text``);
    ``config`` itself for every other one.

    :raises InputError: such a wrapper's width malformed (named)."""
    names = config.get("architectures")
    arch = str(names[0]) if isinstance(names, list) and names else ""
    own = _FORWARD_CONFIGS.get(arch)
    return config if own is None else own(config)


#: the text-config keys a DiffusionGemma checkpoint must give: vLLM 0.28.0's own
#: DiffusionGemmaTextConfig defaults none of them, transformers' (0.33.0's) defaults them otherwise
_DIFFUSION_GEMMA_KEYS = (
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "global_head_dim",
    "num_global_key_value_heads",
    "layer_types",
    "sliding_window",
    "max_position_embeddings",
)


#: multimodal wrapper -> how it builds its language model (vLLM 0.28.0 model files).
BUILT_AS: dict[str, BuiltAs] = {
    # KimiVLConfig reads text_config as a DeepseekV2Config
    "KimiVLForConditionalGeneration": BuiltAs("kimi_vl.py", "DeepseekV2ForCausalLM", "deepseek_v2"),
    # KimiK25Config (vLLM's) reads text_config as a DeepseekV3Config
    "KimiK25ForConditionalGeneration": BuiltAs("kimi_k25.py", "DeepseekV2ForCausalLM", "deepseek_v3"),
    # KimiK3Config (vLLM 0.33.0's) reads text_config as a KimiLinearConfig and builds it as
    # KimiLinearForCausalLM (kimi_k3/nvidia/model.py KimiK3ForConditionalGeneration, Kimi-K2.5's
    # MoonViT-3D tower): Kimi-Linear's rules, its full-rank-gate KDA layers (KimiK3DeltaAttention)
    "KimiK3ForConditionalGeneration": BuiltAs("vllm.models.kimi_k3", "KimiLinearForCausalLM", "kimi_linear"),
    # Glm5NextForCausalLM on text_config (glm5next/common/model.py Glm5NextForConditionalGeneration, a
    # Glm4v-style tower of vision_config.num_heads, Glm5NextVisionConfig's default 16)
    "Glm5NextForConditionalGeneration": BuiltAs(
        "vllm.models.glm5next",
        "Glm5NextForCausalLM",
        "glm5_next_text",
        tower_heads=(("vision_config.num_heads", 16),),
    ),
    # the thinker's language model; Qwen2_5OmniTextConfig keeps Qwen2Config's window rules
    **{
        arch: BuiltAs(
            "qwen2_5_omni_thinker.py",
            "Qwen2ForCausalLM",
            "qwen2",
            {"num_key_value_heads": 4, "sliding_window": 32768},
            tower_heads=(
                ("thinker_config.audio_config.encoder_attention_heads", 20),
                ("thinker_config.vision_config.num_heads", 16),
            ),
        )
        for arch in ("Qwen2_5OmniForConditionalGeneration", "Qwen2_5OmniModel")
    },
    # Qwen3OmniMoeTextConfig has no use_sliding_window: a window it is given stays set
    "Qwen3OmniMoeForConditionalGeneration": BuiltAs(
        "qwen3_omni_moe_thinker.py",
        "Qwen3MoeForCausalLM",
        "qwen3_omni_moe_text",
        {"sliding_window": None},
        refuse_keys={"sliding_window": "a sliding window (kept by Qwen3OmniMoeTextConfig) is not modelled"},
        # the thinker's Qwen3MoeLLMForCausalLM skips Qwen3MoeForCausalLM.__init__ (no set_moe_parameters): a
        # pipeline stage without an MoE block builds
        model_fields={"first_moe_layer": None, "moe_layers": None, "no_moe_layer": None},
        tower_heads=(
            ("thinker_config.audio_config.encoder_attention_heads", 20),
            ("thinker_config.vision_config.num_heads", 16),
        ),
        required=(
            "thinker_config.text_config.tie_word_embeddings",
            "thinker_config.vision_config.image_size",
            "thinker_config.vision_config.apply_vit_abs_pos_embed",
        ),
    ),
    "AudioFlamingo3ForConditionalGeneration": BuiltAs(
        "audioflamingo3.py", "Qwen2ForCausalLM", "qwen2", text_types=("qwen2",)
    ),
    # GlmAsrConfig lays the file's text_config over its own Llama defaults
    "GlmAsrForConditionalGeneration": BuiltAs(
        "glmasr.py",
        "LlamaForCausalLM",
        "llama",
        {"num_attention_heads": 16, "num_key_value_heads": 4, "hidden_size": 2048, "max_position_embeddings": 8192},
        text_types=("llama",),
        tower_heads=(("audio_config.num_attention_heads", 20),),
    ),
    # MossTranscribeDiarizeConfig reads text_config as a Qwen3Config and writes all-full layer_types
    "MossTranscribeDiarizeForConditionalGeneration": BuiltAs(
        "moss_transcribe_diarize.py",
        "Qwen3ForCausalLM",
        "qwen3",
        refuse_keys={
            "use_sliding_window": "a sliding window (its config class writes full-attention layer_types): not modelled"
        },
        # audio_config given: a WhisperConfig (6 heads by default); absent: 16 heads
        tower_heads=(("audio_config.encoder_attention_heads", None),),
        # its Whisper tower's with_hf_config(audio_config) view (no SupportsPP) fails validation
        pp_refusal=TOWER_NOT_SUPPORTS_PP,
    ),
    # FunAudioChatConfig builds text_config by its model_type (qwen2 when absent): only qwen3 here
    "FunAudioChatForConditionalGeneration": BuiltAs(
        "funaudiochat.py",
        "Qwen3ForCausalLM",
        "qwen3",
        text_types=("qwen3",),
        required=("text_config.model_type", "audio_config.pad_token_id", "audio_config.codebook_size"),
        tower_heads=(("audio_config.encoder_attention_heads", 20),),
    ),
    # OpenVLAConfig (vLLM's) reads text_config as a LlamaConfig; openvla.py builds the architecture
    # it names (LlamaForCausalLM when absent); the towers are timm ViTs (DINOv2 + SigLIP, not
    # sharded; recorded with timm in the boot environment's -mm variant)
    "OpenVLAForActionPrediction": BuiltAs("openvla.py", "LlamaForCausalLM", "llama", named=("LlamaForCausalLM",)),
    # MiDashengLMConfig (vLLM's) reads text_config as a Qwen2_5OmniTextConfig (its defaults, as the
    # Qwen2.5-Omni thinker's); midashenglm.py builds it as Qwen2ForCausalLM. Its torchaudio import
    # is a stand-in in the engine start (engine_start.py: the frontend's mel buffer shape only)
    "MiDashengLMModel": BuiltAs(
        "midashenglm.py",
        "Qwen2ForCausalLM",
        "qwen2",
        {"num_key_value_heads": 4, "sliding_window": 32768},
        # DashengAttention (QKVParallelLinear; DashengConfig: 12 heads)
        tower_heads=(("audio_encoder_config.num_heads", 12),),
    ),
    # fireredasr2.py reads the file's top level as a Qwen2Config and builds Qwen2ForCausalLM on it
    # (no SupportsPP); its Conformer encoder and adapter are replicated (no TP check) and hold no
    # KV cache
    "FireRedASR2ForConditionalGeneration": BuiltAs(
        "fireredasr2.py",
        "Qwen2ForCausalLM",
        "qwen2",
        text_types=("qwen2",),
        pp_refusal=NOT_SUPPORTS_PP,
        rewrite=_conformer_checked,
    ),
    # isaac.py builds Qwen3ForCausalLM on the top-level IsaacConfig (a Qwen3Config), whose layers
    # read its text_config (the file's, else its own keys: _isaac_checked); its SigLIP-2 tower
    # shards its heads by TP (PixelShuffleSiglip2VisionConfig: 12 heads by default)
    "IsaacForConditionalGeneration": BuiltAs(
        "isaac.py",
        "Qwen3ForCausalLM",
        "qwen3",
        tower_heads=(("vision_config.num_attention_heads", 12),),
        rewrite=_isaac_checked,
    ),
    # moondream3.py builds its own Moondream3TextModel on Moondream3Config's text_config (vLLM's
    # config class; the file's config.text): full causal attention in every layer, read as Llama's
    # (_moondream3_text); its attention layers are the model's own, so they see the model config's
    # is_mm_prefix_lm (moondream3 is one). Its vision encoder shards its heads, its MLP and the
    # projector's inner width by TP (Moondream3VisionConfig's defaults); the text MLP's ff_dim too
    **{
        arch: BuiltAs(
            "moondream3.py",
            "LlamaForCausalLM",
            "llama",
            rewrite=_moondream3_text,
            tower_heads=(
                ("config.vision.enc_n_heads", 16),
                ("config.vision.enc_ff_dim", 4304),
                ("config.vision.proj_inner_dim", 8192),
                ("config.text.ff_dim", 8192),
            ),
            model_fields={"mm_prefix_lm": True},
        )
        for arch in ("Moondream3ForCausalLM", "HfMoondream")
    },
    # funasr.py reads the file's top level as a Qwen3Config and builds Qwen3Model on it (no
    # SupportsPP); its SenseVoice encoder and adaptor hold no KV cache
    "FunASRForConditionalGeneration": BuiltAs(
        "funasr.py", "Qwen3ForCausalLM", "qwen3", text_types=("qwen3",), pp_refusal=NOT_SUPPORTS_PP
    ),
    # gemma3n_mm.py builds Gemma3nForCausalLM on text_config (a Gemma3nTextConfig); its towers are
    # transformers' (TimmWrapperModel's MobileNetV5 via timm, the audio conformer), unsharded
    "Gemma3nForConditionalGeneration": BuiltAs(
        "gemma3n_mm.py", "Gemma3nForCausalLM", "gemma3n_text", text_types=("gemma3n_text",), pp_refusal=NOT_SUPPORTS_PP
    ),
    # Glm4vForConditionalGeneration's model class builds a glm_ocr model's language model as
    # Glm4ForCausalLM; GlmOcrTextConfig has no head_dim of its own
    "GlmOcrForConditionalGeneration": BuiltAs(
        "glm_ocr.py",
        "Glm4ForCausalLM",
        "glm_ocr_text",
        {"max_position_embeddings": 131072, "num_key_value_heads": 8, "head_dim": None},
        text_types=("glm_ocr_text",),
    ),
    # dots_ocr.py builds Qwen2ForCausalLM on the top-level config (the checkpoint's DotsOCRConfig, a
    # Qwen2Config subclass read from its configuration_dots.py: remote code, vLLM's own DotsOCRConfig
    # is in no config registry); its vision tower shards DotsVisionConfig's 12 heads by TP
    "DotsOCRForCausalLM": BuiltAs(
        "dots_ocr.py",
        "Qwen2ForCausalLM",
        "qwen2",
        tower_heads=(("vision_config.num_attention_heads", 12),),
        model_fields={"layer_prefix": "language_model.model.layers"},
    ),
    # aria.py's AriaTextModel is a LlamaModel whose decoder layers keep Llama's attention
    # (AriaTextConfig: a LlamaConfig with MoE keys)
    "AriaForConditionalGeneration": BuiltAs(
        "aria.py",
        "LlamaForCausalLM",
        "llama",
        {"max_position_embeddings": 2048},
        text_types=("aria_text",),
        # the Idefics3 vision tower (Idefics3VisionConfig: 16 heads)
        tower_heads=(("vision_config.num_attention_heads", 16),),
    ),
    # DeepseekVLV2Config (vLLM's) reads language_config as its text config (a DeepseekV2Config
    # whose kv_lora_rank defaults to null); the model class builds the architecture it names
    **{
        arch: BuiltAs(
            file,
            "DeepseekV2ForCausalLM",
            "deepseek_v2",
            {"kv_lora_rank": None},
            named=("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"),
            # absent, kv_lora_rank takes the release's DeepseekVLV2TextConfig default (null in
            # 0.27.1/0.28.0, DeepseekV2Config's 512 from 0.29.0): not modelled; null with
            # qk_nope_head_dim = qk_rope_head_dim = 0 is DeepSeek-OCR's plain attention
            # (vllm/models/deepseek.py)
            needs={
                "kv_lora_rank": "absent: its default differs by release (null in vLLM 0.27.1/0.28.0, 512 from "
                "0.29.0): not modelled"
            },
            model_fields=fields,
        )
        for arch, file, fields in (
            # DeepSeek-VL2: the same config class; its vision tower is a timm SigLIP ViT (fixed
            # so400m, recorded with timm in the boot environment's -mm variant)
            ("DeepseekVLV2ForCausalLM", "deepseek_vl2.py", {}),
            ("DeepseekOCRForCausalLM", "deepseek_ocr.py", {}),
            ("DeepseekOCR2ForCausalLM", "deepseek_ocr2.py", {}),
            # UnlimitedOCRConfig is a DeepseekVLV2Config; its model class builds every attention
            # layer as RSWAAttention (an RSWASpec, sized as full attention) and its config hook
            # picks the backend and turns prefix caching off (vllm/models/unlimited_ocr.py)
            (
                "UnlimitedOCRForCausalLM",
                "unlimited_ocr.py",
                {"family": "unlimited_ocr", "full_spec_name": "rswa"},
            ),
        )
    },
    # Granite4VisionConfig (vLLM's) builds text_config by its model_type (granite when absent); the
    # model class builds Granite4VisionLLMForCausalLM, a GraniteForCausalLM whose layer loop adds
    # deepstack features (same attention layers)
    "Granite4VisionForConditionalGeneration": BuiltAs(
        "granite4_vision.py",
        "GraniteForCausalLM",
        "granite",
        text_types=("granite",),
        # the model class reads both and Granite4VisionConfig defaults neither (its hub alias
        # vision_layer_to_llm_layer for the map is not read here: refused)
        required=("downsample_rate", "deepstack_layer_map"),
        # its SigLIP vision tower (SiglipVisionConfig: 12 heads)
        tower_heads=(("vision_config.num_attention_heads", 12),),
    ),
    # gemma4_unified.py builds Gemma4ForCausalLM on text_config, a Gemma4UnifiedTextConfig
    # (transformers): Gemma-4's text config with its own defaults (no per-layer inputs, no MoE
    # block, a 1,024-token window, bidirectional attention over vision tokens)
    "Gemma4UnifiedForConditionalGeneration": BuiltAs(
        "gemma4_unified.py",
        "Gemma4ForCausalLM",
        "gemma4_text",
        {
            "max_position_embeddings": 262144,
            "sliding_window": 1024,
            "use_bidirectional_attention": "vision",
            "hidden_size_per_layer_input": None,
            "vocab_size_per_layer_input": None,
            "enable_moe_block": None,
        },
        text_types=("gemma4_unified_text",),
    ),
    # cosmos3_edge.py builds a Nemotron-H model of attention and MLP layers only on text_config (vLLM
    # 0.28.0: its Cosmos3EdgeTextConfig, a NemotronHConfig; 0.33.0: transformers' text config
    # converted by _to_nemotron_h_config); the class is not IsHybrid. The two releases' config
    # classes default the heads and context length differently: those must be given
    "Cosmos3EdgeForConditionalGeneration": BuiltAs(
        "cosmos3_edge.py",
        "NemotronHForCausalLM",
        "nemotron_h",
        # no Mamba layer is built: the mixer sizes only satisfy the reader
        {
            "num_key_value_heads": 8,
            "head_dim": 128,
            "mamba_num_heads": 1,
            "mamba_head_dim": 1,
            "ssm_state_size": 1,
            "conv_kernel": 1,
        },
        text_types=("cosmos3_edge_text",),
        needs={
            key: "its text config class defaults it differently on vLLM 0.28.0 (vLLM's NemotronH-based "
            "Cosmos3EdgeTextConfig) and 0.33.0 (transformers'): not modelled"
            for key in ("num_attention_heads", "max_position_embeddings")
        },
        # its SigLIP-2 vision tower (Siglip2VisionConfig on 0.28.0: 12 heads; transformers'
        # Cosmos3EdgeVisionConfig on 0.33.0: 16): required
        tower_heads=(("vision_config.num_attention_heads", None),),
        rewrite=_as_nemotron_h_layers,
        hybrid_class=False,
        # its text view names no architecture, as Qwen3-VL's (0.27.1/0.28.0 refuse PP > 1; recorded)
        pp_refusal=UNNAMED_TEXT_CONFIG_PP,
    ),
    # diffusion_gemma.py builds Gemma4Model on text_config with attention_k_eq_v forced
    # cohere_compass.py (vLLM 0.30.0-0.33.0) builds its own CohereCompassForCausalLM on text_config
    # (transformers' CohereCompassTextConfig): Command-R's parallel layer, each layer sliding or full by
    # layer_types, as Cohere2ForCausalLM's; its vision tower shards its heads by TP
    "CohereCompassForConditionalGeneration": BuiltAs(
        "cohere_compass.py",
        "Cohere2ForCausalLM",
        "cohere2",
        {"max_position_embeddings": 8192, "sliding_window": 4096},
        text_types=("cohere_compass_text",),
        tower_heads=(("vision_config.num_heads", 16),),
        rewrite=_compass_text,
        # vLLM's with_hf_config copies the top level's tie_word_embeddings (CohereCompassConfig's
        # default: false) into text_config; CohereCompassForCausalLM asserts it
        asserted_true=("tie_word_embeddings",),
        # CohereCompassVisionConfig's default: (8, 16, 24)
        deepstack=("vision_config.deepstack_visual_indexes", [8, 16, 24]),
    ),
    "DiffusionGemmaForBlockDiffusion": BuiltAs(
        "diffusion_gemma.py",
        "Gemma4ForCausalLM",
        "gemma4_text",
        {"hidden_size_per_layer_input": None, "vocab_size_per_layer_input": None},
        text_types=("diffusion_gemma_text",),
        refuse_keys={
            "use_bidirectional_attention": "bidirectional attention (use_bidirectional_attention) is not verified"
        },
        needs={
            key: "vLLM 0.28.0's DiffusionGemmaTextConfig defaults none of its keys (transformers' on 0.33.0 "
            "does): not modelled"
            for key in _DIFFUSION_GEMMA_KEYS
        },
        rewrite=_k_eq_v,
        pp_refusal=NOT_SUPPORTS_PP,
    ),
    # HunYuanVLConfig (vLLM's) answers the text keys from text_config, or from the file's top level
    # (no text_config: the text config is built from them); hunyuan_vision.py builds
    # HunYuanDenseV1ForCausalLM on it (HunYuanVLTextConfig's defaults)
    "HunYuanVLForConditionalGeneration": BuiltAs(
        "hunyuan_vision.py",
        "HunYuanDenseV1ForCausalLM",
        "hunyuan_v1_dense",
        {"max_position_embeddings": 2048, "hidden_size": 4096, "num_attention_heads": 32},
        refuse_keys={"text_config": "a nested text_config (vLLM reads its keys through the wrapper) is not verified"},
        # HunYuanVisionTransformer's attention (HunYuanVLVisionConfig: 16 heads)
        tower_heads=(("vision_config.num_attention_heads", 16),),
    ),
    # BagelConfig (vLLM's) reads llm_config as a Qwen2Config; its SigLIP tower is built only under
    # visual_und (BagelConfig: true; recorded false in tests/fidelity/data/wrappers/)
    "BagelForConditionalGeneration": BuiltAs(
        "bagel.py",
        "Qwen2ForCausalLM",
        "qwen2",
        tower_heads=(("vit_config.num_attention_heads", 12),),
        towers_if="visual_und",
    ),
    # CheersTextConfig (vLLM's cheers.py config): Qwen2's window rules, its own defaults
    **{
        arch: BuiltAs(
            "cheers.py",
            "Qwen2ForCausalLM",
            "qwen2",
            {"max_position_embeddings": 131072, "num_key_value_heads": 4, "sliding_window": 131072},
            # its SigLIP vision tower (SiglipVisionConfig: 12 heads)
            tower_heads=(("vision_representation_config.num_attention_heads", 12),),
        )
        for arch in ("Cheers", "CheersForConditionalGeneration")
    },
    # Qwen3ASRTextConfig (vLLM's qwen3_asr.py config) has no window keys of its own;
    # Qwen3ASRRealtimeGeneration (qwen3_asr_realtime.py) subclasses Qwen3ASRForConditionalGeneration
    **{
        arch: BuiltAs(
            "qwen3_asr.py" if arch == "Qwen3ASRForConditionalGeneration" else "qwen3_asr_realtime.py",
            "Qwen3ForCausalLM",
            "qwen3",
            {
                "max_position_embeddings": 128000,
                "num_key_value_heads": 32,
                "head_dim": 128,
                "use_sliding_window": False,
            },
            refuse_keys={
                key: "window keys (which Qwen3ASRTextConfig does not define) are not modelled"
                for key in ("sliding_window", "use_sliding_window", "layer_types")
            },
            tower_heads=(("thinker_config.audio_config.encoder_attention_heads", 20),),
        )
        for arch in ("Qwen3ASRForConditionalGeneration", "Qwen3ASRRealtimeGeneration")
    },
}

#: wrappers whose text config is built from the text config's own keys alone: the wrapper's other keys
#: (UltravoxConfig's own ``hidden_size``, default 4096, is its projector's width) are not read beneath it
#: (vLLM's ``UltravoxConfig``: ``wrapped_model_config = CONFIG_MAPPING[...](**text_config)``)
TEXT_CONFIG_ALONE: frozenset[str] = frozenset({"UltravoxModel"})

#: multimodal wrapper -> where its language model's config lives when not ``text_config``
#: (the sub-config ``get_text_config`` returns and the model class builds its language model from).
TEXT_CONFIG_PATHS: dict[str, tuple[str, ...]] = {
    # HunYuanVLConfig without text_config: the top level is the text config
    "HunYuanVLForConditionalGeneration": (),
    "Ovis": ("llm_config",),
    "InternVLChatModel": ("llm_config",),
    "BagelForConditionalGeneration": ("llm_config",),
    "DeepseekVLV2ForCausalLM": ("language_config",),
    "FunASRForConditionalGeneration": (),
    "DotsOCRForCausalLM": (),
    "FireRedASR2ForConditionalGeneration": (),
    "IsaacForConditionalGeneration": (),
    "Moondream3ForCausalLM": (),
    "HfMoondream": (),
    "DeepseekOCRForCausalLM": ("language_config",),
    "DeepseekOCR2ForCausalLM": ("language_config",),
    "UnlimitedOCRForCausalLM": ("language_config",),
    # Alpamayo2SuperConfig (vLLM 0.33.0) takes the Qwen3-VL text config from vlm_config
    "Alpamayo2Super": ("vlm_config", "text_config"),
    **{
        arch: ("thinker_config", "text_config")
        for arch in (
            "Qwen2_5OmniForConditionalGeneration",
            "Qwen2_5OmniModel",
            "Qwen3OmniMoeForConditionalGeneration",
            "Qwen3ASRForConditionalGeneration",
            "Qwen3ASRRealtimeGeneration",
        )
    },
}


def _built_as(f: ConfigFields, architecture: str, families: Mapping[str, LanguageModelFamily]) -> ModelGeometry:
    """A :data:`BUILT_AS` wrapper's language model, read by its inner architecture's family."""
    spec = BUILT_AS[architecture]
    for path in spec.required:
        if _at(f.root, path) is None:
            raise InputError(f.source, path, missing_field(f"{architecture}: vLLM's model class reads it"))
    for path in spec.asserted_true:
        if _at(f.root, path) is not True:
            raise InputError(
                f.source, path, f"{_at(f.root, path)!r}: must be true ({architecture}'s model class asserts it)"
            )
    for key, why in spec.refuse_keys.items():
        if f.get(key):
            raise InputError(f.source, f.where(key), f"{architecture}: {why}")
    nested: Any = f.root
    for key in TEXT_CONFIG_PATHS.get(architecture, ("text_config",)):
        nested = nested.get(key) if isinstance(nested, dict) else None
    nested = nested if isinstance(nested, dict) else {}
    given = nested.get("model_type")
    if spec.text_types and given is not None and given not in spec.text_types:
        raise InputError(
            f.source,
            f.where("model_type"),
            f"{architecture} with a {given!r} language model is not modelled (only {', '.join(spec.text_types)})",
        )
    named = nested.get("architectures")
    if spec.named and isinstance(named, list) and named and named[0] not in spec.named:
        raise InputError(
            f.source,
            f.where("architectures"),
            f"{architecture} with a {named[0]} language model is not modelled (only {', '.join(spec.named)})",
        )
    for key, why in spec.needs.items():
        if key not in nested:
            raise InputError(f.source, f.where(key), f"{architecture}: {why}")
    # only the text sub-config's own keys: the wrapper's (a top-level max_sequence_length...) are
    # not the language model's
    if spec.rewrite is not None:
        nested = spec.rewrite(nested)
    text = ConfigFields(f.source, {**nested, "model_type": spec.model_type}, f.prefix, root=f.root)
    family = families[spec.inner]
    base = DECODERS[spec.inner].defaults if spec.inner in DECODERS else family.defaults(text)
    model = family.read(text.with_defaults({**base, **spec.defaults}), spec.inner)
    towers = []
    # JSON's false, null, 0 or "" are false as the model class's ``if config.<key>`` reads them
    built = spec.towers_if is None or bool(f.root.get(spec.towers_if, True))
    for path, default in spec.tower_heads if built else ():
        value = _at(f.root, path)
        if value is None and default is None:
            raise InputError(f.source, path, missing_field(f"{architecture}: vLLM's model class reads it"))
        heads = default if value is None else value
        if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1:
            raise InputError(f.source, path, not_positive_integer(heads))
        towers.append((path, heads))
    # the language model's Attention layers read is_mm_prefix_lm from the model config
    # init_vllm_registered_model rebuilds for the inner, text-only architecture: false (the
    # text config's use_bidirectional_attention does not reach them; recorded on Gemma-4-Unified,
    # which vLLM 0.28.0 serves on FLASHINFER)
    # the wrapper's config class is vLLM's hf_config: its language model's ``layer_types`` is not
    # its attribute (ModelConfig.is_hybrid reads none)
    extra: dict[str, Any] = {
        "architecture": architecture,
        "tower_heads": tuple(towers),
        "mm_prefix_lm": False,
        "hf_layer_types": False,
    }
    if spec.deepstack is not None:
        ds_path, ds_default = spec.deepstack
        ds_given = _at(f.root, ds_path)
        ds_levels = ds_default if ds_given is None else ds_given
        if not isinstance(ds_levels, list):
            raise InputError(f.source, ds_path, "must be a list of vision layer indices")
        extra["deepstack_levels"] = len(ds_levels)
    if spec.pp_refusal is not None:
        extra["pp_refusal"] = spec.pp_refusal
    if spec.hybrid_class is not None:
        extra["hybrid_class"] = spec.hybrid_class
    if spec.hybrid_class is False:
        # no state layer is built: the inner reader's (placeholder) mixer is no part of the model
        extra["mamba2"] = None
    return model.evolve(**{**extra, **spec.model_fields})


def _at(data: dict[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` of ``data`` (``None`` when any level is absent)."""
    level: Any = data
    for key in path.split("."):
        level = level.get(key) if isinstance(level, dict) else None
    return level


def _wrapped(f: ConfigFields, architecture: str, families: Mapping[str, LanguageModelFamily]) -> ModelGeometry:
    """A multimodal wrapper's language model, read by the family of the architecture vLLM builds
    for it (``init_vllm_registered_model`` on the text config)."""
    if architecture == "UltravoxModel" and f.root.get("text_model_id") is not None:
        raise InputError(
            f.source, "text_model_id", "a language model read from another checkpoint (text_model_id) is not modelled"
        )
    if architecture == "UltravoxModel" and f.root.get("vocab_size") is None:
        # ultravox.py reads config.vocab_size, which UltravoxConfig does not default
        raise InputError(f.source, "vocab_size", missing_field("UltravoxModel: vLLM's model class reads it"))
    text_type = str(f.get("model_type") or "")
    allowed = WRAPPERS[architecture][1]
    nested = _at(f.root, ".".join(TEXT_CONFIG_PATHS.get(architecture, ("text_config",))))
    named = nested.get("architectures") if isinstance(nested, dict) else None
    if isinstance(named, list) and named:
        # the text config names the language model's architecture: vLLM builds that one
        inner = str(named[0]) if str(named[0]) in allowed.values() else None
        text_type = str(named[0])
    else:
        inner = allowed.get(text_type)
        if inner is not None and architecture in NAMED_ONLY:
            raise InputError(
                f.source,
                f.where("architectures"),
                f"{architecture}: vLLM refuses a text config that names no architectures "
                "(ValueError: No model architectures are specified)",
            )
    if inner is None:
        raise InputError(
            f.source,
            f.where("model_type"),
            f"{architecture} with a {text_type!r} language model is not modelled "
            f"(only {', '.join(sorted(set(WRAPPERS[architecture][1].values())))})",
        )
    family = families[inner]
    inner_defaults = DECODERS[inner].defaults if inner in DECODERS else family.defaults(f)
    model = family.read(f.with_defaults(inner_defaults), inner)
    # the wrapper's config class is vLLM's hf_config, without its language model's layer_types
    fields: dict[str, Any] = {
        "architecture": architecture,
        "tower_heads": _wrapper_towers(f, architecture),
        "hf_layer_types": False,
    }
    if architecture in LANGUAGE_MODEL_LAYERS:
        fields["layer_prefix"] = LANGUAGE_MODEL_LAYERS[architecture]
    return model.evolve(**fields)


def _wrapper_towers(f: ConfigFields, architecture: str) -> tuple[tuple[str, int], ...]:
    """(config path, size) of a :data:`WRAPPERS` model's encoder-tower dimensions that vLLM splits
    across tensor-parallel ranks (see :attr:`BuiltAs.tower_heads`), with the config classes'
    defaults for absent keys."""

    def size(path: str, default: int) -> int:
        value = _at(f.root, path)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f.source, path, not_positive_integer(value))
        return value

    if architecture == "UltravoxModel":
        # UltravoxConfig builds a WhisperConfig from audio_config (6 heads by default)
        return (("audio_config.encoder_attention_heads", size("audio_config.encoder_attention_heads", 6)),)
    if architecture == "Ovis":
        # ovis.py's visual tokenizer backbone (AIMv2Config: 8 heads; SiglipVisionConfig: 12)
        path = "visual_tokenizer_config.backbone_config"
        backbone = _at(f.root, path)
        if not isinstance(backbone, dict):
            raise InputError(f.source, path, missing_field("Ovis: the visual tokenizer's backbone"))
        default = 8 if backbone.get("model_type") == "aimv2" else 12
        return ((f"{path}.num_attention_heads", size(f"{path}.num_attention_heads", default)),)
    if architecture in ("Mistral3ForConditionalGeneration", "LightOnOCRForConditionalGeneration"):
        # the Pixtral vision tower's attention (PixtralVisionConfig: 16 heads)
        return (("vision_config.num_attention_heads", size("vision_config.num_attention_heads", 16)),)
    if architecture == "HCXVisionForCausalLM":
        # its CLIP or SigLIP vision tower's attention (CLIPVisionConfig / SiglipVisionConfig: 12 heads)
        return (("vision_config.num_attention_heads", size("vision_config.num_attention_heads", 12)),)
    if architecture == "Step5ForConditionalGeneration":
        # Step3p7ForConditionalGeneration's frontend, built before the language model: each
        # PerceptionEncoder block's attention heads, then its MLP (ColumnParallelLinear up to
        # int(width * mlp_ratio)), then vit_large_projector (ColumnParallelLinear to the text
        # model's hidden_size); PerceptionEncoderConfig's defaults
        heads = size("vision_config.heads", 16)
        width = size("vision_config.width", 1536)
        ratio = _at(f.root, "vision_config.mlp_ratio")
        ratio = 8960 / 1536 if ratio is None else ratio
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or ratio <= 0:
            raise InputError(f.source, "vision_config.mlp_ratio", f"must be a positive number, got {ratio!r}")
        return (
            ("vision_config.heads", heads),
            ("int(vision_config.width * vision_config.mlp_ratio)", int(width * ratio)),
            ("text_config.hidden_size", f.integer("hidden_size")),
        )
    if architecture == "Step3VLForConditionalGeneration":
        # Step3VisionAttention (Step3VisionEncoderConfig: 16 heads)
        return (("vision_config.num_attention_heads", size("vision_config.num_attention_heads", 16)),)
    if architecture.startswith("GraniteSpeech"):
        # granite_speech.py: the conformer feed-forward (ColumnParallelLinear up to hidden_dim *
        # feedforward_mult) and the CTC output (output_dim); GraniteSpeechEncoderConfig defaults
        ff = size("encoder_config.hidden_dim", 1024) * size("encoder_config.feedforward_mult", 4)
        return (
            ("encoder_config.hidden_dim * encoder_config.feedforward_mult", ff),
            ("encoder_config.output_dim", size("encoder_config.output_dim", 42)),
        )
    return ()


def built_towers(model: ModelGeometry, args: EngineArgs) -> ModelGeometry:
    """HunYuan-VL without its vision tower's sharded heads where the release serves it through the
    Transformers modeling backend and keeps the tower's attention whole (switch
    ``hunyuan_vl_whole_tower``, 0.31+: tensor parallelism need not divide
    ``vision_config.num_attention_heads``; TP 8 over 4 vision heads recorded served on 0.31.0-0.33.0,
    refused on 0.29.0 / 0.30.0 as on 0.28.0, ``tests/fidelity/data/release-architectures/``).
    Every other wrapper: ``model`` itself.

    :returns: ``model`` with no tower heads, or ``model`` itself."""
    rules = rules_for(args.vllm_version)
    hunyuan = model.architecture == "HunYuanVLForConditionalGeneration"
    if hunyuan and model.parallel.tower_heads and rules.hunyuan_vl_whole_tower:
        return model.evolve(tower_heads=())
    return model


#: wrappers whose language model's family makes the tensor-parallel checks vLLM makes while
#: building the wrapper, its tower's first (:meth:`dryboot.vllm.models.registry.Family.verify`
#: asks that family instead of this module's ``verify``): Step5's (``models/step5.py`` ``verify``:
#: the perception-encoder frontend, then Step5's KV heads and DSA geometry)
VERIFIED_BY_TEXT_FAMILY = frozenset({"Step5ForConditionalGeneration"})


def defaults(f: ConfigFields) -> dict[str, Any]:
    """A wrapper's own config class adds no defaults: its language model's family supplies them."""
    return {}


def read(f: ConfigFields, architecture: str, families: Mapping[str, LanguageModelFamily]) -> ModelGeometry:
    """The wrapper's language model, read by ``families[<the architecture vLLM builds>]``.

    :raises InputError: a language model or key the wrapper's model class would not build.
    """
    if architecture in BUILT_AS:
        return _built_as(f, architecture, families)
    return _wrapped(f, architecture, families)
