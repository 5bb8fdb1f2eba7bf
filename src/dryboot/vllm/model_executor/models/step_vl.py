"""The perception-encoder frontend of Step's vision-language wrappers (``step_vl.py``'s
``PerceptionEncoder`` and ``step3p7.py``'s ``vit_large_projector``), on one rank, in the model
dtype unless said (widths of vLLM's ``PerceptionEncoderConfig``, :data:`VISION_DEFAULTS`):

* ``conv1`` ``[D, 3, P, P]`` (no bias), ``ln_pre`` (``use_ln_pre``) and ``ln_post``
  (``use_ln_post``) LayerNorms ``[D]`` + bias, ``positional_embedding`` ``[cls + G^2, D]``
  (``use_abs_posemb``; ``G = image_size // patch_size``, ``cls`` 1 under ``use_cls_token``, which
  also adds ``class_embedding`` ``[D]``);
* per block (``layers``): two LayerNorms, ``qkv_proj`` ``[3 D / TP, D]`` + bias, ``out_proj`` ``[D,
  D / TP]`` + bias, ``fc1`` ``[I / TP, D]`` + bias, ``fc2`` ``[D, I / TP]`` + bias (``I = int(D x
  mlp_ratio)``), ``ls_1`` / ``ls_2`` ``[D]`` under ``ls_init_value``, and its 2-D rotary
  ``freqs_cache`` (a float32 buffer ``[cls + G^2, D / heads]``);
* ``vit_downsampler1`` ``[2 D, D, 3, 3]`` + bias, ``vit_downsampler2`` ``[4 D, 2 D, 3, 3]`` + bias;
* ``vit_large_projector`` (``ColumnParallelLinear`` gathering its output) ``[H_text / TP, 4 D]``
  (+ bias under the wrapper's ``projector_bias``).

Under ``--mm-encoder-tp-mode data`` (the class supports it) every split layer, projector included,
is whole on every rank (``tp`` 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.towers import linear, tensors, vit_block

#: vLLM's ``PerceptionEncoderConfig`` defaults (``transformers_utils/configs/step5.py``, 0.33.0)
VISION_DEFAULTS: dict[str, Any] = {
    "patch_size": 14,
    "width": 1536,
    "layers": 47,
    "heads": 16,
    "mlp_ratio": 8960 / 1536,
    "ls_init_value": 0.1,
    "image_size": 728,
    "use_abs_posemb": True,
    "use_cls_token": False,
    "use_rope2d": True,
    "use_ln_pre": True,
    "use_ln_post": False,
}


def perception_encoder(
    vision: Mapping[str, Any], text_hidden: int, projector_bias: bool, tp: int, ab: int
) -> W.RankWeights:
    """The encoder and ``vit_large_projector`` on one rank (module docstring); ``tp`` 1: whole.

    :raises InputError: ``use_rope2d`` false (vLLM raises), heads or widths TP does not divide."""
    v = {**VISION_DEFAULTS, **vision}
    if not v.get("use_rope2d"):
        raise InputError("config.json", "vision_config.use_rope2d", "must be true (vLLM raises)")
    d, heads, p = W._int(v, "width"), W._int(v, "heads"), W._int(v, "patch_size")
    W._divide(heads, tp, "the vision tower's heads")
    grid = W._int(v, "image_size") // p
    cls = 1 if v.get("use_cls_token") else 0
    inter = int(d * float(v["mlp_ratio"]))
    counts = [d * 3 * p * p]
    counts += [d, d] if v.get("use_ln_pre") else []
    counts += [d, d] if v.get("use_ln_post") else []
    counts += [(cls + grid * grid) * d] if v.get("use_abs_posemb") else []
    counts += [d] if cls else []
    layer_scale = v.get("ls_init_value") is not None
    for _ in range(W._int(v, "layers")):
        counts += vit_block(d, inter, tp, layer_scale=layer_scale, whose="the vision tower's")
    counts += [2 * d * d * 9, 2 * d, 4 * d * 2 * d * 9, 4 * d]
    counts += linear(W._divide(text_hidden, tp, "the projector's output"), 4 * d, projector_bias)
    rope = 4 * (cls + grid * grid) * (d // heads)
    return tensors("vision", counts, ab, buffers=[rope] * W._int(v, "layers"))
