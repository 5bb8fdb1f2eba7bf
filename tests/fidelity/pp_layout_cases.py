"""Pipeline stages whose attention backends declare different KV cache layouts (vLLM 0.29+'s
``resolve_kv_cache_layout``: "Workers disagree on supported KV cache layouts"), recorded by
``record_pp_layouts.py`` into ``data/pipeline/layouts/vllm-<release>.json`` and checked by
``test_pp_layouts.py``.

The config (``data/pipeline/layouts/qwen3_5-tiny.json``) is the random audit's Qwen3.5 stand-in (case
s2325-14 on 0.30.0: 7 layers, full attention at layer 3); ``VLLM_PP_LAYER_PARTITION=1,4,1,1`` leaves stages
0, 2 and 3 with Gated DeltaNet layers only, which declare no layout, while stage 1's attention backend
may declare its own: FlashInfer on SM 10.x (the B200's default), FlexAttention anywhere. FlashAttention
declares nothing, so its stages agree. A case with a GPU runs the oracle as that row of ``gpus.toml``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "pipeline" / "layouts"
CONFIG = DATA / "qwen3_5-tiny.json"
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
PARTITION = {"VLLM_PP_LAYER_PARTITION": "1,4,1,1"}
BASE = ["--max-model-len", "4096", "--kv-cache-memory-bytes", "131619229", "-tp", "2", "--pipeline-parallel-size", "4"]

#: case id -> (flags, GPU or None: the oracle's default H200, environment)
CASES: dict[str, tuple[list[str], str | None, dict[str, str]]] = {
    "b200-flashinfer": (BASE, "B200", PARTITION),
    "b200-flash-attn": ([*BASE, "--attention-backend", "FLASH_ATTN"], "B200", PARTITION),
    "h200-flex": ([*BASE, "--attention-backend", "FLEX_ATTENTION"], None, PARTITION),
    "h200-flashinfer": ([*BASE, "--attention-backend", "FLASHINFER"], None, PARTITION),
    # the default partition (2, 2, 2, 1): every stage but one without attention
    "b200-flashinfer-even": (BASE, "B200", {}),
    # a stage with no layer at all: 0.29-0.31 assert its empty group, 0.32+ refuse its empty page set first
    "h200-empty-stage": (BASE, None, {"VLLM_PP_LAYER_PARTITION": "0,5,1,1"}),
}


def record_path(version: str) -> Path:
    return DATA / f"vllm-{version}.json"
