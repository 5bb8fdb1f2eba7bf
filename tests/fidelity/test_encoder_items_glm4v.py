"""GLM-4.1V's / GLM-4.5V's dummy items against vLLM's own processing info: the largest image
(``Glm4vProcessingInfo.get_image_size_with_most_features`` / ``get_max_image_tokens``), the
frames of the video counted by the budget (``{image: 1, video: 1}``) and of the one profiled
(``{video: 1}``), each run through transformers' ``Glm4vVideoProcessor.get_num_of_video_patches``
(the patches the processor outputs for the frames vLLM's dummy builder gives it, at least 2),
against :func:`glm4v_sized`. The processors' pixel areas are given here (the checkpoint's
``size.longest_edge`` values vLLM reads from its processor configs).

Runs in vLLM 0.33.0's boot environment (fixture ``vllm_033_python``; skipped where it is absent;
0.27.1-0.30.0's processing info differs only in the video's embedding token id).
"""

from __future__ import annotations

import pytest
from processing_script import run_script

from dryboot.vllm.worker.encoder_profile import glm4v_sized, glm4v_tower

pytestmark = pytest.mark.fidelity

CASES = [
    {"patch": 14, "merge": 2, "image": 9_633_792, "video": 47_040_000, "seq_len": 32768},
    {"patch": 14, "merge": 2, "image": 9_633_792, "video": 47_040_000, "seq_len": 65536},
    {"patch": 14, "merge": 2, "image": 9_633_792, "video": 47_040_000, "seq_len": 8192},
    {"patch": 14, "merge": 2, "image": 12_845_056, "video": 100_352_000, "seq_len": 131072},
    {"patch": 14, "merge": 2, "image": 1_003_520, "video": 4_816_896, "seq_len": 4096},
    {"patch": 16, "merge": 2, "image": 2_000_000, "video": 20_000_001, "seq_len": 20000},
]

SCRIPT = """
import json, sys, types
from vllm.model_executor.models.glm4_1v import Glm4vProcessingInfo
from transformers.models.glm4v.video_processing_glm4v import Glm4vVideoProcessor

out = []
for c in json.load(sys.stdin):
    vc = types.SimpleNamespace(patch_size=c["patch"], spatial_merge_size=c["merge"], temporal_patch_size=2)
    info = Glm4vProcessingInfo.__new__(Glm4vProcessingInfo)
    info.get_hf_config = lambda vc=vc: types.SimpleNamespace(vision_config=vc)
    info._get_image_max_pixels = lambda c=c: c["image"]
    info._get_video_max_pixels = lambda c=c: c["video"]
    w, h = info.get_image_size_with_most_features()
    row = {"side": [w, h], "image_tokens": info.get_max_image_tokens()}
    vp = Glm4vVideoProcessor(
        patch_size=c["patch"], merge_size=c["merge"], size={"shortest_edge": 12544, "longest_edge": c["video"]}
    )
    for key, counts in (("counted", {"image": 1, "video": 1}), ("run", {"video": 1})):
        n = max(info.get_num_frames_with_most_features(c["seq_len"], counts), 2)
        row[key] = vp.get_num_of_video_patches(num_frames=n, height=h, width=w) // c["merge"] ** 2
    out.append(row)
print(json.dumps(out))
"""


def test_glm4v_dummy_items_match_vllm(vllm_033_python: str) -> None:
    got = run_script(vllm_033_python, SCRIPT, CASES)
    for case, row in zip(CASES, got, strict=True):
        vision = {
            "model_type": "glm4v_vision",
            "hidden_size": 1536,
            "intermediate_size": 13696,
            "num_heads": 12,
            "out_hidden_size": 4096,
            "patch_size": case["patch"],
            "spatial_merge_size": case["merge"],
            "temporal_patch_size": 2,
        }
        tower = glm4v_sized(
            glm4v_tower(vision, "glm4v_vision"),
            max_model_len=case["seq_len"],
            image_max_pixels=case["image"],
            video_max_pixels=case["video"],
            image_active=True,
        )
        side = row["side"][0] // case["patch"]
        assert row["side"][0] == row["side"][1] and tower.image_patches == side * side, case
        assert tower.image_tokens == row["image_tokens"], case
        assert (tower.video_item_tokens, tower.frame_embeds) == (row["counted"], row["run"]), case
        assert tower.frame_patches == row["run"] * case["merge"] ** 2
