"""InternVL in the Hugging Face layout (``interns1.py``, ``InternVLForConditionalGeneration``): the
language model of ``text_config`` (Qwen2 or Qwen3, by its ``model_type``), then on every TP rank
and pipeline stage the InternViT tower (``interns1_vit.py`` ``InternS1VisionModel``, all
``num_hidden_layers``) and the projector, in the model dtype:

* embeddings: ``cls_token`` ``[1, 1, D]``, ``position_embeddings`` ``[1, N + 1, D]``
  (``N = (image / patch)^2`` per side pair), the Conv2d patch projection ``[D, C, P, P]`` + bias;
* per layer: ``lambda_1`` / ``lambda_2`` ``[D]``, ``q_proj`` / ``k_proj`` / ``v_proj`` (plain
  ``nn.Linear`` ``[D, D]``, replicated; biases under ``attention_bias``; RMS q/k norms ``[D]``
  under ``use_qk_norm``), ``projection_layer`` ``[D, D]`` + bias, ``fc1`` (ColumnParallel ``[I /
  TP, D]`` + bias), ``fc2`` (RowParallel ``[D, I / TP]``, bias whole), two norms
  (``norm_type`` ``layer_norm``: weight and bias; ``rms_norm``: weight);
* a final LayerNorm ``[D]`` (weight, bias) unless ``use_mean_pooling`` (true by default);
* the projector (``InternS1MultiModalProjector``, plain linears, replicated): LayerNorm over
  ``M = D x (1 / downsample_ratio)^2`` (weight, bias), ``linear_1`` ``[H, M]`` + bias,
  ``linear_2`` ``[H, H]`` + bias.

The head is tied to the embedding unless the wrapper's config says otherwise (``InternVLConfig``'s
default). ``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 and video 0 drop the
tower and the projector.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, vision_language

#: ``InternVLVisionConfig``'s defaults (transformers 5.x) for what a ``vision_config`` leaves out
DEFAULTS: dict[str, Any] = {
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "attention_bias": False,
    "use_qk_norm": False,
    "intermediate_size": 4096,
    "norm_type": "layer_norm",
    "image_size": [448, 448],
    "patch_size": [14, 14],
    "num_channels": 3,
    "use_mean_pooling": True,
}
TEXT_ARCHITECTURES = {"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}


def _pair(v: Any) -> tuple[int, int]:
    if isinstance(v, list) and len(v) == 2 and all(type(x) is int and x > 0 for x in v):
        return v[0], v[1]
    if type(v) is int and v > 0:
        return v, v
    raise InputError("config.json", "vision_config", f"an image or patch size of {v!r}")


def _tower(downsample: float) -> Any:
    def tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
        v = {**DEFAULTS, **v}
        d, inter = W._int(v, "hidden_size"), W._int(v, "intermediate_size")
        i_r = W._divide(inter, tp, "the vision tower's intermediate_size")
        (ih, iw), (ph, pw) = _pair(v["image_size"]), _pair(v["patch_size"])
        positions = (ih // ph) * (iw // pw) + 1
        norm = [d, d] if v["norm_type"] == "layer_norm" else [d]
        w = W.RankWeights()
        for n in (d, positions * d, d * W._int(v, "num_channels") * ph * pw, d):
            w.add("vision", n * ab)
        bias = bool(v.get("attention_bias"))
        block = [d, d, *([d * d, *([d] if bias else [])] * 3), *([d, d] if v.get("use_qk_norm") else [])]
        block += [d * d, d, i_r * d, i_r, d * i_r, d, *norm, *norm]
        for _ in range(W._int(v, "num_hidden_layers")):
            for n in block:
                w.add("vision", n * ab)
        if not v.get("use_mean_pooling"):
            w.add("vision", d * ab)
            w.add("vision", d * ab)
        m = d * int(1 / downsample) ** 2
        h = W._int(text, "hidden_size")
        for n in (m, m, h * m, h, h * h, h):
            w.add("vision", n * ab)
        return w

    return tower


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a language model other than Qwen2 / Qwen3, what the walk refuses."""
    text = config.get("text_config") or {}
    kind = str(text.get("model_type", "qwen2")) if isinstance(text, Mapping) else "qwen2"
    if kind not in TEXT_ARCHITECTURES:
        raise InputError("config.json", "text_config.model_type", f"a {kind} language model is not modelled")
    ratio = float(config.get("downsample_ratio", 0.5))
    # InternVLConfig ties the head to the embedding unless it says otherwise
    config = {"tie_word_embeddings": True, **config}
    return vision_language(TEXT_ARCHITECTURES[kind], _tower(ratio)).walk(config, par, args)


FAMILIES: dict[str, Family] = {"InternVLForConditionalGeneration": Family(walk, ("image", "video"))}
