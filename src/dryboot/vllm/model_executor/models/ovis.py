"""Ovis (``ovis.py``, ``Ovis``): the language model of ``llm_config`` (Qwen2, Qwen3 or Llama by its
``model_type``), then on every TP rank and pipeline stage the visual tokenizer and the visual
embedding table, in the model dtype:

* the AIMv2 backbone (``aimv2.py``): ``pos_embed`` ``[1, (image / patch)^2, D]``, the Conv2d
  patchifier ``[D, 3, P, P]`` + bias and its RMSNorm ``[D]``; per block (sharded, no biases)
  ``norm_1`` / ``norm_2`` RMSNorms, ``attn.qkv`` ``[3 D / TP, D]``, ``attn.proj`` ``[D, D / TP]``,
  a gated MLP ``fc13`` ``[2 I / TP, D]``, ``fc2`` ``[D, I / TP]``;
* the head: ``[V - 5, D x s^2]`` (no bias; ``V`` the tokenizer's ``vocab_size``, less the five
  indicator tokens, ``s = hidden_stride``) and a LayerNorm ``[V - 5]``;
* ``vte``: the visual embedding table ``[V, H_text]``.

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them. Other backbones
(SigLIP: Ovis 2) are refused by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, vision_language
from dryboot.vllm.model_executor.models.towers import tensors, vit_block

TEXT_ARCHITECTURES = {"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "llama": "LlamaForCausalLM"}
#: the indicator tokens the tokenizer's head leaves out of its vocabulary (``IMAGE_INDICATOR_IDS``)
INDICATOR_TOKENS = 5


def _tower(vt: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    b = vt.get("backbone_config") or {}
    if b.get("model_type") != "aimv2":
        raise InputError(
            "config.json",
            "visual_tokenizer_config.backbone_config",
            f"a {b.get('model_type')} backbone is not modelled",
        )
    d, p = W._int(b, "hidden_size"), W._int(b, "patch_size")
    W._divide(W._int(b, "num_attention_heads"), tp, "the vision tower's num_attention_heads")
    vocab, s = W._int(vt, "vocab_size"), W._int(vt, "hidden_stride", 1)
    block = vit_block(d, W._int(b, "intermediate_size"), tp, bias=False, norm_bias=False, gated=True)
    counts = [(W._int(b, "image_size") // p) ** 2 * d, d * 3 * p * p, d, d, *block * W._int(b, "num_hidden_layers")]
    head = vocab - INDICATOR_TOKENS
    counts += [head * d * s * s, head, head, vocab * W._int(text, "hidden_size")]
    return tensors("vision", counts, ab)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a language model or backbone not modelled, what the walk refuses."""
    text = config.get("llm_config") or {}
    kind = str(text.get("model_type", "qwen2")) if isinstance(text, Mapping) else "qwen2"
    if kind not in TEXT_ARCHITECTURES:
        raise InputError("config.json", "llm_config.model_type", f"a {kind} language model is not modelled")
    family = vision_language(
        TEXT_ARCHITECTURES[kind],
        _tower,
        ("image",),
        text_of=lambda c: c.get("llm_config"),
        tower_of=lambda c: c.get("visual_tokenizer_config"),
    )
    return family.walk(config, par, args)


FAMILIES: dict[str, Family] = {"Ovis": Family(walk, ("image",))}
