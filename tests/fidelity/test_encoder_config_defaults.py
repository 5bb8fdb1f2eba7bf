"""The config-class defaults the encoder's profile term reads where a config leaves them out
(``tests/test_budget_encoder_defaults.py``), against transformers in a boot environment:
``Llama4Config`` without ``vision_config`` builds ``Llama4VisionConfig()`` (``mllama4.DEFAULTS``,
``pixel_shuffle_ratio`` 0.5) and ``Llama4ImageProcessor`` tiles at 336 x 336 px; ``Qwen3VLConfig``
and ``Qwen3VLMoeConfig`` default ``deepstack_visual_indexes`` to [8, 16, 24] (and the widths
``qwen3_vl.VISION_CONFIG_DEFAULTS``), while Qwen3.5's vision configs have no such attribute (vLLM's
``hasattr`` then builds no deepstack merger).

Runs in vLLM 0.33.0's boot environment (fixture ``vllm_033_python``: its image processors load;
skipped where it is absent); ``DRYBOOT_VLLM_PYTHON_033`` may name another release's (0.28.0's
transformers 5.20 gives the same answers for the configs).
"""

from __future__ import annotations

import pytest
from processing_script import run_script

from dryboot.vllm.model_executor.models import mllama4, qwen3_vl
from dryboot.vllm.worker.encoder_profile import LLAMA4_MAX_PATCHES, LLAMA4_PIXEL_SHUFFLE_RATIO, LLAMA4_TILE_SIDE

pytestmark = pytest.mark.fidelity

SCRIPT = """
import json, sys
import transformers as T

keys = json.load(sys.stdin)
llama4 = T.Llama4Config(text_config={"hidden_size": 512}).vision_config
out = {"llama4": {k: getattr(llama4, k) for k in keys["llama4"]}}
try:
    from transformers.models.llama4.image_processing_llama4 import Llama4ImageProcessor
    ip = Llama4ImageProcessor()
    out["llama4_processor"] = [ip.size.height, ip.size.width, ip.max_patches]
except Exception as e:  # torchvision of 0.27.1-0.30's environments
    out["llama4_processor"] = repr(e)
for name in ("Qwen3VLConfig", "Qwen3VLMoeConfig"):
    v = getattr(T, name)(vision_config={}).vision_config
    out[name] = {k: list(x) if isinstance(x := getattr(v, k), tuple) else x for k in keys["qwen3_vl"]}
for name in ("Qwen3_5Config", "Qwen3_5MoeConfig"):
    out[name] = hasattr(getattr(T, name)(vision_config={}).vision_config, "deepstack_visual_indexes")
print(json.dumps(out))
"""


def test_encoder_config_defaults_match_transformers(vllm_033_python: str) -> None:
    keys = {"llama4": [*mllama4.DEFAULTS, "pixel_shuffle_ratio"], "qwen3_vl": list(qwen3_vl.QWEN3_VL_VISION_DEFAULTS)}
    got = run_script(vllm_033_python, SCRIPT, keys)
    assert got["llama4"] == {**mllama4.DEFAULTS, "pixel_shuffle_ratio": LLAMA4_PIXEL_SHUFFLE_RATIO}
    if isinstance(got["llama4_processor"], list):
        assert got["llama4_processor"] == [LLAMA4_TILE_SIDE, LLAMA4_TILE_SIDE, LLAMA4_MAX_PATCHES]
    for name in ("Qwen3VLConfig", "Qwen3VLMoeConfig"):
        assert got[name] == qwen3_vl.QWEN3_VL_VISION_DEFAULTS
    assert got["Qwen3_5Config"] is False and got["Qwen3_5MoeConfig"] is False
