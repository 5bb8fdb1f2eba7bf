"""Kimi-K2.5's dummy item against vLLM's own code: ``KimiK25DummyInputsBuilder.get_dummy_mm_items``
(the 3000 px image or the video chunk, whichever counts more tokens) over vLLM's
``KimiK25FusedVisionProcessor`` (the processor vLLM uses where numba imports), its tokens
(``media_tokens_calculator``) and its patch grid (``get_resize_config``: padded height and width
over the patch, the chunk's frames), for several ``media_proc_cfg``s, against
:func:`kimi_k25_sized`.

Runs in vLLM 0.33.0's boot environment (fixture ``vllm_033_python``; skipped where it is absent;
0.27.1-0.30.0's sizing rule is the same). numba is absent there: only the sizing runs, not the
fused pixel copy.
"""

from __future__ import annotations

import pytest
from processing_script import run_script

from dryboot.vllm.worker.encoder_profile import kimi_k25_sized, kimi_k25_tower

pytestmark = pytest.mark.fidelity

BASE = {"patch_size": 14, "merge_kernel_size": [2, 2], "fixed_output_tokens": None}
CFGS = [
    {
        **BASE,
        "in_patch_limit": 16384,
        "patch_limit_on_one_side": 512,
        "temporal_merge_kernel_size": 4,
        "in_patch_limit_each_frame": 4096,
        "in_patch_limit_video": None,
    },
    {
        **BASE,
        "in_patch_limit": 4096,
        "patch_limit_on_one_side": 512,
        "temporal_merge_kernel_size": 4,
        "in_patch_limit_each_frame": 16384,
        "in_patch_limit_video": None,
    },
    {
        **BASE,
        "in_patch_limit": 4096,
        "patch_limit_on_one_side": 512,
        "temporal_merge_kernel_size": 4,
        "in_patch_limit_each_frame": None,
        "in_patch_limit_video": 10000,
    },
    {
        **BASE,
        "in_patch_limit": 100000,
        "patch_limit_on_one_side": 100,
        "temporal_merge_kernel_size": 2,
        "in_patch_limit_each_frame": 8000,
        "in_patch_limit_video": None,
    },
    {
        **BASE,
        "in_patch_limit": 1000,
        "patch_limit_on_one_side": 512,
        "temporal_merge_kernel_size": 3,
        "in_patch_limit_each_frame": 1000,
        "in_patch_limit_video": 2999,
    },
]

SCRIPT = """
import json, sys, types
from vllm.model_executor.models.kimi_k25 import KimiK25DummyInputsBuilder
from vllm.transformers_utils.processors.kimi_k25_vision_fused import KimiK25FusedVisionProcessor

out = []
for cfg in json.load(sys.stdin):
    proc = KimiK25FusedVisionProcessor({**cfg, "image_mean": [0.5] * 3, "image_std": [0.5] * 3})
    builder = KimiK25DummyInputsBuilder.__new__(KimiK25DummyInputsBuilder)
    builder.info = types.SimpleNamespace(image_processor=proc, media_tokens_calculator=proc.media_tokens_calculator)
    (item,) = builder.get_dummy_mm_items()
    tokens = proc.media_tokens_calculator(item)
    rc = proc.get_resize_config(item)
    frames = len(item["video_chunk"]) if item["type"] == "video_chunk" else 1
    p = cfg["patch_size"]
    grid = [(rc["new_height"] + rc["pad_height"]) // p, (rc["new_width"] + rc["pad_width"]) // p]
    out.append({"type": item["type"], "tokens": tokens, "frames": frames, "grid": grid})
print(json.dumps(out))
"""


def test_kimi_k25_dummy_item_matches_vllm(vllm_033_python: str) -> None:
    got = run_script(vllm_033_python, SCRIPT, CFGS)
    tower = kimi_k25_tower({"patch_size": 14, "merge_kernel_size": [2, 2]})
    for cfg, row in zip(CFGS, got, strict=True):
        sized = kimi_k25_sized(tower, {"media_proc_cfg": cfg})
        gh, gw = row["grid"]
        assert gh == gw, cfg
        assert sized.image_tokens == row["tokens"] == gh * gw // 4, cfg
        assert (sized.pooled_frames, sized.image_patches) == (row["frames"], row["frames"] * gh * gw), cfg
        assert (row["type"] == "video_chunk") == (sized.pooled_frames > 1 or row["frames"] > 1), cfg
