"""Llama-4's dummy image against vLLM's own processing info and transformers' image processor:
the size ``Mllama4ProcessingInfo.get_image_size_with_most_features`` returns for each
``max_patches``, the chunks ``Llama4ImageProcessor`` cuts it into (tiles and the global tile) and
``get_patch_per_chunk``'s embeddings a chunk, against :func:`llama4_tower`.

Runs in vLLM 0.33.0's boot environment (fixture ``vllm_033_python``; skipped where it is absent;
0.27.1-0.30.0's ``Mllama4ProcessingInfo`` differs only in how it asks for the processor).
"""

from __future__ import annotations

import pytest
from processing_script import run_script

from dryboot.vllm.worker.encoder_profile import llama4_tower, sized_for_processor

pytestmark = pytest.mark.fidelity

#: Llama-4-Scout's and Maverick's published vision widths (``vision_config`` of their config.json)
SCOUT = {
    "hidden_size": 1408,
    "image_size": 336,
    "intermediate_size": 5632,
    "model_type": "llama4_vision_model",
    "num_attention_heads": 16,
    "num_channels": 3,
    "patch_size": 14,
    "pixel_shuffle_ratio": 0.5,
}
#: (max_patches, image_size, patch_size, pixel_shuffle_ratio)
CASES = [
    (16, 336, 14, 0.5),
    (4, 336, 14, 0.5),
    (1, 336, 14, 0.5),
    (2, 336, 14, 0.5),
    (7, 336, 14, 0.5),
    (9, 448, 14, 0.5),
    (16, 336, 14, 0.25),
    (12, 224, 16, 0.5),
]

SCRIPT = """
import json, sys, types
import numpy as np
from transformers import Llama4Config
from transformers.models.llama4.image_processing_llama4 import Llama4ImageProcessor
from vllm.model_executor.models.mllama4 import Mllama4ProcessingInfo

out = []
for max_patches, size, patch, ratio in json.load(sys.stdin):
    cfg = Llama4Config(vision_config={"image_size": size, "patch_size": patch, "pixel_shuffle_ratio": ratio})
    ip = Llama4ImageProcessor(max_patches=max_patches, size={"height": size, "width": size})
    info = Mllama4ProcessingInfo.__new__(Mllama4ProcessingInfo)
    info.get_hf_config = lambda cfg=cfg: cfg
    info.get_hf_processor = lambda ip=ip, **kw: types.SimpleNamespace(image_processor=ip)
    best = info.get_image_size_with_most_features()
    r = ip(images=[np.zeros((best.height, best.width, 3), dtype=np.uint8)], return_tensors="pt")
    chunks, _, h, w = r["pixel_values"].shape
    out.append([best.width, best.height, chunks, h * w, info.get_patch_per_chunk(cfg.vision_config)])
print(json.dumps(out))
"""


def test_llama4_dummy_image_matches_vllm(vllm_033_python: str) -> None:
    got = run_script(vllm_033_python, SCRIPT, CASES)
    for (max_patches, size, patch, ratio), (width, height, chunks, pixels, per_chunk) in zip(CASES, got, strict=True):
        assert (width, height) == (size, max_patches * size)
        vision = {**SCOUT, "image_size": size, "patch_size": patch, "pixel_shuffle_ratio": ratio}
        tower = sized_for_processor(llama4_tower(vision), max_patches)
        assert tower.crops == chunks and pixels == size * size
        assert tower.image_tokens == chunks * per_chunk
        assert tower.image_patches == chunks * ((size // patch) ** 2 + 1)
        assert tower.pixels(1, tower.image_tokens) == chunks * 3 * size * size
