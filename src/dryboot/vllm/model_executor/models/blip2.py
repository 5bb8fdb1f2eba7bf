"""BLIP-2 (``blip2.py``, ``Blip2ForConditionalGeneration``): the OPT language model of
``text_config``, the wrapper's ``query_tokens`` ``[1, num_query_tokens, Q]`` (a plain parameter:
kept without the tower too), then on every TP rank and pipeline stage, in the model dtype:

* the BLIP vision model (``blip.py``): ``class_embedding`` ``[1, 1, D]``, ``position_embedding``
  ``[1, N + 1, D]`` (``N = (image / patch)^2``), the Conv2d patch embedding ``[D, 3, P, P]`` + bias;
  per layer (:func:`.towers.vit_block`, sharded) two LayerNorms, ``qkv`` ``[3 D / TP, D]`` + bias,
  ``projection`` + bias, ``fc1`` / ``fc2`` + biases; the post LayerNorm;
* the Q-Former (:func:`.towers.qformer`, replicated; its cross attention over the vision width
  ``D``, as ``Blip2Config`` sets ``encoder_hidden_size``) and ``language_projection`` ``[H_text,
  Q]`` + bias.

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them. Language models other
than OPT are refused by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, text_config, vision_language
from dryboot.vllm.model_executor.models.towers import QFORMER_DEFAULTS, linear, qformer, tensors, vit_block

#: ``Blip2VisionConfig``'s defaults (transformers 5.x)
DEFAULTS: dict[str, Any] = {
    "hidden_size": 1408,
    "intermediate_size": 6144,
    "num_hidden_layers": 39,
    "num_attention_heads": 16,
    "image_size": 224,
    "patch_size": 14,
}


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    v = {**DEFAULTS, **(config.get("vision_config") or {})}
    d, p = W._int(v, "hidden_size"), W._int(v, "patch_size")
    W._divide(W._int(v, "num_attention_heads"), tp, "the vision tower's num_attention_heads")
    counts = [d, ((W._int(v, "image_size") // p) ** 2 + 1) * d, *linear(d, 3 * p * p)]
    counts += vit_block(d, W._int(v, "intermediate_size"), tp) * W._int(v, "num_hidden_layers") + [d, d]
    q = {**QFORMER_DEFAULTS, **(config.get("qformer_config") or {})}
    # Blip2Config sets the Q-Former's encoder_hidden_size to the vision width
    counts += qformer(q, encoder_hidden=d) + linear(W._int(text, "hidden_size"), W._int(q, "hidden_size"))
    return tensors("vision", counts, ab)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a language model other than OPT, what the walk refuses."""
    text = config.get("text_config") or {}
    kind = str(text.get("model_type", "opt")) if isinstance(text, Mapping) else "opt"
    if kind != "opt":
        raise InputError("config.json", "text_config.model_type", f"a {kind} language model is not modelled")
    w = vision_language("OPTForCausalLM", _tower, ("image",), tower_of=lambda c: c, text_of=text_config).walk(
        config, par, args
    )
    q = {**QFORMER_DEFAULTS, **(config.get("qformer_config") or {})}
    queries = W._int(config, "num_query_tokens", 32) * W._int(q, "hidden_size")
    w.add("vision", queries * W.model_dtype_bytes({**config, **text}, args.dtype))
    return w


FAMILIES: dict[str, Family] = {"Blip2ForConditionalGeneration": Family(walk, ("image",))}
