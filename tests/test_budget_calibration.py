"""dryboot's ``Model loading took`` against public boot logs (tests/data/budget/calibration.json):
every log that prints a weights figure and names a published config is reproduced to 0.01 GiB
(the issue's "every logged Model loading took is matched within 0.01 GiB"); where dryboot is not
right yet, a strict expected failure names why; a config that is only a stand-in for a quantized
checkpoint is not checked (said per entry)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm.model_executor.model_loader.loader import model_weights

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "budget"
ENTRIES: list[dict[str, Any]] = json.loads((DATA / "calibration.json").read_text())["logs"]
LINE = re.compile(r"Model loading took ([0-9.]+) GiB")


def _log_path(entry: dict[str, Any]) -> Path:
    log = str(entry["log"])
    return REPO / log if log.startswith("tests/") else DATA / log


def _stem(entry: dict[str, Any]) -> str:
    return Path(str(entry["log"])).stem


def _weights_logged(entry: dict[str, Any]) -> float | None:
    """The weights figure the log prints: "Model loading took", or the DEBUG / V0 weights line."""
    logged = entry.get("logged") or {}
    value = logged.get("model_loading_gib", logged.get("weights_memory_gib", entry.get("logged_gib")))
    return None if value is None else float(value)


def _config_json(entry: dict[str, Any]) -> dict[str, Any]:
    path = REPO / str(entry["config"])
    return dict(json.loads((path / "config.json" if path.is_dir() else path).read_text()))


def _stand_in(entry: dict[str, Any]) -> bool:
    """A quantized checkpoint served while the config is the unquantized base model's."""
    config = _config_json(entry)
    quantized = "quantization_config" in config or "quantization_config" in config.get("text_config", {})
    return bool(entry.get("quantization")) and not quantized


WITH_WEIGHTS = [e for e in ENTRIES if _weights_logged(e) is not None]
CHECKED = [e for e in WITH_WEIGHTS if e.get("config") and not _stand_in(e)]

#: logged weights dryboot does not reproduce yet, each with what the log shows (strict: a fix turns
#: the entry into a failure to remove from here)
KNOWN_MISSES = {
    "kubesimplify-qwen3-32b-rtxpro6000se-tp2": (
        "0.27.1 TP 2: each rank logs 30.59 GiB, dryboot's weights per rank are 30.52 GiB (the same checkpoint "
        "at TP 1 and PP 2 matches to the hundredth): something allocated while loading under TP lands in the "
        "line (~70 MiB per rank), not modelled yet (issue 33 (c), the budget helper's TP-time load allocation)"
    ),
    "kubesimplify-qwen3-235b-a22b-2507-fp8-rtxpro6000se-tp4": (
        "0.27.1 TP 4: each rank logs 55.19 GiB, dryboot 55.13 GiB (~62 MiB per rank): the TP-time load "
        "allocation again (issue 33 (c)); the config is Qwen3-235B-A22B-FP8's, standing in for Instruct-2507-FP8"
    ),
    "statecraft-qwen25-15b-4070laptop-wsl2-v0.30.0-smoke": (
        "0.30.0 V2 runner at TP 1 under WSL2 / Docker Desktop: logs 2.98 GiB, dryboot 2.91 GiB (+75 MiB); the "
        "source notes that pinned host memory is unavailable under WSL2 and the V2 runner's UVA buffers fall back "
        "to device memory; whether they land in the loading line is not known (the base config stands in for "
        "the Instruct checkpoint)"
    ),
}


def _params(entries: list[dict[str, Any]]) -> list[Any]:
    out = []
    for e in entries:
        model = model_weights(REPO / str(e["config"]), tp=int(e.get("tp") or 1), pp=int(e.get("pp") or 1))
        refused = (model.refused or "").split(" (modelled")[0]
        reason = KNOWN_MISSES.get(_stem(e)) or (f"weights refused: {refused}" if refused else None)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(e, id=_stem(e), marks=marks))
    return out


@pytest.mark.parametrize("entry", WITH_WEIGHTS, ids=_stem)
def test_log_states_what_the_table_says(entry: dict[str, Any]) -> None:
    text = _log_path(entry).read_text()
    figure = _weights_logged(entry)
    if "model_loading_gib" in (entry.get("logged") or {}) or "logged_gib" in entry:
        assert figure in {float(m) for m in LINE.findall(text)}
    else:
        assert f"{figure}" in text


@pytest.mark.parametrize("entry", _params(CHECKED))
def test_weights_reproduced_to_a_hundredth_gib(entry: dict[str, Any]) -> None:
    report = model_weights(REPO / str(entry["config"]), tp=int(entry.get("tp") or 1), pp=int(entry.get("pp") or 1))
    assert report.refused is None, report.refused
    got = report.stages[0].gib
    logged = _weights_logged(entry)
    assert logged is not None
    assert abs(got - logged) <= 0.01, f"dryboot {got:.4f} GiB, logged {logged}"


def test_the_table_counts() -> None:
    """Every weights figure with a config is either checked or named a stand-in; the 0.27.1-0.33
    boots with a weights line and a modelled config are all checked."""
    stand_ins = [_stem(e) for e in WITH_WEIGHTS if e.get("config") and _stand_in(e)]
    assert stand_ins == ["genesis-24-qwen35-122b-a10b-8x3090-tp8"]
    recent = [e for e in CHECKED if str(e["release"]).startswith(("0.27.1", "0.28", "0.29", "0.3"))]
    assert len(recent) >= 4
    assert set(KNOWN_MISSES) <= {_stem(e) for e in CHECKED}
