"""Kimi-VL's dummy image against vLLM's own processing info: the tokens
``KimiVLProcessingInfo.get_num_image_tokens`` gives its 1024 px dummy (``MaxImageTokenMeta``) and
other sizes under several ``in_token_limit``s (the image processor is the checkpoint's remote code:
its three attributes vLLM reads are given here), against :func:`kimi_vl_grid` and
:func:`kimi_vl_tower`.

Runs in vLLM 0.33.0's boot environment (fixture ``vllm_033_python``; skipped where it is absent;
0.27.1-0.30.0's processing info is the same).
"""

from __future__ import annotations

import pytest
from processing_script import run_script

from dryboot.vllm.worker.encoder_profile import KIMI_VL_DUMMY_SIDE, kimi_vl_grid, kimi_vl_tower, sized_for_processor

pytestmark = pytest.mark.fidelity

LIMITS = [4096, 16384, 1024, 2048, 5329, 5328]
SIZES = [(1024, 1024), (1920, 1080), (300, 4000), (28, 28), (999, 1001)]
MOONVIT = {
    "model_type": "moonvit",
    "patch_size": 14,
    "num_attention_heads": 16,
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "merge_kernel_size": [2, 2],
}

SCRIPT = """
import json, sys, types
from vllm.model_executor.models.kimi_vl import KimiVLProcessingInfo, MaxImageTokenMeta

cases = json.load(sys.stdin)
out = {"dummy": [MaxImageTokenMeta.width, MaxImageTokenMeta.height], "tokens": []}
for limit in cases["limits"]:
    ip = types.SimpleNamespace(patch_size=14, merge_kernel_size=[2, 2], in_token_limit=limit)
    info = KimiVLProcessingInfo.__new__(KimiVLProcessingInfo)
    info.get_hf_processor = lambda ip=ip, **kw: types.SimpleNamespace(image_processor=ip)
    out["tokens"].append([info.get_num_image_tokens(image_width=w, image_height=h) for w, h in cases["sizes"]])
print(json.dumps(out))
"""


def test_kimi_vl_dummy_image_matches_vllm(vllm_033_python: str) -> None:
    got = run_script(vllm_033_python, SCRIPT, {"limits": LIMITS, "sizes": SIZES})
    assert got["dummy"] == [KIMI_VL_DUMMY_SIDE, KIMI_VL_DUMMY_SIDE]
    for limit, tokens in zip(LIMITS, got["tokens"], strict=True):
        ours = [kimi_vl_grid(w, h, 14, (2, 2), limit) for w, h in SIZES]
        assert [r * c for r, c in ours] == tokens
        tower = sized_for_processor(kimi_vl_tower(MOONVIT), limit)
        assert tower.image_tokens == tokens[0] and tower.image_patches == 4 * tokens[0]
