"""Isaac (``isaac.py``, ``IsaacForConditionalGeneration``, vLLM 0.27.1-0.33.0): the Qwen3 language
model of the file's ``text_config`` when it gives one, else of its top level (``IsaacConfig`` is a
``Qwen3Config``; the keys the model class reads at the top level must agree with ``text_config``,
checked by the geometry's reading, ``wrappers._isaac_checked``),
then on every TP rank and pipeline stage the SigLIP-2 tower of ``vision_config``
(``PixelShuffleSiglip2VisionConfig``) and its projector, in the model dtype. Its layers' rotary table
is the multimodal one (:func:`mrope_text`: four times ``max_position_embeddings`` positions).
``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them (``_mark_tower_model``).

With D the tower's ``hidden_size``, s its ``pixel_shuffle_scale_factor`` (1 by default), h = D s^2
and H the text ``hidden_size``:

* the tower (:func:`.towers.siglip2_naflex`): ``patch_embedding`` ``ReplicatedLinear`` ``[D, C x P
  x P]`` + bias, ``position_embedding`` ``[num_patches, D]``, the SigLIP blocks sharded
  (``QKVParallelLinear`` + bias, ``out_proj`` ``RowParallelLinear`` + bias, ``SiglipMLP``
  ``fc1`` / ``fc2`` + biases, two LayerNorms), the post LayerNorm;
* the projector (``IsaacVisionEmbedding``): ``linear_fc1`` ``ColumnParallelLinear`` ``[4h / TP,
  h]`` and ``linear_fc2`` ``RowParallelLinear`` ``[H, 4h / TP]``, neither with a bias.

Under ``--mm-encoder-tp-mode data`` the tower's attention and MLP are ``disable_tp`` (whole on
every rank), the projector stays split (``compose.vision_language``'s ``split_in_data``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, vision_language
from dryboot.vllm.model_executor.models.towers import SIGLIP2_DEFAULTS, linear, siglip2_naflex, tensors

#: ``PixelShuffleSiglip2VisionConfig``'s defaults (transformers' ``Siglip2VisionConfig``'s, and
#: its own ``num_patches`` and ``pixel_shuffle_scale_factor``)
DEFAULTS: dict[str, Any] = {**SIGLIP2_DEFAULTS, "pixel_shuffle_scale_factor": 1}


def projector(d: int, scale: int, out: int, tp: int) -> list[int]:
    """``IsaacVisionEmbedding``'s two linears on one rank (elements): ``[4h / TP, h]`` and
    ``[out, 4h / TP]``, h = ``d * scale ** 2``, no biases.

    :raises InputError: 4h that TP does not divide (vLLM's parallel linears refuse it)."""
    h = d * scale * scale
    per_rank = W._divide(4 * h, tp, "Isaac's projector width (4 x hidden_size x pixel_shuffle_scale_factor^2)")
    return linear(per_rank, h, bias=False) + linear(out, per_rank, bias=False)


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """The SigLIP-2 tower on one rank (``tp`` 1 under ``--mm-encoder-tp-mode data``: its
    attention and ``SiglipMLP`` are ``disable_tp`` there)."""
    v = {**DEFAULTS, **(config.get("vision_config") or {})}
    return tensors("vision", siglip2_naflex(v, tp), ab)


def _projector(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """``IsaacVisionEmbedding``'s projector on one rank: split by TP in either mode (its linears
    take no ``disable_tp``)."""
    v = {**DEFAULTS, **(config.get("vision_config") or {})}
    counts = projector(
        W._int(v, "hidden_size"), W._int(v, "pixel_shuffle_scale_factor"), W._int(text, "hidden_size"), tp
    )
    return tensors("vision", counts, ab)


def _text(config: Mapping[str, Any]) -> dict[str, Any]:
    """The Qwen3 model's keys: the file's ``text_config`` when it gives one (the decoder layers'
    config; the keys the model class reads at the top level agree with it, checked by the
    geometry's reading), else the top level without its sub-configs."""
    nested = config.get("text_config")
    if isinstance(nested, Mapping):
        return dict(nested)
    return {k: v for k, v in config.items() if k not in ("text_config", "vision_config")}


def mrope_text(text: Mapping[str, Any]) -> dict[str, Any]:
    """The text config with the multimodal RoPE ``isaac.py`` gives it whatever the file says:
    ``rope_parameters`` (the file's, else its ``rope_scaling``, else the default rope) with
    ``mrope_section`` ``[d / 4, d / 8, d / 8]`` of ``head_dim`` d (128 by default), so its layers'
    ``MRotaryEmbedding`` caches four times ``max_position_embeddings`` positions (a scaled one is
    refused by the walk's rotary table)."""
    rope = text.get("rope_parameters") or text.get("rope_scaling") or {"rope_type": "default"}
    d = W._int({"head_dim": 128, **text}, "head_dim")
    return {**text, "rope_parameters": {**rope, "mrope_section": [d // 4, d // 8, d // 8]}}


FAMILIES: dict[str, Family] = {
    "IsaacForConditionalGeneration": vision_language(
        "Qwen3ForCausalLM",
        _tower,
        ("image",),
        prepare=mrope_text,
        text_of=_text,
        tower_of=lambda c: c,
        split_in_data=_projector,
    ),
}
