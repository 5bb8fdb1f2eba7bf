"""MiniCPM-V 4.6 / 4.7's image items against vLLM 0.33.0's own count: ``MiniCPMV4_6ProcessingInfo
._compute_visual_tokens`` (source tokens, slice grid, tokens a slice) over transformers'
``MiniCPMV4_6ImageProcessor`` built with the given ``max_slice_nums`` / ``scale_resolution`` /
``patch_size`` / ``downsample_mode``, for the dummy image vLLM's ``get_image_size_with_most_features``
gives (``image_size`` x ``image_size * max_slice_num``) and other sizes, against
:func:`minicpmv4_6_image_tokens`. Only the count: the tower's forward is not bounded yet, so the
encoder term for ``minicpmv4_6_vision`` stays refused.

Runs in vLLM 0.33.0's boot environment (fixture ``vllm_033_python``; skipped where it is absent).
"""

from __future__ import annotations

import pytest
from processing_script import run_script

from dryboot.vllm.worker.encoder_profile import minicpmv4_6_image_tokens, minicpmv4_6_video_tokens

pytestmark = pytest.mark.fidelity

PROCESSORS = [
    {"max_slice_nums": 9, "scale_resolution": 448, "patch_size": 14, "downsample_mode": "16x"},
    {"max_slice_nums": 9, "scale_resolution": 448, "patch_size": 14, "downsample_mode": "4x"},
    {"max_slice_nums": 4, "scale_resolution": 560, "patch_size": 14, "downsample_mode": "16x"},
    {"max_slice_nums": 16, "scale_resolution": 448, "patch_size": 16, "downsample_mode": "16x"},
]
SIZES = [
    (1120, 10080),
    (448, 4032),
    (980, 8820),
    (448, 448),
    (100, 100),
    (1920, 1080),
    (4000, 300),
    (300, 4000),
    (1000, 999),
    (5000, 5000),
    (897, 1345),
    (1, 7000),
]

VIDEOS = [
    {
        "seq_len": 32768,
        "images": 1,
        "videos": 1,
        "image_size": 448,
        "image_slices": 9,
        "video_slices": 9,
        "max_slices": 9,
    },
    {
        "seq_len": 8192,
        "images": 0,
        "videos": 1,
        "image_size": 1120,
        "image_slices": 9,
        "video_slices": 1,
        "max_slices": 9,
    },
    {
        "seq_len": 4096,
        "images": 2,
        "videos": 2,
        "image_size": 448,
        "image_slices": 4,
        "video_slices": 2,
        "max_slices": 4,
    },
    {
        "seq_len": 700,
        "images": 1,
        "videos": 1,
        "image_size": 448,
        "image_slices": 9,
        "video_slices": 9,
        "max_slices": 9,
    },
    {
        "seq_len": 262144,
        "images": 1,
        "videos": 1,
        "image_size": 980,
        "image_slices": 9,
        "video_slices": 9,
        "max_slices": 9,
    },
]

SCRIPT = """
import json, sys, types
from vllm.model_executor.models.minicpmv4_6 import MiniCPMV4_6ProcessingInfo
from transformers.models.minicpmv4_6.image_processing_minicpmv4_6 import MiniCPMV4_6ImageProcessor

cases = json.load(sys.stdin)
out = []
for proc in cases["processors"]:
    ip = MiniCPMV4_6ImageProcessor(**proc)
    info = MiniCPMV4_6ProcessingInfo.__new__(MiniCPMV4_6ProcessingInfo)
    info.get_image_processor = lambda ip=ip: ip
    rows = []
    for w, h in cases["sizes"]:
        grids, source, per_slice = info._compute_visual_tokens(types.SimpleNamespace(width=w, height=h))
        rows.append([source, grids[0] * grids[1], per_slice])
    out.append(rows)
videos = []
for v in cases["videos"]:
    ip = MiniCPMV4_6ImageProcessor(max_slice_nums=v["max_slices"])
    info = MiniCPMV4_6ProcessingInfo.__new__(MiniCPMV4_6ProcessingInfo)
    info.get_image_processor = lambda ip=ip: ip
    cfg = types.SimpleNamespace(image_size=v["image_size"], slice_config=None, max_slice_nums=v["image_slices"])
    info.get_hf_config = lambda cfg=cfg: cfg
    info.get_video_max_slice_num = lambda v=v: v["video_slices"]
    counts = {"image": v["images"], "video": v["videos"]}
    videos.append([info.get_num_frames_with_most_features(v["seq_len"], counts), info.get_max_video_frame_tokens()])
print(json.dumps([out, videos]))
"""


def test_minicpmv4_6_image_tokens_match_vllm(vllm_033_python: str) -> None:
    got, videos = run_script(vllm_033_python, SCRIPT, {"processors": PROCESSORS, "sizes": SIZES, "videos": VIDEOS})
    for proc, rows in zip(PROCESSORS, got, strict=True):
        for (w, h), row in zip(SIZES, rows, strict=True):
            ours = minicpmv4_6_image_tokens(
                w,
                h,
                max_slices=proc["max_slice_nums"],
                scale=proc["scale_resolution"],
                patch=proc["patch_size"],
                downsample_mode=proc["downsample_mode"],
            )
            assert list(ours) == row, (proc, w, h)
    for v, (frames, frame_tokens) in zip(VIDEOS, videos, strict=True):
        ours = minicpmv4_6_video_tokens(
            v["seq_len"],
            v["images"],
            v["videos"],
            image_size=v["image_size"],
            image_slices=v["image_slices"],
            video_slices=v["video_slices"],
            max_slices=v["max_slices"],
        )
        assert ours == (frames, frame_tokens), v
