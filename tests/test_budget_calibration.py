"""dryboot's ``Model loading took`` against public boot logs (tests/data/budget/calibration.json):
every log naming a checkpoint dryboot models is reproduced to 0.01 GiB, the others are refused by
name (never guessed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dryboot.vllm.model_executor.model_loader.loader import model_weights

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "budget"
LOGS = [e for e in json.loads((DATA / "calibration.json").read_text())["logs"] if "logged_gib" in e]
LINE = re.compile(r"Model loading took ([0-9.]+) GiB")


def _log_path(entry: dict[str, object]) -> Path:
    log = str(entry["log"])
    return REPO / log if log.startswith("tests/") else DATA / log


@pytest.mark.parametrize("entry", LOGS, ids=[Path(str(e["log"])).stem for e in LOGS])
def test_log_states_what_the_table_says(entry: dict[str, object]) -> None:
    figures = {float(m) for m in LINE.findall(_log_path(entry).read_text())}
    assert figures == {entry["logged_gib"]}


@pytest.mark.parametrize("entry", [e for e in LOGS if e["config"]], ids=lambda e: Path(str(e["log"])).stem)
def test_weights_reproduced_to_a_hundredth_gib(entry: dict[str, object]) -> None:
    report = model_weights(REPO / str(entry["config"]), tp=int(str(entry["tp"])))
    assert report.refused is None
    assert abs(report.stages[0].gib - float(str(entry["logged_gib"]))) <= 0.01


def test_the_table_counts() -> None:
    modelled = [e for e in LOGS if e["config"]]
    assert len(modelled) == 2 and len(LOGS) - len(modelled) == 2
