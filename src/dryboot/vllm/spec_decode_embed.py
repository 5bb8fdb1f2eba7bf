"""Whether a drafter finds the target's input embedding on the last pipeline stage (vLLM 0.30+).

Releases that run drafters under pipeline parallelism (``VersionRules.pp_draft_models``) load an
EAGLE / EAGLE-3 / DFlash / DSpark drafter on the last stage with the V2 model runner
(``v1/worker/gpu/spec_decode/eagle/utils.py`` ``maybe_share_target_embed``, called by
``load_eagle_model``, ``load_dflash_model``, ``load_dspark_model``). Under PP it raises
``RuntimeError: <DrafterClass> needs the target input embedding, but it is unavailable on this PP
stage`` when

* the drafter's class has the ``has_own_embed_tokens`` attribute (``SupportsEagleBase``: every
  EAGLE-1, EAGLE-3, DFlash and DSpark class; ``False`` unless ``process_eagle_weight`` saw an
  ``embed_tokens`` weight in the drafter checkpoint while loading it),
* its inner model has ``embed_tokens`` (every such class builds one),
* the target's inner model (``get_language_model().model`` for a wrapper) holds no embedding on the
  last stage (``embed_tokens`` / ``embedding`` a ``PPMissingLayer``),
* and the drafter checkpoint carries no ``embed_tokens`` weight of its own.

Where the target's last stage holds the embedding is per model class (:func:`last_stage_embedding`).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

#: ``spec_decode_needs_target_embed``'s methods (``models/utils.py``), the loaders above
EMBED_SHARING_METHODS = frozenset({"eagle", "eagle3", "dflash", "dspark"})

#: target classes whose inner model is ``llama.py``'s ``LlamaModel`` or ``qwen2.py``'s ``Qwen2Model``
#: (``Qwen3Model``, ``MistralModel`` and the Qwen2.5-VL / Qwen3-VL language models build on them):
#: ``is_first_rank or (tie_word_embeddings and is_last_rank) or spec_decode_needs_target_embed``
#: builds the embedding on the last stage for these methods (0.30.0-0.33.0)
LAST_STAGE_FOR_DRAFTERS = frozenset(
    {
        "LlamaForCausalLM",
        "MistralForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen3ForCausalLM",
        "Qwen2_5_VLForConditionalGeneration",
        "Qwen3VLForConditionalGeneration",
    }
)
#: target classes that build the embedding on every stage (no ``PPMissingLayer`` around it:
#: ``qwen3_moe.py``, ``qwen2_moe.py``, ``mixtral.py``, ``gemma2.py``, ``gemma3.py`` (and
#: ``gemma3_mm.py`` over it), ``qwen3_next.py``, ``qwen3_5.py``, ``nemotron_h.py``,
#: ``granitemoehybrid.py``; 0.30.0-0.33.0)
EVERY_STAGE = frozenset(
    {
        "Qwen3MoeForCausalLM",
        "Qwen2MoeForCausalLM",
        "MixtralForCausalLM",
        "Gemma2ForCausalLM",
        "Gemma3ForCausalLM",
        "Gemma3ForConditionalGeneration",
        "Qwen3NextForCausalLM",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen3_5ForCausalLM",
        "Qwen3_5MoeForCausalLM",
        "NemotronHForCausalLM",
        "GraniteMoeHybridForCausalLM",
    }
)
#: target classes that build it on the last stage only when the config ties the LM head to it
#: (``is_first_rank or (config.tie_word_embeddings and is_last_rank)``: ``granite.py``, ``exaone4.py``)
LAST_STAGE_WHEN_TIED = frozenset({"GraniteForCausalLM", "Exaone4ForCausalLM"})
#: target classes that build it on the first stage only (``falcon_h1.py``, ``deepseek_v2.py``)
FIRST_STAGE_ONLY = frozenset({"FalconH1ForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"})

#: drafter architectures whose vLLM class is named otherwise (the release registry's entry; the
#: class name is what vLLM's refusal says)
DRAFTER_CLASSES = {
    "DFlashDraftModel": "DFlashQwen3ForCausalLM",
    "MuseGlimmerAssistantModel": "DFlashQwen3ForCausalLM",
    "DFlashMuseGlimmerAssistantModel": "DFlashQwen3ForCausalLM",
    "DFlash2DraftModel": "DFlash2Qwen3ForCausalLM",
    "LlamaForCausalLMEagle3": "Eagle3LlamaForCausalLM",
    "Eagle3MiniMaxM2ForCausalLM": "Eagle3LlamaForCausalLM",
    "Eagle3Qwen2_5vlForCausalLM": "Eagle3LlamaForCausalLM",
    "Eagle3Qwen3vlForCausalLM": "Eagle3LlamaForCausalLM",
    "PEagleDraftModel": "Eagle3LlamaForCausalLM",
    "PeagleLlamaForCausalLM": "Eagle3LlamaForCausalLM",
    "PeagleQwen3ForCausalLM": "Eagle3Qwen3ForCausalLM",
    "Eagle3DeepseekV3ForCausalLM": "Eagle3DeepseekV2ForCausalLM",
    "EagleDeepSeekMTPModel": "EagleDeepseekV3ForCausalLM",
    "Qwen3DSparkModel": "Qwen3DSparkForCausalLM",
    "Qwen3OmniDSparkModel": "Qwen3DSparkForCausalLM",
    "Gemma4DSparkModel": "Gemma4DSparkForCausalLM",
}


def _config(source: str) -> dict[str, object] | None:
    """The JSON object at ``source`` (a ``config.json`` or its directory), or ``None``."""
    path = Path(source)
    path = path / "config.json" if path.is_dir() else path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def config_ties_embeddings(source: str) -> bool | None:
    """The target config's ``tie_word_embeddings`` (``False`` when absent, as the Granite and
    EXAONE-4 config classes default it), read from ``source`` (its ``config.json`` or directory);
    ``None`` when the file cannot be read or the value is no boolean."""
    data = _config(source)
    value = data.get("tie_word_embeddings", False) if data is not None else None
    return value if isinstance(value, bool) else None


def _vocab_size(source: str) -> int | None:
    """``vocab_size`` of the config at ``source`` (its ``text_config``'s for a wrapper), or ``None``."""
    data = _config(source)
    text = data.get("text_config") if data is not None else None
    value = (text if isinstance(text, dict) else data or {}).get("vocab_size")
    return value if type(value) is int else None


def shares_embedding(method: str, target_source: str, drafter_source: str) -> bool:
    """Whether the release's loader for ``method`` asks ``maybe_share_target_embed`` at all: DSpark's
    (``load_dspark_model``) only when the draft vocabulary is no larger than the target's (an
    unreadable size: asked)."""
    if method not in EMBED_SHARING_METHODS:
        return False
    if method != "dspark":
        return True
    draft, target = _vocab_size(drafter_source), _vocab_size(target_source)
    return draft is None or target is None or draft <= target


def last_stage_embedding(architecture: str, source: str) -> bool | None:
    """Whether the target's last pipeline stage holds its input embedding while an EAGLE / DFlash /
    DSpark drafter is configured (vLLM 0.30.0-0.33.0, the class's ``__init__``; the module text);
    ``None``: the class's placement is not modelled. ``source`` is the target's config (read for
    ``tie_word_embeddings`` where the class asks it)."""
    if architecture in LAST_STAGE_FOR_DRAFTERS or architecture in EVERY_STAGE:
        return True
    if architecture in LAST_STAGE_WHEN_TIED:
        return config_ties_embeddings(source)
    if architecture in FIRST_STAGE_ONLY:
        return False
    return None


def drafter_embedding_refusal(
    target_architecture: str,
    target_source: str,
    drafter_architecture: str,
    drafter_source: str,
    method: str,
    draft_tensors: Collection[str] | None,
) -> str | None:
    """Why vLLM's V2 model runner refuses to load this drafter on the last pipeline stage (PP > 1,
    a release with ``pp_draft_models``), in its words (``maybe_share_target_embed``), or ``None``
    where it loads it.

    :param target_source: the target's config (``config.json`` or its directory).
    :param drafter_source: the drafter's config.
    :param draft_tensors: the drafter checkpoint's tensor names (its safetensors headers), or
        ``None`` when the directory holds no weights: an ``embed_tokens`` weight sets
        ``has_own_embed_tokens``, and vLLM then keeps the drafter's own embedding.
    """
    if not shares_embedding(method, target_source, drafter_source):
        return None
    placed = last_stage_embedding(target_architecture, target_source)
    if placed:
        return None
    cls = DRAFTER_CLASSES.get(drafter_architecture, drafter_architecture)
    where = (
        "ties no LM head to its input embedding, which it then builds on the first pipeline stage only"
        if target_architecture in LAST_STAGE_WHEN_TIED
        else "builds its input embedding on the first pipeline stage only"
    )
    if placed is None:
        return (
            f"{target_architecture} with a {method} drafter ({cls}) under pipeline parallelism: whether its last "
            "stage holds the input embedding the drafter needs is not modelled (vLLM raises 'needs the target "
            "input embedding, but it is unavailable on this PP stage' where it does not)"
        )
    if draft_tensors is not None and any("embed_tokens" in name for name in draft_tensors):
        return None
    condition = (
        "the drafter checkpoint has no embed_tokens weight"
        if draft_tensors is not None
        else "dryboot reads no drafter weights: vLLM loads it only when the drafter checkpoint carries its own "
        "embed_tokens"
    )
    return (
        f"{cls} needs the target input embedding, but it is unavailable on this PP stage "
        f"({target_architecture} {where}; {condition})"
    )
