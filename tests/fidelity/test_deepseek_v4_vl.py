"""DeepSeek-V4's multimodal wrapper (``DeepseekV4ForConditionalGeneration``, vLLM 0.30.0+:
``vllm/models/deepseek_v4/common/vl_model.py``): its fp8 cases against each release's engine start.

The wrapper builds ``DeepseekV4ForCausalLM`` on its own config beside a ``DeepseekV4ViT`` tower,
and 0.30.0+ serve a ``DeepseekV4ForCausalLM`` config with ``vision_n_layers > 0`` as it. Its KV
cache is the text model's (the image spans widen the sparse sliding window inside the kernels
only); dryboot plans it through the text model's rules. :data:`CASES` are flag sets on
:data:`CONFIGS` (the tiny config ``data/architectures/DeepseekV4ForConditionalGeneration.json``
under the wrapper's name and under the text model's, the ``interleaved`` layout with a tower, the
wrapper without one, with only ``vision_n_layers`` given, and with tower widths tensor parallelism
does or does not divide). ``data/deepseek_v4/vl-<release>.json`` holds what each release of
:data:`RELEASES` answered (written by ``record_deepseek_v4_vl.py`` from
``src/dryboot/boot/engine_start.py``; nothing in them comes from dryboot); dryboot must agree
with every one. Each directory also holds a stand-in tokenizer (without one vLLM cannot build the
wrapper's processing info and starts it text-only, mm-prefix mode off).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T

pytestmark = pytest.mark.fidelity

ARCH = "DeepseekV4ForConditionalGeneration"
TEXT = "DeepseekV4ForCausalLM"
DATA = Path(__file__).resolve().parent / "data" / "deepseek_v4"
#: the releases whose registry has the wrapper, each recorded
RELEASES = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")
TINY = T.DATA / f"{ARCH}.json"


def record_path(version: str) -> Path:
    """Where ``record_deepseek_v4_vl.py`` keeps ``version``'s answers."""
    return DATA / f"vl-{version}.json"


def _tiny() -> dict[str, Any]:
    config: dict[str, Any] = json.loads(TINY.read_text())
    return config


def _interleaved() -> dict[str, Any]:
    text = json.loads((DATA / "interleaved.json").read_text())
    vision = {k: v for k, v in _tiny().items() if k.startswith("vision_")}
    return {**text, **vision, "architectures": [ARCH]}


def _bare() -> dict[str, Any]:
    """Only ``vision_n_layers`` of the tower's keys (vLLM's own config class defaults the others)."""
    return {k: v for k, v in _tiny().items() if not k.startswith("vision_") or k == "vision_n_layers"}


#: config name -> its config.json
CONFIGS: dict[str, Any] = {
    "wrapper": _tiny,
    "routed": lambda: {**_tiny(), "architectures": [TEXT]},
    "interleaved": _interleaved,
    "no_vision": lambda: {**_tiny(), "vision_n_layers": 0},
    "bare": _bare,
    # TP 4 divides the tower's 4 heads but not vision_inter_dim (the MLP's split asserts)
    "split": lambda: {**_tiny(), "vision_inter_dim": 510},
    # TP 2 does not divide 3 heads: every rank keeps the tower whole (no split to assert)
    "dp_tower": lambda: {**_tiny(), "vision_n_heads": 3, "vision_dim": 255, "vision_inter_dim": 511},
}

_MEM = ["--kv-cache-memory-bytes", "1000000000", "--kv-cache-dtype", "fp8"]
_MTP1 = json.dumps({"method": "mtp", "num_speculative_tokens": 1})
_SETS: list[list[str]] = [
    ["--max-model-len", "8192"],
    ["--max-model-len", "8192", "-tp", "2"],
    ["--max-model-len", "4096", "-tp", "4"],
    ["--max-model-len", "-1"],
    ["--max-model-len", "8192", "--block-size", "512"],
    ["--max-model-len", "65536", "-tp", "2", "--enable-prefix-caching"],
    ["--max-model-len", "8192", "--speculative-config", _MTP1],
    ["--max-model-len", "8192", "--max-num-batched-tokens", "2048"],
    ["--max-model-len", "8192", "--limit-mm-per-prompt", json.dumps({"image": 0})],
    ["--max-model-len", "8192", "--language-model-only"],
    ["--max-model-len", "8192", "--kv-cache-dtype", "fp8_ds_mla"],
    ["--max-model-len", "8192", "-dcp", "2", "-tp", "2"],
    ["--max-model-len", "8192", "--num-gpu-blocks-override", "100"],
]
#: (config name, flag set)
CASES: list[tuple[str, list[str]]] = [
    *(("wrapper", _MEM + s) for s in _SETS),
    *(("routed", _MEM + s) for s in [*_SETS[:3], _SETS[6], _SETS[8]]),
    *(("interleaved", _MEM + s) for s in [*_SETS[:2], *_SETS[4:7]]),
    *(("no_vision", _MEM + s) for s in _SETS[:2]),
    *(("bare", _MEM + s) for s in [_SETS[0], _SETS[1], _SETS[8]]),
    *(("split", _MEM + s) for s in [_SETS[2], _SETS[1], [*_SETS[2][:2], "-tp", "4", "--language-model-only"]]),
    ("dp_tower", _MEM + _SETS[1]),
]


def materialize(config: str) -> str:
    """A model directory: :data:`CONFIGS` ``[config]`` as config.json, beside the wrapper's stand-in
    tokenizer (``data/architectures/files/DeepseekV4ForConditionalGeneration/``)."""
    model = H._write_config(H.default_workdir(), f"dsv4-vl-{config}", CONFIGS[config]())
    for f in sorted((T.FILES / ARCH).iterdir()):
        target = Path(model) / f.name
        if not target.exists() or target.read_bytes() != f.read_bytes():
            target.write_bytes(f.read_bytes())
    return model


def make_case(index: int, config: str, argv: list[str]) -> H.Case:
    return H.Case(id=f"{ARCH}:{config}#{index}", family=f"arch:{ARCH}", model=materialize(config), argv=argv)


def recorded(version: str) -> list[dict[str, Any]]:
    doc = json.loads(record_path(version).read_text())
    assert doc["vllm"] == version
    rows: list[dict[str, Any]] = doc["cases"]
    return rows


@pytest.mark.parametrize("version", RELEASES)
def test_recorded_cases_are_this_modules_cases(version: str) -> None:
    assert [(r["config"], r["argv"]) for r in recorded(version)] == [(c, T.portable(a)) for c, a in CASES]


@pytest.mark.parametrize("version", RELEASES)
def test_vllm_serves_the_wrapper(version: str) -> None:
    served = [r for r in recorded(version) if r["vllm"]["ok"]]
    assert len(served) >= 15


@pytest.mark.parametrize("version", RELEASES)
def test_dryboot_matches_recorded_oracle(version: str) -> None:
    problems = []
    rows = recorded(version)
    for i, row in enumerate(rows):
        case = make_case(i, row["config"], T.local(row["argv"]))
        d = H.run_dryboot(case, version)
        if not H.compare(row["vllm"], d)["agree"]:
            answers = f"vLLM:    {H._answer(row['vllm'], vllm=True)}\n    dryboot: {H._answer(d, vllm=False)}"
            problems.append(f"{case.command(version)}\n    {answers}")
    assert not problems, f"{len(problems)}/{len(rows)} disagree:\n" + "\n".join(problems)


@pytest.mark.parametrize("version", RELEASES)
def test_the_wrappers_cache_is_the_text_models(version: str) -> None:
    """vLLM plans the wrapper's KV cache as the text model's on the same config: every served
    wrapper case of the tiny config has the figures of the text model's (vision keys dropped)."""
    rows = [r for r in recorded(version) if r["config"] == "wrapper" and r["vllm"]["ok"]]
    text_config = {**_bare(), "vision_n_layers": 0, "architectures": [TEXT]}
    text = H._write_config(H.default_workdir(), "dsv4-vl-text", text_config)
    for row in rows:
        plain = H.run_dryboot(H.Case(id="text", family=f"arch:{TEXT}", model=text, argv=T.local(row["argv"])), version)
        assert H.compare(row["vllm"], plain)["agree"], (row["argv"], plain)


@pytest.mark.parametrize("version", RELEASES)
def test_a_batch_below_one_image_is_refused(version: str) -> None:
    """Chunked multimodal input is forced off for the mm-prefix wrapper, so the scheduler's
    ``compute_mm_encoder_budget`` refuses a batch smaller than one image's tokens
    (``vision_max_n_token + 3``; the engine start records nothing past the KV cache plan, so this is
    read in vLLM's ``v1/core/encoder_cache_manager.py``); with images off it is planned."""
    argv = [*_MEM, "--max-model-len", "8192", "--max-num-batched-tokens", "386"]
    got = H.run_dryboot(make_case(0, "wrapper", argv), version)
    assert got.get("refused"), got
    assert "max_tokens_per_mm_item (387) is larger than max_num_batched_tokens (386)" in str(got["error"]), got
    ok = H.run_dryboot(make_case(0, "wrapper", [*argv[:-1], "387"]), version)
    assert not ok.get("refused"), ok
    off = H.run_dryboot(make_case(0, "wrapper", [*argv, "--limit-mm-per-prompt", json.dumps({"image": 0})]), version)
    assert not off.get("refused"), off
