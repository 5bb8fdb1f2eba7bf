"""Cosmos3 (``cosmos3.py``, ``Cosmos3ForConditionalGeneration``): vLLM's class is Qwen3-VL's
(``Qwen3VLForConditionalGeneration``) with a weights mapper that drops the checkpoint's generation
tower, so it holds what Qwen3-VL holds: the Qwen3 text model of ``text_config`` and the Qwen3-VL
vision transformer of ``vision_config`` (:mod:`.qwen3_vl`), on every release that has the class
(0.27.1-0.33.0)."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family
from dryboot.vllm.model_executor.models.qwen3_vl import FAMILIES as QWEN3_VL

FAMILIES: dict[str, Family] = {"Cosmos3ForConditionalGeneration": QWEN3_VL["Qwen3VLForConditionalGeneration"]}
