"""What decoder families share: attention heads, ``layer_types`` and the geometry record."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeGuard

from dryboot.errors import InputError
from dryboot.vllm import DATA
from dryboot.vllm.config.hf import (
    ConfigFields,
    FamilyExtra,
    LayerKind,
    Mamba2,
    ModelGeometry,
    config_dtype,
    extra_of,
    modelopt_mixed_algo,
    quantization_kv_cache_dtype,
    quantization_method,
)

#: The most layers dryboot plans: far beyond any released model, and a bound on the work a
#: malformed config can ask for.
MAX_LAYERS = 10_000

LAYER_TYPE_NAMES = {
    "full_attention": LayerKind.FULL,
    "attention": LayerKind.FULL,
    "sliding_attention": LayerKind.SLIDING,
    "chunked_attention": LayerKind.CHUNKED,
    "linear_attention": LayerKind.GDN,
    "mamba": LayerKind.MAMBA1,
    "mamba2": LayerKind.MAMBA2,
}


def config_class_lacks(model: str, config_class: str, key: str) -> str:
    """The reason of a refusal of a field that a release reads with transformers' own config class
    (switch ``hf_config_class_architectures``), which neither defines nor defaults it, while the
    model class reads it: vLLM fails building the model (``AttributeError``)."""
    return (
        f"vLLM reads {model}'s config with transformers' {config_class}, which has no default for it: the model "
        f"class fails while it is built (AttributeError: '{config_class}' object has no attribute '{key}')"
    )


def num_layers(f: ConfigFields) -> int:
    """``num_hidden_layers`` (1 to :data:`MAX_LAYERS`).

    :raises InputError: missing, not an integer, or out of range.
    """
    return f.integer("num_hidden_layers", maximum=MAX_LAYERS)


@lru_cache(maxsize=1)
def class_kv_heads_defaults() -> dict[str, int]:
    """``model_type`` -> the fixed ``num_key_value_heads`` its transformers config class sets where
    config.json omits it (``Qwen2Config``: 32, ``Qwen3_5MoeTextConfig``: 2, ...), recorded from the
    transformers of vLLM 0.28.0, 0.29.0 and 0.33.0 (``data/eagle-head-fields.json``); classes whose
    default follows the attention heads are absent."""
    table = json.loads((DATA / "eagle-head-fields.json").read_text(encoding="utf-8"))["model_types"]
    return {t: v["num_key_value_heads"] for t, v in table.items() if isinstance(v.get("num_key_value_heads"), int)}


def attention_heads(f: ConfigFields) -> tuple[int, int, int]:
    """(attention heads, KV heads, head dim): KV heads default to the config class's fixed default
    (:func:`class_kv_heads_defaults`) or else the attention heads, the head dim to
    ``hidden_size // num_attention_heads`` (the HF config classes' rule).

    :raises InputError: a missing or malformed field, attention heads that KV heads do not
        divide (the grouped-query layout every decoder requires), or, without ``head_dim``, a
        ``hidden_size`` the attention heads do not divide.
    """
    heads = f.integer("num_attention_heads")
    kv = f.integer("num_key_value_heads", default=class_kv_heads_defaults().get(str(f.get("model_type") or ""), heads))
    if f.has("head_dim"):
        head_dim = f.integer("head_dim")
    else:
        hidden = f.integer("hidden_size")
        if hidden % heads:
            # transformers' validate_architecture, at vLLM's config load
            raise InputError(
                f.source,
                f.where("hidden_size"),
                f"{hidden} is not a multiple of the {heads} attention heads (transformers refuses the config)",
            )
        head_dim = hidden // heads
    check_kv_heads_divide(f, heads, kv)
    return heads, kv, head_dim


def check_kv_heads_divide(f: ConfigFields, heads: int, kv: int) -> None:
    """:raises InputError: ``kv`` KV heads that do not divide the ``heads`` attention heads
    (vLLM's ``Attention`` asserts ``num_heads % num_kv_heads == 0``)."""
    if heads % kv:
        raise InputError(
            f.source,
            f.where("num_key_value_heads"),
            f"{kv} KV heads do not divide the {heads} attention heads; vLLM's Attention: "
            f"num_heads ({heads}) is not divisible by num_kv_heads ({kv})",
        )


def layer_types(f: ConfigFields, n: int) -> list[str] | None:
    """The config's ``layer_types`` list (validated against ``n`` layers), or ``None``.

    :raises InputError: not a list of ``n`` known type names.
    """
    value = f.get("layer_types")
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != n:
        got = len(value) if isinstance(value, list) else type(value).__name__
        raise InputError(f.source, f.where("layer_types"), f"must list one type per layer ({n}), got {got}")
    for i, name in enumerate(value):
        if name not in LAYER_TYPE_NAMES:
            raise InputError(f.source, f"{f.where('layer_types')}[{i}]", f"unknown layer type {name!r}")
    return list(value)


@dataclass(frozen=True)
class PartialSlidingWindow(FamilyExtra):
    """A config that ``qwen2.py``'s ``Qwen2Model`` refuses while it is built (the language model of
    Qwen2 / Qwen3 / MiMo, and of the wrappers that build one: Qwen2-VL, LLaVA-OneVision, ...): its
    ``layer_types`` mix sliding and full layers while ``max_window_layers`` (at config path
    ``where``) is below ``num_hidden_layers``. Read with :func:`partial_sliding_window`, refused by
    :func:`check_partial_sliding_window` as the model is built, after vLLM's parallel and model
    config checks."""

    where: str
    max_window_layers: int
    num_hidden_layers: int


def partial_sliding_window(f: ConfigFields, n: int, types: list[str] | None) -> PartialSlidingWindow | None:
    """What ``Qwen2Model.__init__`` asserts of ``n`` layers of ``types`` (``None``: no
    ``layer_types``, never refused): mixed types need ``max_window_layers == num_hidden_layers``.

    :returns: the failing fields, or ``None`` when the model builds.
    :raises InputError: ``max_window_layers`` missing or not a non-negative integer, where it is read.
    """
    if types is None or len(set(types)) < 2:
        return None
    first = f.integer("max_window_layers", minimum=0)
    return None if first == n else PartialSlidingWindow(f.where("max_window_layers"), first, n)


def check_partial_sliding_window(model: ModelGeometry) -> None:
    """``Qwen2Model.__init__``'s assertion (vLLM 0.27.1-0.33.0 alike) on a model whose reader kept a
    :class:`PartialSlidingWindow`: raised while the model is built (a family's ``verify_layers``).

    :raises InputError: naming ``max_window_layers`` and vLLM's AssertionError message.
    """
    extra = extra_of(model, PartialSlidingWindow)
    if extra is None:
        return
    raise InputError(
        model.source,
        extra.where,
        "Sliding window for some but all layers is not supported. This model uses sliding window but "
        f"`max_window_layers` = {extra.max_window_layers} is less than `num_hidden_layers` = "
        f"{extra.num_hidden_layers} (vLLM's Qwen2Model, AssertionError while building the model)",
    )


def window(f: ConfigFields, key: str = "sliding_window") -> int | None:
    """A sliding window in tokens (``None``/0 mean none, as vLLM's ``ModelConfig`` reads 0).

    :raises InputError: not a positive integer.
    """
    value = f.get(key)
    if value is None or value == 0:
        return None
    return f.integer(key)


#: The fields transformers' config classes declare ``int`` (5.x, the release vLLM 0.28.0 runs
#: with): their strict dataclass refuses a string, a float (NaN and 4096.0 included), a bool or
#: null for any of them when vLLM's engine start loads the config
#: (``StrictDataclassFieldValidationError``), recorded in ``tests/fidelity/test_numeric_fields.py``.
#: ``intermediate_size`` may also be a list (one size per layer: Gemma-3n).
STRICT_INT_FIELDS = (
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "max_position_embeddings",
)


def _plain_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def check_numeric_fields(f: ConfigFields) -> None:
    """The numeric fields of a (text) config that vLLM 0.28.0 refuses before any geometry:
    a value of :data:`STRICT_INT_FIELDS` that is not an integer; ``max_position_embeddings``
    of 0 or less (``ModelConfig``: "max_model_len must be a positive integer"); a negative
    ``intermediate_size`` (the MLP's weight cannot be built); a RoPE ``factor`` or
    ``original_max_position_embeddings`` that is a string or null (the rotary embedding divides
    by the one, transformers' ``validate_rope`` compares the other).

    :raises InputError: the first such field, named.
    """
    for key in STRICT_INT_FIELDS:
        if key not in f.data:
            continue
        value = f.data[key]
        if key == "intermediate_size" and isinstance(value, list) and value and all(map(_plain_int, value)):
            continue
        if not _plain_int(value):
            raise InputError(
                f.source,
                f.where(key),
                f"must be an integer, got {json.dumps(value)} (transformers' config class declares it int: "
                "vLLM's engine start refuses the config)",
            )
    if "num_key_value_heads" in f.data and f.data["num_key_value_heads"] is None:
        # a strict int for most classes (Mistral), a None ModelConfig refuses for others
        # (Qwen3-Next: total_num_kv_heads); only Llama's class defaults it to the attention heads
        raise InputError(
            f.source,
            f.where("num_key_value_heads"),
            "must be an integer, got null (vLLM 0.28.0 refuses most such configs)",
        )
    positions = f.data.get("max_position_embeddings")
    if _plain_int(positions) and positions <= 0:
        raise InputError(
            f.source,
            f.where("max_position_embeddings"),
            f"must be a positive integer, got {positions} "
            "(vLLM's ModelConfig: max_model_len must be a positive integer)",
        )
    inter = f.data.get("intermediate_size")
    if _plain_int(inter) and inter < 0:
        raise InputError(
            f.source, f.where("intermediate_size"), f"must be >= 0, got {inter} (vLLM cannot build the MLP's weights)"
        )
    for name in ("rope_parameters", "rope_scaling"):
        rope = f.get(name)
        blocks = [rope] if isinstance(rope, dict) else []
        if isinstance(rope, dict) and rope and all(isinstance(v, dict) for v in rope.values()):
            blocks = list(rope.values())
        for block in blocks:
            for key in ("factor", "original_max_position_embeddings"):
                value = block.get(key, 0)
                if value is None or isinstance(value, str):
                    raise InputError(
                        f.source,
                        f"{f.where(name)}.{key}",
                        f"must be a number, got {json.dumps(value)} (vLLM's engine start refuses the config)",
                    )


#: Config keys that bound the context length; the smallest present wins
#: (``ModelArchConfigConvertor.derive_max_model_len_and_key``).
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)


#: RoPE types whose ``max_position_embeddings`` vLLM 0.30+ takes as already scaled (``ModelConfig``'s
#: derived length applies no ``factor`` for them)
PRESCALED_ROPE_TYPES = ("yarn", "deepseek_yarn", "deepseek_llama_scaling")
#: RoPE types whose parameters only size the rotary table (vLLM 0.33's ``_CACHE_ONLY_ROPE_TYPES``)
CACHE_ONLY_ROPE_TYPES = frozenset({"default", "linear", "llama3", "ntk", "proportional"})


def _rope_blocks(f: ConfigFields) -> list[Any]:
    rope = f.get("rope_parameters") or f.get("rope_scaling")
    if not isinstance(rope, dict) or not rope:
        return []
    return list(rope.values()) if all(isinstance(v, dict) for v in rope.values()) else [rope]


def rope_traits(f: ConfigFields, derived: int | None) -> dict[str, Any]:
    """``yarn_unscaled`` and ``rope_sizes_cache_only`` of :class:`MaxLenTraits`: a YaRN config's
    length as 0.30+ derive it (its smallest length key, or ``model_max_length``, scaled only by
    the factors of RoPE types other than YaRN's), and whether every RoPE type only sizes the
    table."""
    blocks = [rp for rp in _rope_blocks(f) if isinstance(rp, dict)]
    kinds = [str(rp.get("rope_type") or rp.get("type") or "default") for rp in blocks]
    yarn = any(k in ("yarn", "deepseek_yarn") for k in kinds)
    found = [f.get(k) for k in MAX_LEN_KEYS if isinstance(f.get(k), int) and not isinstance(f.get(k), bool)]
    unscaled = None
    if yarn and found and derived is not None and "gemma3" not in str(f.get("model_type") or ""):
        base = min(found)
        cap = f.get("model_max_length")
        if isinstance(cap, int) and not isinstance(cap, bool) and cap:
            base = cap
        factor = 1.0
        for rp, kind in zip(blocks, kinds, strict=True):
            if kind not in ("su", "longrope", "llama3", *PRESCALED_ROPE_TYPES):
                factor = rp.get("factor", factor)
        unscaled = int(base * (factor if isinstance(factor, int | float) and factor > 0 else 1.0))
    return {"yarn_unscaled": unscaled, "rope_sizes_cache_only": all(k in CACHE_ONLY_ROPE_TYPES for k in kinds)}


def derived_max_model_len(f: ConfigFields) -> tuple[int | None, str | None, int | None]:
    """(derived max length, the key it came from, the default length when that differs), tokens.

    The smallest of :data:`MAX_LEN_KEYS`, or the config's ``model_max_length`` whenever it sets
    one (``derive_max_model_len_and_key``: Command-R's 8192 ``max_position_embeddings`` with
    ``model_max_length`` 131072 serves 131072), times the RoPE scaling factor (``rope_parameters`` or
    the older ``rope_scaling``, per layer type or flat) unless the type is ``su``, ``longrope``
    or ``llama3`` or the model is a Gemma-3; a ``yarn`` scaling starts from its
    ``original_max_position_embeddings``. A ``longrope`` model defaults to its
    ``original_max_position_embeddings`` (``ModelConfig._get_and_verify_max_len``).

    :raises InputError: a RoPE block that is not an object.
    """
    found = [(f.get(k), k) for k in MAX_LEN_KEYS if isinstance(f.get(k), int) and not isinstance(f.get(k), bool)]
    if not found:
        return None, None, None
    derived, key = min(found)
    cap = f.get("model_max_length")
    if isinstance(cap, int) and not isinstance(cap, bool) and cap:
        # "For Command-R / Cohere, Cohere2 models": a config's model_max_length replaces the
        # smallest key, whichever is smaller (0.27.1-0.33.0 alike)
        derived, key = cap, "model_max_length"
    rope = f.get("rope_parameters") or f.get("rope_scaling")
    model_type = str(f.get("model_type") or "")
    if not rope or "gemma3" in model_type:
        return derived, key, None
    if not isinstance(rope, dict):
        raise InputError(f.source, f.where("rope_parameters"), "must be an object")
    blocks = list(rope.values()) if all(isinstance(v, dict) for v in rope.values()) else [rope]
    factor: float | None = 1.0
    longrope = False
    scaled: float = derived
    for rp in blocks:
        rope_type = rp.get("rope_type") or rp.get("type") or "default"
        longrope = longrope or rope_type == "longrope"
        if rope_type not in ("su", "longrope", "llama3"):
            factor = rp.get("factor", factor)
            if rope_type == "yarn":
                scaled = (
                    rp.get("original_max_position_embeddings") or f.get("original_max_position_embeddings") or derived
                )
    scaled *= factor if isinstance(factor, int | float) else 1.0
    if not isinstance(scaled, int | float) or not math.isfinite(scaled) or int(scaled) <= 0:
        # a NaN, infinite, zero or negative factor (or a yarn base length): vLLM's ModelConfig
        # refuses the length it derives ("max_model_len must be a positive integer"), or fails
        # computing it
        raise InputError(
            f.source,
            f.where(key),
            f"the RoPE scaling gives a maximum length of {scaled!r} tokens from {derived:,}: "
            "vLLM's ModelConfig needs a positive integer",
        )
    default = None
    if longrope:
        default = int(f.get("original_max_position_embeddings") or scaled)
    return int(scaled), key, default


#: The config fields vLLM reads for the number of experts, in order
#: (``ModelArchConfigConvertorBase.get_num_experts``).
_EXPERT_FIELDS = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")


def num_experts(f: ConfigFields) -> int:
    """Experts of an MoE model, 0 for a dense one: the first of :data:`_EXPERT_FIELDS` the
    (text) config sets (with its class defaults), the first entry of a list."""
    for name in _EXPERT_FIELDS:
        value = f.get(name)
        if value:
            if isinstance(value, list):
                value = value[0]
            return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0
    return 0


#: Model types vLLM treats as multimodal-prefix LMs when the config does not say
#: (``ModelArchConfigConvertorBase.is_mm_prefix_lm``).
MM_PREFIX_LM_MODELS = frozenset({"bagel", "gemma3", "molmo2", "moondream3", "paligemma", "umm"})


def is_mm_prefix_lm(f: ConfigFields) -> bool:
    """vLLM's ``ModelConfig.is_mm_prefix_lm`` for most architectures: the config's own
    ``is_mm_prefix_lm``, else whether its (top-level) ``model_type`` is in
    :data:`MM_PREFIX_LM_MODELS` (``transformers_utils/model_arch_config_convertor.py``)."""
    if "is_mm_prefix_lm" in f.root:
        return bool(f.root["is_mm_prefix_lm"])
    return f.root.get("model_type") in MM_PREFIX_LM_MODELS


#: Architectures whose vLLM model file builds its attention layers as ``EncoderOnlyAttention``
#: when the (text) config's ``is_causal`` is false (``llama.py``, ``apertus.py``, ``qwen2.py``, ``qwen3.py``,
#: ``qwen3_next.py``, ``gemma3.py``, ``seed_oss.py`` and the files built on their decoder layers);
#: found by running each verified architecture's tiny config with ``is_causal: false`` through
#: vLLM 0.28.0's engine start. The other files ignore the key.
ENCODER_ONLY_WHEN_NOT_CAUSAL = frozenset(
    {
        "ApertusForCausalLM",
        "Cosmos3ForConditionalGeneration",
        "CwmForCausalLM",
        "Ernie4_5ForCausalLM",
        "Fairseq2LlamaForCausalLM",
        "Gemma3ForCausalLM",
        "Gemma3ForConditionalGeneration",
        "GlmForCausalLM",
        "IQuestCoderForCausalLM",
        "InternLM3ForCausalLM",
        "LLaMAForCausalLM",
        "LlamaForCausalLM",
        "Ministral3ForCausalLM",
        "MistralForCausalLM",
        "Phi3ForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen2VLForConditionalGeneration",
        "Qwen2_5_VLForConditionalGeneration",
        "Qwen3ForCausalLM",
        "Qwen3NextForCausalLM",
        "Qwen3VLForConditionalGeneration",
        "Qwen3_5ForCausalLM",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForCausalLM",
        "Qwen3_5MoeForConditionalGeneration",
        "SeedOssForCausalLM",
    }
)


def not_causal(f: ConfigFields) -> bool:
    """Whether the language model's config sets ``is_causal`` to a false value (the model files
    test ``getattr(config, "is_causal", True)``); a wrapper's is read from its ``text_config``."""
    nested = f.root.get("text_config")
    data = nested if f.prefix == "text_config." and isinstance(nested, dict) else f.data
    return "is_causal" in data and not data["is_causal"]


def geometry(
    f: ConfigFields,
    architecture: str,
    family: str,
    kinds: tuple[LayerKind, ...],
    *,
    heads: tuple[int, int, int],
    sliding_window: int | None = None,
    **extra: Any,
) -> ModelGeometry:
    """The :class:`ModelGeometry` of a decoder with ``kinds`` layers and ``heads``."""
    num_heads, kv, head_dim = heads
    derived, key, default_len = derived_max_model_len(f)
    quant = quantization_method(f)
    if LayerKind.SLIDING in kinds and sliding_window is None:
        raise InputError(f.source, f.where("sliding_window"), "sliding-window layers need a window")
    chunk = f.opt_int("attention_chunk_size") if LayerKind.CHUNKED in kinds else None
    if LayerKind.CHUNKED in kinds and chunk is None:
        raise InputError(f.source, f.where("attention_chunk_size"), "chunked layers need a size")
    fields: dict[str, Any] = {
        "source": f.source,
        "architecture": architecture,
        "model_type": str(f.get("model_type") or ""),
        "dtype": config_dtype(f),
        "layer_kinds": kinds,
        "num_kv_heads": kv,
        "head_dim": head_dim,
        "head_dim_v": head_dim,
        "sliding_window": sliding_window if LayerKind.SLIDING in kinds else None,
        "attention_chunk_size": chunk,
        "max_position_embeddings": derived,
        "max_len_key": key or "max_position_embeddings",
        "default_max_model_len": default_len,
        "model_max_length": f.opt_int("model_max_length"),
        **rope_traits(f, derived),
        "num_attention_heads": num_heads,
        "quant_kv_cache_dtype": quantization_kv_cache_dtype(f),
        "quant_method": quant[0],
        "kv_scales_in_checkpoint": quant[1],
        "modelopt_mixed_algo": modelopt_mixed_algo(f),
        "family": family,
        # ModelConfig.get_mamba_chunk_size: mamba_chunk_size, else chunk_size, else 2048
        "mamba_chunk_size": f.opt_int("mamba_chunk_size") or f.opt_int("chunk_size") or 2048,
        # config classes that name it otherwise map hidden_size to it (GPT2Config, GPTJConfig,
        # GPTBigCodeConfig: n_embd; BloomConfig: n_embed)
        "hidden_size": f.opt_int("hidden_size") or f.opt_int("n_embd") or f.opt_int("n_embed") or 0,
        "num_experts": num_experts(f),
        "mm_prefix_lm": is_mm_prefix_lm(f),
        "config_soft_cap": bool(f.get("attn_logit_softcapping")),
        "encoder_only_attention": architecture in ENCODER_ONLY_WHEN_NOT_CAUSAL and not_causal(f),
    }
    fields.update(extra)
    return ModelGeometry.build(**fields)


def mamba2_mixer(f: ConfigFields, inner: int) -> Mamba2:
    """The Mamba2 mixer ``inner`` wide of the configs that spell it ``mamba_n_heads``,
    ``mamba_d_head`` (``"auto"``: the width over the heads, as transformers' Granite-4 / Falcon-H1
    config classes derive it), ``mamba_n_groups``, ``mamba_d_state``, ``mamba_d_conv``,
    ``mamba_chunk_size``.

    :raises InputError: heads that do not tile the width (the config classes'
        ``validate_architecture`` refuses it).
    """
    heads = f.integer("mamba_n_heads")
    head = inner // heads if f.get("mamba_d_head") == "auto" else f.integer("mamba_d_head")
    if heads * head != inner:
        raise InputError(
            f.source,
            f.where("mamba_d_head"),
            f"{heads} heads of {head} do not match the Mamba2 width {inner} "
            "(transformers refuses the config: the Mamba head state does not match the intermediate size)",
        )
    return Mamba2(
        num_heads=heads,
        head_dim=head,
        n_groups=f.integer("mamba_n_groups"),
        state_size=f.integer("mamba_d_state"),
        conv_kernel=f.integer("mamba_d_conv"),
        chunk_size=f.opt_int("mamba_chunk_size"),
        intermediate_size=inner,
    )
