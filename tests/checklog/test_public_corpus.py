"""Every public boot log of tests/data/checklog/public is read without a traceback, with the
verdict recorded in its INDEX.json (exit code, each boot's status, the first reason).

Each log file's first line cites its source and is not part of the quoted log: it is dropped
before the log is read, as a user would paste only what follows it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from dryboot.checklog.check import check_stream
from dryboot.errors import InputError

from .conftest import DATA, REPO

PUBLIC = DATA / "public"
INDEX = json.loads((PUBLIC / "INDEX.json").read_text())


def body(name: str) -> bytes:
    return (PUBLIC / name).read_bytes().split(b"\n", 1)[1]


def test_every_log_is_indexed_and_cites_its_source() -> None:
    logs = sorted(p.name for p in PUBLIC.glob("*.log"))
    assert logs == sorted(INDEX)
    assert len(logs) >= 30
    for name in logs:
        head = (PUBLIC / name).read_text(encoding="utf-8").split("\n", 1)[0]
        assert head.startswith("# source: https://github.com/"), name
        assert INDEX[name]["config_note"], name


@pytest.mark.parametrize("name", sorted(INDEX))
def test_public_log_verdict(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    expected = INDEX[name]
    config = str(REPO / expected["config"]) if expected["config"] else None
    try:
        report = check_stream(io.BytesIO(body(name)), source=name, model_path=config)
    except InputError as exc:
        code, boots, reason, lines, explained = 2, ["refused"], exc.reason, [], []
    else:
        code = report.exit_code
        boots = [b.status for b in report.boots]
        reason = next((b.reason for b in report.boots if b.reason), None)
        lines = [[c.status for c in b.report.comparison.checks] if b.report else [] for b in report.boots]
        explained = [
            [c.describe() for c in b.report.search.explaining] if b.report and b.report.search else []
            for b in report.boots
        ]
    assert (code, boots) == (expected["exit"], expected["boots"])
    assert lines == expected["lines"] and explained == expected["explained_by"]
    assert expected["verdict_note"]
    if expected["reason"] is not None:
        assert reason is not None and reason.endswith(expected["reason"].split(": ")[-1])
