"""Config reading, case by case: how vLLM 0.28.0 reads a config that dryboot once misread
(issue 29), against vLLM's own engine start.

``data/config_reading/configs/<name>.json`` are configs written for these cases: the shapes of a
published checkpoint (named in :data:`CASES`' comment) with the one key whose reading is checked
varied (``use_sliding_window``, ``max_window_layers``, a nested ``text_config``, the vision
tower's sizes, ``auto_map``...). :data:`CASES` gives each its flag sets; ``recorded.json`` beside
them holds what vLLM 0.28.0 answered for every case (written by ``record_config_reading.py``
from ``src/dryboot/boot/engine_start.py``; nothing in it comes from dryboot). The default run
checks dryboot's answer (``dryboot plan ... --json``, in-process) against each.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H

pytestmark = pytest.mark.fidelity

DATA = Path(__file__).resolve().parent / "data" / "config_reading"
CONFIGS = DATA / "configs"
RECORDED = DATA / "recorded.json"
#: processor files vLLM reads at engine start, per architecture (shared with test_architectures)
FILES = Path(__file__).resolve().parent / "data" / "architectures" / "files"
#: the oracle fields a case records
KEPT = ("ok", "stage", "error", "block_size", "groups", "num_blocks", "tokens", "concurrency", "max_model_len")

_BUDGET = ["--kv-cache-memory-bytes", "20000000000"]
_TP = [
    _BUDGET,
    [*_BUDGET, "-tp", "2"],
    [*_BUDGET, "-tp", "4"],
    ["--kv-cache-memory-bytes", "8000000000", "-tp", "8", "--max-model-len", "65536"],
]
_SMALL = [_BUDGET, ["--kv-cache-memory-bytes", "8000000000", "-tp", "2", "--max-model-len", "65536"]]

#: config name -> its flag sets. The Qwen2.5-VL configs have Qwen/Qwen2.5-VL-3B-Instruct's shapes
#: (flat text keys, "sliding_window": 32768 with "use_sliding_window": false, a vision MLP of 3420).
CASES: dict[str, list[list[str]]] = {
    "qwen2_5_vl-3b": _TP,
    "qwen2_5_vl-3b-swa-all": _SMALL,
    "qwen2_5_vl-3b-swa-18": _SMALL,
    "qwen2_5_vl-3b-swa-36": _SMALL,
    "qwen2_5_vl-3b-swa-70": _SMALL,
    "qwen2_5_vl-3b-nested": _SMALL,
    # Qwen/Qwen2-VL-2B-Instruct's shapes; then its vision tower with 12 heads (TP 8 cannot split them)
    "qwen2_vl-2b": _SMALL,
    "qwen2_vl-2b-vision-12-heads": [[*_BUDGET, "-tp", "2"], [*_BUDGET, "-tp", "4"]],
    # 20 vision heads: TP 4 splits them, TP 8 does not (the language model's 12 heads split over 4)
    "qwen2_vl-2b-vision-20-heads": [[*_BUDGET, "-tp", "4"]],
    # a vision MLP of 3424 (8 x 428): TP 8 builds where 3420 does not
    "qwen2_5_vl-3b-mlp-3424": [["--kv-cache-memory-bytes", "8000000000", "-tp", "8", "--max-model-len", "65536"]],
    # LiquidAI/LFM2-VL's published form (model_type "lfm2-vl", which transformers does not ship, and
    # an auto_map naming the checkpoint's own config class), on the tiny LFM2-VL config; then the
    # same auto_map with transformers' own model_type ("lfm2_vl": no remote code without the flag)
    "lfm2_vl-remote-model-type": [["--kv-cache-memory-bytes", "2000000000"]],
    "lfm2_vl-auto-map": [["--kv-cache-memory-bytes", "2000000000"]],
}


def config_path(name: str) -> Path:
    return CONFIGS / f"{name}.json"


def make_case(name: str, index: int, argv: list[str]) -> H.Case:
    """Case ``name#index``: ``argv`` on config ``name`` (materialized with its architecture's
    processor files)."""
    work = H.default_workdir()
    work.mkdir(parents=True, exist_ok=True)
    path = config_path(name)
    model = H.materialize_file(work, path)
    architecture = (json.loads(path.read_text()).get("architectures") or [""])[0]
    extra = FILES / str(architecture)
    if extra.is_dir():
        for f in sorted(extra.iterdir()):
            target = Path(model) / f.name
            if not target.exists() or target.read_bytes() != f.read_bytes():
                target.write_bytes(f.read_bytes())
    return H.Case(id=f"{name}#{index}", family=f"config:{name}", model=model, argv=argv, source=path.name)


def cases() -> list[H.Case]:
    return [make_case(name, i, argv) for name, sets in CASES.items() for i, argv in enumerate(sets)]


def load_recorded() -> dict[str, list[dict[str, Any]]]:
    if not RECORDED.exists():
        return {}
    data: dict[str, list[dict[str, Any]]] = json.loads(RECORDED.read_text())["cases"]
    return data


def disagreement(case: H.Case, answer: dict[str, Any]) -> str | None:
    d = H.run_dryboot(case, "0.28.0")
    if H.compare(answer, d)["agree"]:
        return None
    return (
        f"{case.command('0.28.0')}\n    vLLM:    {H._answer(answer, vllm=True)}"
        f"\n    dryboot: {H._answer(d, vllm=False)}"
    )


def test_every_case_is_recorded() -> None:
    recorded = load_recorded()
    assert sorted(recorded) == sorted(CASES)
    for name, sets in CASES.items():
        assert [r["argv"] for r in recorded[name]] == sets, name
    assert sorted(p.stem for p in CONFIGS.glob("*.json")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_dryboot_matches_recorded_vllm(name: str) -> None:
    rows = load_recorded()[name]
    problems = [p for i, r in enumerate(rows) if (p := disagreement(make_case(name, i, r["argv"]), r["vllm"]))]
    assert not problems, "\n".join(problems)
