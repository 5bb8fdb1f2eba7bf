"""MiniCPM-V 4.6 (``minicpmv4_6.py``, ``MiniCPMV4_6ForConditionalGeneration``): the text-only
Qwen3.5 language model of ``text_config`` (``Qwen3_5ForCausalLM``: Qwen3.5-MoE's layers for a
``qwen3_5_moe_text`` config, :func:`_qwen3_5`), then on every TP rank and pipeline stage, in the
model dtype:

* the Idefics2 vision transformer ``vpm`` (:mod:`.siglip` without ``position_ids``, the blocks
  sharded, the post LayerNorm; one layer fewer under ``drop_vision_last_layer``);
* the window-attention merger ``vit_merger``: ``qkv_proj`` ``[3 D / TP, D]`` + bias, ``out_proj``
  ``[D, D / TP]`` + bias, a LayerNorm ``[D]``, ``pre_norm`` LayerNorm ``[4 D]``, ``linear_1``
  ``[4 I, 4 D]`` + bias and ``linear_2`` ``[D, 4 I]`` + bias (plain ``nn.Linear``, replicated);
* the merger's downsample MLP: ``pre_norm`` ``[4 D]``, ``linear_1`` ``[4 D, 4 D]`` + bias,
  ``linear_2`` ``[H_text, 4 D]`` + bias.

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import siglip
from dryboot.vllm.model_executor.models.compose import Family, text_config, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors


def tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int, *, drop_last: bool) -> W.RankWeights:
    """The towers of ``config`` at TP ``tp`` in ``ab``-byte elements (the list above), over
    ``vision_config``'s layers less the last where ``drop_last`` (what the wrapper's
    ``_drop_vision_last_layer`` says); the downsample MLP ends at ``text``'s ``hidden_size``.

    :raises InputError: a width missing or not divisible by ``tp`` (named)."""
    v = {**siglip.DEFAULTS, **(config.get("vision_config") or {})}
    if drop_last:
        v["num_hidden_layers"] = W._int(v, "num_hidden_layers") - 1
    w = siglip.vision_tower(v, tp, ab, position_ids=False)
    d, inter = W._int(v, "hidden_size"), W._int(v, "intermediate_size")
    d_r = W._divide(d, tp, "the vision merger's width")
    counts = [*linear(3 * d_r, d), *linear(d, d_r), d, d, 4 * d, 4 * d, *linear(4 * inter, 4 * d)]
    counts += linear(d, 4 * inter)
    counts += [4 * d, 4 * d, *linear(4 * d, 4 * d), *linear(W._int(text, "hidden_size"), 4 * d)]
    return tensors("vision", counts, ab, into=w)


def _qwen3_5(text: Mapping[str, Any], par: W.Parallel, args: W.WalkArgs) -> W.RankWeights:
    """``Qwen3_5ForCausalLM`` on the text config ``text`` (flat, the wrapper's
    ``tie_word_embeddings`` / ``torch_dtype`` merged in): qwen3_5.py's decoder layers take their
    MLP from the text config's ``model_type``, a sparse MoE block (router, experts, shared
    expert) for ``qwen3_5_moe_text`` (MiniCPM-V 4.7-35B-A3B's), so that language model is
    Qwen3.5-MoE's (walked as ``Qwen3_5MoeForConditionalGeneration``'s without its tower:
    checked against vLLM 0.33.0 on the meta device), else the dense one."""
    plain = {k: v for k, v in text.items() if k != "architectures"}
    if plain.get("model_type") == "qwen3_5_moe_text":
        outer: dict[str, Any] = {k: plain[k] for k in ("tie_word_embeddings", "torch_dtype") if k in plain}
        config: dict[str, Any] = {
            **outer,
            "architectures": ["Qwen3_5MoeForConditionalGeneration"],
            "text_config": plain,
            "vision_config": {},
        }
    else:
        config = {**plain, "architectures": ["Qwen3_5ForCausalLM"]}
    return W._walk(config, par, args.hf_quant, args.dtype, None, True, args.max_num_batched_tokens)


#: the language model of MiniCPM-V 4.6 / 4.7 (:func:`_qwen3_5`)
LANGUAGE_MODEL = Family(_qwen3_5)


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    # MiniCPM-V 4.6's model class drops the last vision layer where its config says so
    return tower(config, text, tp, ab, drop_last=bool(config.get("drop_vision_last_layer")))


FAMILIES: dict[str, Family] = {
    "MiniCPMV4_6ForConditionalGeneration": vision_language(
        LANGUAGE_MODEL, _tower, ("image",), tower_of=lambda c: c, text_of=text_config
    ),
}
