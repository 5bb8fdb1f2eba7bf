"""MiniCPM-V 4.6 / 4.7's image items against vLLM 0.33.0's own count: ``MiniCPMV4_6ProcessingInfo
._compute_visual_tokens`` (source tokens, slice grid, tokens a slice) over transformers'
``MiniCPMV4_6ImageProcessor`` built with the given ``max_slice_nums`` / ``scale_resolution`` /
``patch_size`` / ``downsample_mode``, for the dummy image vLLM's ``get_image_size_with_most_features``
gives (``image_size`` x ``image_size * max_slice_num``) and other sizes, against
:func:`minicpmv4_6_image_tokens`; and the slices and padded positions the profiled dummies run
(:func:`minicpmv4_6_sized`) against the image processor's own output.

Runs in vLLM 0.33.0's boot environment (fixture ``vllm_033_python``; skipped where it is absent).
"""

from __future__ import annotations

import pytest
from processing_script import run_script

from dryboot.vllm.worker.encoder_profile import minicpmv4_6_image_tokens, minicpmv4_6_sized, minicpmv4_6_video_tokens

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


#: (processor kwargs, config image_size, config slices, video max_slice_nums, max_model_len): the
#: dummy image and the profiled video (built for ``{video: 1}``) through the image processor.
RUNS = [
    ({"max_slice_nums": 9, "scale_resolution": 448, "patch_size": 14}, 1120, 9, 9, 32768),
    ({"max_slice_nums": 9, "scale_resolution": 448, "patch_size": 14}, 448, 9, 1, 8192),
    ({"max_slice_nums": 4, "scale_resolution": 560, "patch_size": 14}, 980, 4, 2, 4096),
    ({"max_slice_nums": 16, "scale_resolution": 448, "patch_size": 16}, 448, 2, 16, 1000),
]

RUN_SCRIPT = """
import json, sys, types
from PIL import Image
from vllm.model_executor.models.minicpmv4_6 import MiniCPMV4_6ProcessingInfo
from transformers.models.minicpmv4_6.image_processing_minicpmv4_6 import MiniCPMV4_6ImageProcessor

out = []
for proc, size, slices, video_slices, seq_len in json.load(sys.stdin):
    ip = MiniCPMV4_6ImageProcessor(**proc)
    info = MiniCPMV4_6ProcessingInfo.__new__(MiniCPMV4_6ProcessingInfo)
    info.get_image_processor = lambda ip=ip: ip
    cfg = types.SimpleNamespace(image_size=size, slice_config=None, max_slice_nums=slices)
    info.get_hf_config = lambda cfg=cfg: cfg
    info.get_video_max_slice_num = lambda v=video_slices: v
    row = []
    for (w, h), n in ((info.get_image_size_with_most_features(), None),
                      (info.get_video_frame_size_with_most_features(), video_slices)):
        kwargs = {} if n is None else {"max_slice_nums": n}
        sizes = ip([Image.new("RGB", (w, h))], **kwargs)["target_sizes"].tolist()
        row.append([len(sizes), max(a * b for a, b in sizes)])
    row.append(info.get_num_frames_with_most_features(seq_len, {"video": 1}))
    out.append(row)
print(json.dumps(out))
"""


def test_minicpmv4_6_profiled_items_run_as_sized(vllm_033_python: str) -> None:
    """The slices and padded positions :func:`minicpmv4_6_sized` gives the dummy image and the
    profiled video against the image processor's own ``target_sizes`` for vLLM's dummies, and the
    profiled video's frames against ``get_num_frames_with_most_features(seq_len, {video: 1})``."""
    from dryboot.vllm.worker.encoder_profile import minicpmv4_6_processing, minicpmv4_6_tower

    got = run_script(vllm_033_python, RUN_SCRIPT, RUNS)
    vision = {"hidden_size": 1152, "intermediate_size": 4304, "num_attention_heads": 16}
    for (proc, size, slices, video_slices, seq_len), (image, frame, frames) in zip(RUNS, got, strict=True):
        tower = minicpmv4_6_tower(
            {**vision, "patch_size": proc["patch_size"]}, {"image_size": size, "max_slice_nums": slices}, "v"
        )
        tower = minicpmv4_6_processing(tower, proc, {"max_slice_nums": video_slices})
        sized = minicpmv4_6_sized(tower, max_model_len=seq_len, image_active=True)
        assert (sized.crops, sized.image_patches) == (image[0], image[0] * image[1]), (proc, size)
        assert sized.frame_crops == frames * frame[0], (proc, size)
        assert sized.frame_patches == frames * frame[0] * frame[1], (proc, size)
