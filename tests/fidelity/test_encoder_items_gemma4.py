"""Gemma-4's dummy items against vLLM's and transformers' own code: the soft tokens an image
yields (``Gemma4ProcessingInfo._compute_num_soft_tokens``) and the padded patches and soft
tokens transformers' ``Gemma4ImageProcessor`` returns for the 224 px dummy at each
``max_soft_tokens`` (the video frames' 70 included).

Runs in vLLM 0.33.0's boot environment (fixture ``vllm_033_python``; skipped where it is absent:
the 0.27.1 and 0.28.0 environments' torchvision does not load the image processor, and their
``gemma4_mm.py`` holds the same constants and counting).
"""

from __future__ import annotations

import json
import subprocess

import pytest
from processing_script import run_script

from dryboot.vllm.worker.encoder_profile import (
    GEMMA4_AUDIO_SEQ_LENGTH,
    GEMMA4_DUMMY_AUDIO_EMBEDS,
    GEMMA4_DUMMY_AUDIO_SAMPLES,
    GEMMA4_SOFT_TOKENS,
    gemma4_soft_tokens,
    gemma4_tower,
)

pytestmark = pytest.mark.fidelity

SIZES = [(224, 224), (1000, 300), (300, 1000), (3, 900), (1920, 1080), (640, 480)]

SCRIPT = """
import json, sys, types
import numpy as np
from transformers.models.gemma4.configuration_gemma4 import Gemma4VisionConfig
from transformers.models.gemma4.image_processing_gemma4 import Gemma4ImageProcessor
from vllm.model_executor.models.gemma4_mm import Gemma4ProcessingInfo

cases = json.load(sys.stdin)
info = Gemma4ProcessingInfo.__new__(Gemma4ProcessingInfo)
cfg = types.SimpleNamespace(vision_config=Gemma4VisionConfig(default_output_length=280))
info.get_hf_config = lambda: cfg
ip = Gemma4ImageProcessor()
out = {"tokens": [], "dummy": []}
for soft in cases["soft"]:
    out["tokens"].append([info._compute_num_soft_tokens(w, h, soft) for w, h in cases["sizes"]])
    r = ip(images=[np.zeros((224, 224, 3), dtype=np.uint8)], max_soft_tokens=soft, return_tensors="pt")
    out["dummy"].append([r["pixel_values"].shape[1], int(r["num_soft_tokens_per_image"][0])])
print(json.dumps(out))
"""


def test_gemma4_items_match_vllm(vllm_033_python: str) -> None:
    cases = {"soft": list(GEMMA4_SOFT_TOKENS), "sizes": SIZES}
    got = run_script(vllm_033_python, SCRIPT, cases)
    assert got["tokens"] == [[gemma4_soft_tokens(w, h, 16, 3, s) for w, h in SIZES] for s in GEMMA4_SOFT_TOKENS]
    vision = {
        "hidden_size": 1152,
        "head_dim": 72,
        "num_hidden_layers": 27,
        "intermediate_size": 4304,
        "num_attention_heads": 16,
        "patch_size": 16,
        "pooling_kernel_size": 3,
        "position_embedding_size": 10240,
        "default_output_length": 280,
    }
    for soft, (patches, tokens) in zip(GEMMA4_SOFT_TOKENS, got["dummy"], strict=True):
        tower = gemma4_tower(vision, {}, {"max_soft_tokens": soft})
        assert (tower.image_patches, tower.image_embeds) == (patches, tokens)
    frame = gemma4_tower(vision, {}, {})
    assert [frame.frame_patches, frame.frame_embeds] == got["dummy"][0]  # the video's frames: 70 soft tokens


AUDIO_SCRIPT = """
import inspect, json
from transformers.models.gemma4.feature_extraction_gemma4 import Gemma4AudioFeatureExtractor
from transformers.models.gemma4.processing_gemma4 import Gemma4Processor
from vllm.model_executor.models.gemma4_mm import Gemma4ProcessingInfo

fe = Gemma4AudioFeatureExtractor()
seq = inspect.signature(Gemma4Processor.__init__).parameters["audio_seq_length"].default
tokens = Gemma4ProcessingInfo._compute_audio_num_tokens(fe.fft_length, fe.sampling_rate, seq)
print(json.dumps([fe.fft_length, fe.sampling_rate, seq, tokens]))
"""


def test_gemma4_dummy_audio_matches_vllm(vllm_033_python: str) -> None:
    """The dummy audio vLLM profiles when Gemma-4's audio is the item with the most tokens:
    ``fft_length`` samples, one embedding, under the processor's default ``audio_seq_length``."""
    run = subprocess.run(
        [vllm_033_python, "-c", AUDIO_SCRIPT], capture_output=True, text=True, timeout=600, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    samples, _rate, seq, embeds = json.loads(run.stdout.strip().splitlines()[-1])
    assert (samples, seq, embeds) == (GEMMA4_DUMMY_AUDIO_SAMPLES, GEMMA4_AUDIO_SEQ_LENGTH, GEMMA4_DUMMY_AUDIO_EMBEDS)
