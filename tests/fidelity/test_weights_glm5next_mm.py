"""GLM-5.3-Flash's multimodal wrapper's weights (``Glm5NextForConditionalGeneration``, vLLM 0.33.0:
``model_executor/models/glm5next.py`` ``wrapper_walk`` / ``vision_tower``) against vLLM's own figures:
parameter, buffer and allocated bytes of each pipeline stage's rank 0. Needs no vLLM.

Recorded in the ``0.33.0-mm`` boot environment (vLLM 0.33.0 with its multimodal extras) with
``RECORD_WEIGHTS_WORKSPACE=1`` (the sparse MLA backend reserves its workspace at construction):

- ``recorded-0.33.0-glm5next-mm.json``: ``record_weights.py --tiny Glm5NextForConditionalGeneration``: the
  tiny wrapper (a 2-block tower of width 64, 8 heads; its ``preprocessor_config.json`` normalizes: the
  device-side input norm's float32 ``[3]`` weight and bias) at TP 1 / 2 / 4 / 8, EP at TP 2 / 8, TP 2 x
  PP 3 (the tower on the first stage alone) and ``--language-model-only`` at TP 1 / 2;
- ``recorded-0.33.0-glm5next-mm-configs.json``: ``RECORD_WEIGHTS_CONFIGS=tests/fidelity/data/weights/glm53-mm``:
  ``glm53mm-defaults`` (the config classes' defaults: only the text keys its class cannot default, no
  ``vision_config``: transformers' 24-block, 1,024-wide tower, whose rotary table spans the text model's
  1,048,576 positions; the tiny wrapper's processor config) at TP 1 / 2 / 4 / 8 and TP 2 x PP 3, and two
  stand-ins, ``glm53mm-identity`` (no processor config, so no input norm; a 3-block tower of width
  96, 4 heads, 16-pixel patches, temporal patch 1, ``swiglu_limit`` left to the text config's 7.0,
  ``layer_types`` naming the indexed layers) and ``glm53mm-null-limit`` (the same with the vision
  ``swiglu_limit`` null: transformers' strict config refuses it on every flag set).

No published config.json of GLM-5.3-Flash was found. A case vLLM builds matches; a case vLLM refuses
(TP 8: four text heads) is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from weights_records import assert_stages, stage_parallel

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.loader import image_norm_channels
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
ARCH = "Glm5NextForConditionalGeneration"
ARCHS = HERE / "data" / "architectures"
TINY = ARCHS / f"{ARCH}.json"
FILES = ARCHS / "files" / ARCH
STAND_INS = DATA / "glm53-mm"
DOCS = {
    name: json.loads((DATA / name).read_text())
    for name in ("recorded-0.33.0-glm5next-mm.json", "recorded-0.33.0-glm5next-mm-configs.json")
}
RECORDED = {(name, cid): row for name, doc in DOCS.items() for cid, row in doc["cases"].items()}


def _config_and_files(row: dict[str, Any]) -> tuple[dict[str, Any], Path | None]:
    """The config a row was recorded on and the directory of its processor config (``None``: none)."""
    name = row["config"]
    if name.startswith("arch--"):
        return json.loads(TINY.read_text()), FILES
    return json.loads((STAND_INS / name / "config.json").read_text()), STAND_INS / name


def _rank(row: dict[str, Any], stage: int) -> Any:
    argv = row["argv"]
    config, files = _config_and_files(row)
    par = stage_parallel(argv, stage, "0.33.0", capability=(9, 0))
    return rank_weights(
        config,
        par,
        max_num_batched_tokens=row.get("max_num_batched_tokens", 8192),
        language_model_only="--language-model-only" in argv,
        image_norm_channels=image_norm_channels(files) if files is not None else 0,
    )


def test_recorded() -> None:
    """The tiny wrapper's 9 flag sets (TP 8 refused by vLLM: its four text heads, 2), the defaults' 5 (no
    ``vision_config`` or ``n_routed_experts`` given: no ``--language-model-only`` or EP sets) and the two
    stand-ins' 9 each (``glm53mm-identity``'s TP 8 refused, 2; every ``glm53mm-null-limit`` case refused)."""
    assert all(doc["vllm"] == "0.33.0" for doc in DOCS.values())
    assert len(DOCS["recorded-0.33.0-glm5next-mm.json"]["cases"]) == 9
    assert len(DOCS["recorded-0.33.0-glm5next-mm-configs.json"]["cases"]) == 23
    refused = {cid for (_, cid), row in RECORDED.items() if not row["ok"]}
    null = {cid for cid in refused if cid.startswith("glm53mm-null-limit ")}
    assert len(null) == 9 and len(refused) == 13
    assert all("--tensor-parallel-size 8" in cid for cid in refused - null)


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    row: dict[str, Any] = RECORDED[(name, cid)]
    assert_stages(row, lambda stage: _rank(row, stage))


def test_tower_and_input_norm() -> None:
    """The tiny tower at TP 1 (vLLM's shapes, recorded): 1,367,616 bytes of bfloat16 parameters beside the
    text model (2 blocks of 19,376 values, the 64 x 3 x 2 x 14 x 14 patch embedding, the merger's 256-wide
    projection and 2 x 512 gated MLP, the 256 x 64 x 2 x 2 downsample), the rotary table 8,192 x 4
    bfloat16 and the input norm's 2 x 3 float32 buffers."""
    cases = DOCS["recorded-0.33.0-glm5next-mm.json"]["cases"]
    full = cases[f"arch--{ARCH} --tensor-parallel-size 1"]
    text = cases[f"arch--{ARCH} --tensor-parallel-size 1 --language-model-only"]
    block = 2 * 64 + 2 * 8 + 192 * 65 + 64 * 65 + 256 * 65 + 64 * 129
    tower = 64 * (3 * 2 * 14 * 14 + 1) + 2 * block + 64 + 256 * (64 * 4 + 1) + 256 * 256 + 2 * 256 + 1024 * 256
    tower += 256 * 512
    assert full["param_bytes"] - text["param_bytes"] == 2 * tower == 1_367_616
    assert full["buffer_bytes"] - text["buffer_bytes"] == 8192 * 4 * 2 + 2 * 3 * 4


def test_defaults_tower_beside_the_text_model() -> None:
    """The defaults' tower (transformers' 24 blocks of width 1,024, 16 heads, a 1,536-wide merger of 10,240)
    is 920,144,896 bytes beside the text model's recorded figures (``recorded-0.33.0-glm5next.json``), and its
    rotary table spans the text config's 1,048,576 positions: 64 MiB (32 bfloat16 values of a 64-wide head's
    half) beside the input norm's 24 bytes."""
    wrapper = DOCS["recorded-0.33.0-glm5next-mm-configs.json"]["cases"]["glm53mm-defaults --tensor-parallel-size 1"]
    text_doc = json.loads((DATA / "recorded-0.33.0-glm5next.json").read_text())
    text = text_doc["cases"]["arch--defaults--Glm5NextForCausalLM --tensor-parallel-size 1"]
    assert wrapper["param_bytes"] - text["param_bytes"] == 920_144_896
    assert wrapper["buffer_bytes"] - text["buffer_bytes"] == 1048576 * 32 * 2 + 2 * 3 * 4


@pytest.mark.parametrize(("version", "words"), [("0.32.0", "registry has no"), ("0.31.0", "registry has no")])
def test_other_releases_refused_by_name(version: str, words: str) -> None:
    with pytest.raises(InputError, match=words):
        rank_weights(
            json.loads(TINY.read_text()), Parallel(capability=(9, 0), vllm_version=version), max_num_batched_tokens=8192
        )
