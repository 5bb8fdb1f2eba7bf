"""LLaVA-OneVision's dummy items against vLLM's own processing info and transformers' image
processor: the fixed dummy image and its tokens (``LlavaOnevisionProcessingInfo``, the
``anyres_max_9`` downscale included) over several pinpoint lists and image sizes, the dummy
video's tokens (``get_max_video_tokens``) over context lengths, and the crops
``LlavaOnevisionImageProcessor`` cuts the dummy image into, against :func:`vision_tower`.

Runs in vLLM 0.33.0's boot environment (fixture ``vllm_033_python``; skipped where it is absent;
0.27.1-0.30.0's ``LlavaOnevisionProcessingInfo`` counts the same way).
"""

from __future__ import annotations

import pytest
from processing_script import run_script

from dryboot.vllm.worker.encoder_profile import (
    ONEVISION_ANYRES_MAX,
    ONEVISION_DUMMY_IMAGE,
    ONEVISION_PINPOINTS,
    llava_next_tokens,
    max_tokens_per_item,
    vision_tower,
)

pytestmark = pytest.mark.fidelity

#: the SigLIP so400m widths of the published llava-onevision-qwen2 checkpoints (transformers'
#: LlavaOnevisionConfig defaults)
SIGLIP = {
    "model_type": "siglip_vision_model",
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_attention_heads": 16,
    "image_size": 384,
    "patch_size": 14,
}
PINPOINTS = {
    "default": None,
    "small": [[384, 384], [384, 768], [768, 384], [768, 768]],
    "wide": [[384, 1536], [384, 2304], [768, 2304], [1152, 1152]],
}
IMAGES = [(944, 1153), (384, 384), (2000, 500), (500, 2000), (1500, 1500), (3000, 3000), (700, 1400)]
LENGTHS = [100, 196, 197, 1000, 3137, 3136, 32768]

SCRIPT = """
import json, sys
import numpy as np
from transformers import LlavaOnevisionConfig
from transformers.models.llava_onevision.image_processing_llava_onevision import LlavaOnevisionImageProcessor
from vllm.model_executor.models.llava import get_vision_encoder_info
from vllm.model_executor.models.llava_onevision import LlavaOnevisionProcessingInfo

cases = json.load(sys.stdin)
out = {"default_pinpoints": LlavaOnevisionConfig().image_grid_pinpoints}
for name, pinpoints in cases["pinpoints"].items():
    kw = {} if pinpoints is None else {"image_grid_pinpoints": pinpoints}
    cfg = LlavaOnevisionConfig(**kw)
    info = LlavaOnevisionProcessingInfo.__new__(LlavaOnevisionProcessingInfo)
    info.get_hf_config = lambda cfg=cfg: cfg
    info.get_vision_encoder_info = lambda cfg=cfg: get_vision_encoder_info(cfg)
    best = info.get_image_size_with_most_features()
    ip = LlavaOnevisionImageProcessor(image_grid_pinpoints=cfg.image_grid_pinpoints)
    r = ip(images=[np.zeros((best.height, best.width, 3), dtype=np.uint8)], return_tensors="pt")
    out[name] = {
        "best": [best.width, best.height],
        "crops": r["pixel_values"].shape[1],
        "tokens": [info.get_num_image_tokens(image_width=w, image_height=h) for h, w in cases["images"]],
        "video": [info.get_max_video_tokens(n, {"image": 1, "video": 1}) for n in cases["lengths"]],
    }
print(json.dumps(out))
"""


def test_onevision_items_match_vllm(vllm_033_python: str) -> None:
    cases = {"pinpoints": PINPOINTS, "images": IMAGES, "lengths": LENGTHS}
    got = run_script(vllm_033_python, SCRIPT, cases)
    assert [tuple(p) for p in got["default_pinpoints"]] == list(ONEVISION_PINPOINTS)
    for name, pinpoints in PINPOINTS.items():
        config = {"model_type": "llava_onevision", "vision_feature_select_strategy": "full", "vision_config": SIGLIP}
        if pinpoints is not None:
            config["image_grid_pinpoints"] = pinpoints
        tower = vision_tower(SIGLIP, "llava_onevision", "full", config=config)
        assert tower is not None
        assert got[name]["best"] == list(ONEVISION_DUMMY_IMAGE)
        assert tower.crops == got[name]["crops"] and tower.image_patches == tower.crops * 729
        points = tuple(map(tuple, pinpoints)) if pinpoints else ONEVISION_PINPOINTS
        ours = [llava_next_tokens(h, w, points, 384, 27, 729, ONEVISION_ANYRES_MAX)[0] for h, w in IMAGES]
        assert ours == got[name]["tokens"]
        assert tower.image_tokens == ours[0]  # the dummy image
        assert [max_tokens_per_item(tower, n)["video"] for n in LENGTHS] == got[name]["video"]
