"""Kimi-K2.5 (``kimi_k25.py``, ``KimiK25ForConditionalGeneration``): Kimi-VL's composition
(:func:`.kimi_vl.moonvit`: the DeepSeek-V3 language model, MoonViT and the projector) with the
tower's temporal position table, a buffer in the model dtype ``[init_pos_emb_time, 1, D]``; where
TP does not divide the tower's heads its blocks are replicated (vLLM falls back to data
parallelism for the encoder). ``KimiK25VisionConfig`` reads ``hidden_size``, ``num_hidden_layers``, ...
with MoonViT's defaults (the published checkpoints' ``vt_*`` keys are not its fields, and the
defaults equal them); the projector's output ``mm_hidden_size`` is the text width unless it
differs from the tower's; ``mm_projector_type`` ``patchmergerv2`` (no pre-norm, no biases, an
RMSNorm after, out ``text_hidden_size``) is modelled; another ``pos_emb_type`` or
``video_attn_type`` is refused by name, as vLLM refuses it.
``--language-model-only`` or ``--limit-mm-per-prompt`` ``vision_chunk`` 0 drops the tower (vLLM
marks it for that modality, not image / video)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, text_config, vision_language
from dryboot.vllm.model_executor.models.kimi_vl import DEFAULTS, moonvit


def _tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    full = {**DEFAULTS, **v}
    for key, only in (("pos_emb_type", "divided_fixed"), ("video_attn_type", "spatial_temporal")):
        if v.get(key, only) != only:
            raise InputError("config.json", f"vision_config.{key}", f"{v.get(key)!r}: vLLM supports {only!r} only")
    kind = v.get("mm_projector_type", "patchmerger")
    if kind not in ("patchmerger", "patchmergerv2"):
        raise InputError("config.json", "vision_config.mm_projector_type", f"a {kind} projector is not modelled")
    # KimiK25Config: mm_hidden_size (the projector's output) defaults to the tower's width, and the
    # tower's width means the text model's
    d = W._int(full, "hidden_size")
    mm = W._int({"mm_hidden_size": d, **v}, "mm_hidden_size")
    mm = W._int(text, "hidden_size") if mm == d else mm
    out = W._int({"text_hidden_size": mm, **v}, "text_hidden_size") if kind == "patchmergerv2" else mm
    w = moonvit(v, text, tp, ab, replicate_indivisible=True, projector=(out, kind == "patchmergerv2"))
    time = W._int({"init_pos_emb_time": 4, **v}, "init_pos_emb_time")
    # KimiK25ForConditionalGeneration.__init__: under a quant config it keeps (ModelOpt's; it drops
    # compressed-tensors') the tower moves to the GPU without a dtype cast, so the temporal table,
    # built float32 on the host, stays float32 (recorded: nvidia/Kimi-K2.5-NVFP4)
    time_bytes = 4 if isinstance(text.get("quantization_config"), Mapping) else ab
    w.add("vision", time * d * time_bytes, buffer=True)
    return w


def _nvfp4(quant: W.Quant) -> bool:
    """nvidia/Kimi-K2.5-NVFP4 (ModelOpt NVFP4): its ``ignore`` list keeps the tower and projector
    (``vision_tower*``, ``mm_projector*``) in the model dtype, the text model takes the rest."""
    return quant.method == "modelopt_fp4"


FAMILIES: dict[str, Family] = {
    "KimiK25ForConditionalGeneration": vision_language(
        "DeepseekV3ForCausalLM", _tower, ("vision_chunk",), text_of=text_config, quantized=_nvfp4
    ),
}
