"""The encoder term's dummy items against vLLM's own processing info: LLaVA-NeXT's tokens per
image and its pinpoint with the most features (``LlavaNextProcessingInfo``), Mistral3's
(``Mistral3HFEncoderInfo``), the Idefics3 image processor's crop count (transformers'
``get_number_of_image_patches``, as ``Idefics3ProcessingInfo.get_num_patches`` reads it) and
InternVL's largest image (``InternVLProcessingInfo.get_max_image_tokens`` over vLLM's own
``InternVLChatImageProcessor``; the processor's tokenizer is not needed for the count).

Runs in vLLM 0.33.0's boot environment (fixture ``vllm_033_python``); skipped where it is absent.
"""

from __future__ import annotations

from typing import Any

import pytest
from processing_script import run_script

from dryboot.vllm.worker.encoder_profile import (
    GEMMA3_PAN_AND_SCAN,
    gemma3_num_crops,
    idefics3_tiles,
    llava_next_tokens,
    sized_for_processor,
    vision_tower,
)

pytestmark = pytest.mark.fidelity

PINPOINTS = {
    "default": [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]],
    "uneven": [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008], [500, 900], [1344, 336]],
}
IMAGES = [(672, 672), (800, 500), (500, 800), (1000, 1000), (336, 1344), (1200, 300)]
EDGES = [1540, 1024, 1000, 700]
#: (merged --mm-processor-kwargs, preprocessor_config.json's do_pan_and_scan, width, height)
GEMMA3 = [
    ({"do_pan_and_scan": True}, None, 896, 3584),
    ({}, None, 896, 3584),
    ({}, True, 896, 3584),  # the checkpoint's processor config does not turn it on
    ({"do_pan_and_scan": True}, None, 2000, 500),
    ({"do_pan_and_scan": True}, None, 300, 100),
    ({"do_pan_and_scan": True}, None, 1200, 800),
    ({"do_pan_and_scan": True}, None, 8000, 1000),
    ({"do_pan_and_scan": True, "pan_and_scan_max_num_crops": 2}, None, 896, 1792),
    ({"do_pan_and_scan": True}, None, 1000, 1100),
]
INTERNVL = [(12, True, True), (6, True, True), (1, True, True), (12, True, False), (12, False, True)]
TILES = [(364, 1456), (384, 1536), (364, 364), (364, 200), (364, 1000), (364, 9000), (512, 2048), (384, 1000)]

#: run in vLLM's environment: reads the cases as JSON on stdin, prints vLLM's figures
SCRIPT = """
import json, sys
from transformers import LlavaNextConfig, Mistral3Config
from transformers.models.idefics3.image_processing_idefics3 import Idefics3ImageProcessor
from vllm.model_executor.models.llava import get_vision_encoder_info
from vllm.model_executor.models.llava_next import LlavaNextProcessingInfo
from vllm.model_executor.models.mistral3 import Mistral3HFEncoderInfo
from vllm.model_executor.models.internvl import InternVLProcessingInfo
import types
from transformers.models.gemma3.processing_gemma3 import Gemma3Processor
from transformers.models.gemma3.image_processing_gemma3 import Gemma3ImageProcessor
from vllm.model_executor.models.gemma3_mm import Gemma3ProcessingInfo
from vllm.transformers_utils.processors.internvl import InternVLChatImageProcessor, InternVLChatProcessor

cases = json.load(sys.stdin)
out = {"llava_next": {}, "mistral3": [], "idefics3": [], "internvl": [], "gemma3": []}
for name, pinpoints in cases["pinpoints"].items():
    cfg = LlavaNextConfig(image_grid_pinpoints=pinpoints)
    info = LlavaNextProcessingInfo.__new__(LlavaNextProcessingInfo)
    info.get_hf_config = lambda cfg=cfg: cfg
    info.get_vision_encoder_info = lambda cfg=cfg: get_vision_encoder_info(cfg)
    best = info.get_image_size_with_most_features()
    out["llava_next"][name] = {
        "best": [best.height, best.width],
        "tokens": [info.get_num_image_tokens(image_width=w, image_height=h) for h, w in cases["images"]],
    }
m = Mistral3Config(vision_config={"model_type": "pixtral", "image_size": 1540, "patch_size": 14}, spatial_merge_size=2)
for edge in cases["edges"]:
    out["mistral3"].append(Mistral3HFEncoderInfo(m, edge).get_num_image_tokens(image_width=edge, image_height=edge))
for tile, edge in cases["tiles"]:
    p = Idefics3ImageProcessor(size={"longest_edge": edge}, max_image_size={"longest_edge": tile})
    out["idefics3"].append(max(p.get_number_of_image_patches(tile, tile, {})[0], 1))
for most, dynamic, thumbnail in cases["internvl"]:
    proc = InternVLChatProcessor.__new__(InternVLChatProcessor)
    proc.image_processor = InternVLChatImageProcessor(
        image_size=448, min_dynamic_patch=1, max_dynamic_patch=most,
        dynamic_image_size=dynamic, use_thumbnail=thumbnail,
    )
    proc.image_seq_length = 256
    info = InternVLProcessingInfo.__new__(InternVLProcessingInfo)
    info.get_hf_processor = lambda proc=proc, **kw: proc
    out["internvl"].append(info.get_max_image_tokens())
for kwargs, pan, width, height in cases["gemma3"]:
    proc = Gemma3Processor.__new__(Gemma3Processor)
    proc.image_processor = Gemma3ImageProcessor(do_pan_and_scan=pan)
    proc.tokenizer = types.SimpleNamespace(init_kwargs={})
    info = Gemma3ProcessingInfo.__new__(Gemma3ProcessingInfo)
    info.ctx = types.SimpleNamespace(get_merged_mm_kwargs=lambda k, kwargs=kwargs: {**kwargs, **k})
    out["gemma3"].append(info.get_num_crops(image_width=width, image_height=height, processor=proc, mm_kwargs={}))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def vllm_items(vllm_033_python: str) -> dict[str, Any]:
    cases = {"pinpoints": PINPOINTS, "images": IMAGES, "edges": EDGES, "tiles": TILES}
    cases |= {"internvl": INTERNVL, "gemma3": GEMMA3}
    doc: dict[str, Any] = run_script(vllm_033_python, SCRIPT, cases)
    return doc


def test_llava_next_items_as_vllm_counts(vllm_items: dict[str, Any]) -> None:
    for name, pinpoints in PINPOINTS.items():
        points = tuple((h, w) for h, w in pinpoints)
        ours = [llava_next_tokens(h, w, points, 336, 24, 576)[0] for h, w in IMAGES]
        assert ours == vllm_items["llava_next"][name]["tokens"], name
        tower = vision_tower(
            {"model_type": "clip_vision_model", "image_size": 336, "patch_size": 14},
            "llava_next",
            config={"image_grid_pinpoints": pinpoints},
        )
        best_h, best_w = vllm_items["llava_next"][name]["best"]
        assert tower is not None and tower.image_tokens == llava_next_tokens(best_h, best_w, points, 336, 24, 576)[0]


def test_mistral3_and_idefics3_items_as_vllm_counts(vllm_items: dict[str, Any]) -> None:
    tower = vision_tower({"model_type": "pixtral", "image_size": 1540, "patch_size": 14}, "mistral3", config={})
    assert tower is not None
    assert [sized_for_processor(tower, e).image_tokens for e in EDGES] == vllm_items["mistral3"]
    assert [idefics3_tiles(t, e) for t, e in TILES] == vllm_items["idefics3"]


def test_internvl_largest_image_as_vllm_counts(vllm_items: dict[str, Any]) -> None:
    vision = {"model_type": "intern_vit_6b", "image_size": 448, "patch_size": 14, "hidden_size": 1024}
    vision |= {"intermediate_size": 4096, "num_attention_heads": 16}
    ours = []
    for most, dynamic, thumbnail in INTERNVL:
        config = {"max_dynamic_patch": most, "dynamic_image_size": dynamic, "use_thumbnail": thumbnail}
        tower = vision_tower(vision, "internvl_chat", config={**config, "downsample_ratio": 0.5})
        assert tower is not None
        ours.append(tower.image_tokens)
    assert ours == vllm_items["internvl"]


def test_gemma3_crops_as_vllm_counts(vllm_items: dict[str, Any]) -> None:
    ours = [gemma3_num_crops(w, h, {**GEMMA3_PAN_AND_SCAN, **kwargs}) for kwargs, _, w, h in GEMMA3]
    assert ours == vllm_items["gemma3"]
