"""Pixtral's vision tower in its Hugging Face layout (``pixtral.py``, ``PixtralHFVisionModel``) as
the Mistral3 and LLaVA families build it, on one TP rank, in the model dtype: the Conv2d
``patch_conv`` ``[D, C, P, P]`` (no bias) and the ``ln_pre`` RMSNorm ``[D]``; per encoder layer
built the ``attention_norm`` and ``ffn_norm`` RMSNorms ``[D]``, ``qkv_proj``
(``QKVParallelLinear`` ``[3 D / TP, D]``), ``o_proj`` (``RowParallelLinear`` ``[D, D / TP]``),
the gated ``gate_up_proj`` ``[2 I / TP, D]`` and ``down_proj`` ``[D, I / TP]``, none with a bias;
no post norm (vLLM refuses ``require_post_norm=True``).

Its 2-D rotary embedding is transformers' ``PixtralRotaryEmbedding``, whose two float32 buffers
(``inv_freq``, ``original_inv_freq``) follow the transformers each release's boot environment holds
(:func:`rotary_buffers`): 0.27.1 (transformers 5.10) ``[(image_size / P)^2, head_dim]`` each,
0.31.0-0.33.0 (transformers 5.17-5.20) ``[head_dim / 2]`` each. The transformers of the 0.28.0-0.30.0 environments
(5.24) no longer has the class and vLLM's ``pixtral.py`` cannot import it: the figure for those
releases counts no rotary buffer (the oracle builds the tower with a buffer-less stand-in), at most
the grid form's ``8 (image_size / P)^2 head_dim`` bytes (2 MiB for Pixtral-12B's tower) below what
an older transformers adds. Recorded on each release (``recorded-<release>-wrappers.json``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.towers import tensors, vit_block
from dryboot.vllm.versions import rules_for

#: ``PixtralVisionConfig``'s defaults (transformers 5.x) for what a ``vision_config`` leaves out
DEFAULTS: dict[str, Any] = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_channels": 3,
    "patch_size": 16,
    "image_size": 1024,
}


def rotary_buffers(v: Mapping[str, Any], version: str) -> list[int]:
    """The bytes of the rotary embedding's buffers on release ``version`` (module docstring).

    :raises InputError: a release whose transformers' Pixtral rotary embedding is not checked."""
    v = {**DEFAULTS, **v}
    release = rules_for(version).version
    head_dim = W._int(v, "hidden_size") // W._int(v, "num_attention_heads")
    if release == "0.27.1":
        return 2 * [4 * (W._int(v, "image_size") // W._int(v, "patch_size")) ** 2 * head_dim]
    if release in ("0.31.0", "0.32.0", "0.33.0"):
        return 2 * [4 * (head_dim // 2)]
    if release in ("0.28.0", "0.29.0", "0.30.0"):
        return []
    raise InputError(
        "--vllm-version",
        release,
        "the Pixtral tower's rotary buffers under this release's transformers are not checked",
    )


def vision_tower(
    v: Mapping[str, Any], tp: int, ab: int, *, layers: int, version: str, quant: W.Quant | None = None
) -> W.RankWeights:
    """One rank's Pixtral tower of ``layers`` encoder layers on release ``version`` (module
    docstring); ``quant``: the quant method its parallel linears are built with (the checkpoint's,
    where vLLM hands it to the tower; :func:`.weights.linear_bytes`), the norms and the patch
    convolution in the model dtype.

    :raises InputError: heads or the intermediate size TP does not divide (vLLM's parallel
        linears refuse them), a release :func:`rotary_buffers` refuses."""
    v = {**DEFAULTS, **v}
    d, inter = W._int(v, "hidden_size"), W._int(v, "intermediate_size")
    W._divide(W._int(v, "num_attention_heads"), tp, "the vision tower's num_attention_heads")
    p, c = W._int(v, "patch_size"), W._int(v, "num_channels")
    buffers = rotary_buffers(v, version)
    if quant is None or quant.method is None:
        block = vit_block(d, inter, tp, bias=False, norm_bias=False, gated=True, whose="the vision tower's")
        return tensors("vision", [d * c * p * p, d, *block * layers], ab, buffers=buffers)
    d_r = W._divide(d, tp, "the vision tower's hidden size")
    i_r = W._divide(inter, tp, "the vision tower's intermediate_size")
    linears = (
        W.linear_bytes(quant, d, (d_r, d_r, d_r), ab, tp=tp)
        + W.linear_bytes(quant, d_r, (d,), ab, tp=tp, split="row")
        + W.linear_bytes(quant, d, (i_r, i_r), ab, tp=tp)
        + W.linear_bytes(quant, i_r, (d,), ab, tp=tp, split="row")
    )
    w = tensors("vision", [d * c * p * p, d], ab, buffers=buffers)
    for _ in range(layers):
        tensors("vision", [d, d], ab, into=w)  # attention_norm, ffn_norm
        for _, nbytes in linears:
            w.add("vision", nbytes)
    return w
