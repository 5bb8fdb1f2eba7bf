"""MiniCPM-V 4.6's tower peak against vLLM 0.33.0's own forward on the meta device:
``measure_encoder_minicpmv4_6.py`` tracks the live storages of ``embed_multimodal`` over padded
crop groups (its text says what is faked); the largest sum must be :func:`minicpmv4_6_widest`'s
certain point plus the float32 pixel values the forward is given, byte for byte: the 1120 x 10080
frame's 96 x 12-patch source and nine 32 x 32 slices (1 frame, the 16 frames MiniCPM-V-4.6
profiles at 32,768 tokens, 3 crop groups with the window merger on and off) and a 448 px image
without slices.

Runs in vLLM 0.33.0's boot environment (fixture ``vllm_033_python``; skipped where it is absent).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from dryboot.vllm.worker.encoder_profile import minicpmv4_6_tower, minicpmv4_6_widest

pytestmark = pytest.mark.fidelity

HERE = Path(__file__).resolve().parent
#: [crop groups, source (h, w) patches, slice (h, w) patches, slices a group, window merger on]
CASES = [
    [1, [96, 12], [32, 32], 9, True],
    [16, [96, 12], [32, 32], 9, True],
    [3, [96, 12], [32, 32], 9, True],
    [3, [96, 12], [32, 32], 9, False],
    [2, [32, 32], [0, 0], 0, True],
]


def test_minicpmv4_6_certain_point_is_vllms_peak(vllm_033_python: str) -> None:
    run = subprocess.run(
        [vllm_033_python, str(HERE / "measure_encoder_minicpmv4_6.py")],
        input=json.dumps(CASES),
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
        cwd=HERE.parents[1],
    )
    assert run.returncode == 0, run.stderr[-4000:]
    measured = json.loads(run.stdout.strip().splitlines()[-1])
    arch = json.loads((HERE / "data/architectures/MiniCPMV4_6ForConditionalGeneration.json").read_text())
    tower = minicpmv4_6_tower(arch["vision_config"], arch, "minicpmv4_6_vision")
    tower = replace(tower, out_hidden_size=arch["text_config"]["hidden_size"])
    for (groups, _, _, n, merger), (peak, elements, positions) in zip(CASES, measured, strict=True):
        sized = replace(tower, spatial_merge_size=4 if merger else 2)
        embeds = elements // sized.out_hidden_size
        certain, _ = minicpmv4_6_widest(sized, positions, groups * (1 + n), 1, 2, embeds)
        assert peak == certain + positions * sized.pixel_elements_per_patch * 4, (groups, n, merger)
