"""The multimodal encoder's profile term where the config class's defaults decide the tower (issue 33
item 3): Qwen3-VL's deepstack levels where ``vision_config`` lists no ``deepstack_visual_indexes``
(``Qwen3VLVisionConfig``'s [8, 16, 24]; Qwen3.5's vision config has none), and Llama-4 without a
``vision_config`` (``Llama4Config`` builds ``Llama4VisionConfig()``, a 448 px tower, which the
image processor's 336 px tiles do not fit: refused by name). The defaults themselves are checked
against transformers in the boot environments by ``tests/fidelity/test_encoder_config_defaults.py``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dryboot.errors import InputError
from dryboot.planner.budget import with_processor_sizes
from dryboot.vllm.worker.profile_run import activation_terms, forward_shape

REPO = Path(__file__).resolve().parents[1]
PUBLIC = REPO / "tests/data/configs/public"
#: the aiconfigurator copy of Qwen3-VL-235B-A22B-Thinking (verbatim, its SOURCE beside it): its
#: vision_config lists no deepstack_visual_indexes (and patch 14, unlike the Instruct copy's 16)
THINKING = PUBLIC / "Qwen--Qwen3-VL-235B-A22B-Thinking/config.json"
INSTRUCT = PUBLIC / "Qwen--Qwen3-VL-235B-A22B-Instruct/config.json"
QWEN35_27B = PUBLIC / "Qwen--Qwen3.5-27B/config.json"
#: the aiconfigurator copy of Llama-4-Scout-17B-16E-Instruct (verbatim): text_config only
SCOUT = PUBLIC / "meta-llama--Llama-4-Scout-17B-16E-Instruct/config.json"


def _config(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _encoder(shape: Any) -> Any:
    terms = activation_terms(
        shape, max_num_batched_tokens=8192, max_num_seqs=256, tp=8, compiled=False, max_model_len=8192
    )
    (enc,) = [t for t in terms if t.name == "activation: multimodal encoder"]
    return enc


def test_qwen3_vl_without_deepstack_indexes_takes_the_class_default() -> None:
    """Qwen3-VL-235B-A22B-Thinking: Qwen3VLMoeVisionConfig's three levels, so four outputs of 4,096
    per merged token (vLLM's ``out_hidden_size x (1 + len(deepstack_visual_indexes))``), as
    listing [8, 16, 24] gives; an empty list keeps one."""
    config = _config(THINKING)
    assert "deepstack_visual_indexes" not in config["vision_config"]
    tower = forward_shape(config).vision_tower
    assert tower is not None and (tower.deepstack, tower.out_hidden_size, tower.patch_size) == (3, 4096, 14)
    listed = {**config, "vision_config": {**config["vision_config"], "deepstack_visual_indexes": [8, 16, 24]}}
    assert forward_shape(listed).vision_tower == tower
    enc, listed_enc = _encoder(forward_shape(config)), _encoder(forward_shape(listed))
    assert (enc.low, enc.high) == (listed_enc.low, listed_enc.high)
    # 1 image of 21,399 tokens (1024 px patches of 14: 16,777,216 px over 784 px a token): its outputs
    # (4 x 4,096 bf16 a token) kept through the decoder's run
    assert "1 image item(s) x 21,399 tokens" in enc.source and enc.low >= 21399 * 4 * 4096 * 2
    none = {**config, "vision_config": {**config["vision_config"], "deepstack_visual_indexes": []}}
    flat = forward_shape(none).vision_tower
    assert flat is not None and flat.deepstack == 0
    assert _encoder(forward_shape(none)).low < enc.low
    # the MoE and the dense wrapper read the same class defaults; the Instruct copy lists them
    dense = {**config, "architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl"}
    dense_tower = forward_shape(dense).vision_tower
    assert dense_tower is not None and replace(dense_tower, model_type="qwen3_vl_moe") == tower
    instruct = forward_shape(_config(INSTRUCT)).vision_tower
    assert instruct is not None and instruct.deepstack == 3


def test_qwen3_vl_without_vision_config_builds_the_default_tower() -> None:
    """``vision_config`` null: Qwen3VLConfig's whole default vision config (1,152 wide, patch 16,
    three levels, 3,584 out), as the weights walk builds it (``qwen3_vl.vision_config``)."""
    config = {**_config(INSTRUCT), "vision_config": None}
    tower = forward_shape(config).vision_tower
    assert tower is not None
    assert (tower.hidden_size, tower.patch_size, tower.deepstack, tower.out_hidden_size) == (1152, 16, 3, 3584)


def test_qwen3_5_has_no_deepstack_default() -> None:
    """Qwen3.5's vision config class has no ``deepstack_visual_indexes``: vLLM's ``hasattr`` then
    builds no deepstack merger, whether the file lists [] (the published one) or nothing."""
    config = _config(QWEN35_27B)
    assert config["vision_config"]["deepstack_visual_indexes"] == []
    bare = {**config, "vision_config": {k: v for k, v in config["vision_config"].items() if "deepstack" not in k}}
    for c in (config, bare):
        tower = forward_shape(c).vision_tower
        assert tower is not None and tower.deepstack == 0


def test_llama4_without_vision_config_is_the_default_tower_and_refused(tmp_path: Path) -> None:
    """The Scout copy without ``vision_config``: vLLM builds Llama4VisionConfig's tower (768 wide,
    448 px, patch 14: 1,025 positions a tile) and profiles it, on the image processor's 336 px tiles
    (577 positions): the position embeddings do not broadcast, so the term is refused by name
    (before this, the model was planned as text-only, no encoder term)."""
    config = _config(SCOUT)
    assert "vision_config" not in config
    shape = forward_shape(config)
    tower = shape.vision_tower
    assert shape.multimodal == "vision_config" and shape.modalities == ("image", "video")
    assert tower is not None and (tower.hidden_size, tower.intermediate_size, tower.tile_size) == (768, 5632, 448)
    assert (tower.crops, tower.image_patches, tower.image_tokens) == (17, 17 * 1025, 17 * 256)
    (tmp_path / "config.json").write_text(json.dumps(config))
    refused = with_processor_sizes(shape, str(tmp_path / "config.json"))
    assert refused.vision_tower is None and "336 x 336 px tiles" in refused.vision_refusal
    assert "1,025 position embeddings to 577 positions" in refused.vision_refusal
    with pytest.raises(InputError, match=r"llama4_vision_model tower's .*448"):
        _encoder(refused)
    # a checkpoint whose processor tiles at the tower's side runs it: bounded
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"size": {"height": 448, "width": 448}}))
    sized = with_processor_sizes(shape, str(tmp_path / "config.json"))
    assert sized.vision_tower == tower
    assert "1 image item(s) x 4,352 tokens" in _encoder(sized).source  # 8,192 // 4,352
    # Llama4ImageProcessor refuses a size without its width
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"size": {"height": 448}}))
    with pytest.raises(InputError, match="size"):
        with_processor_sizes(shape, str(tmp_path / "config.json"))
