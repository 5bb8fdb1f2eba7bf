"""Every public boot log of tests/data/checklog/public is read without a traceback, with the
verdict recorded in its INDEX.json (exit code, each boot's status, the KV lines read and their
statuses, the flag combinations that explain a boot, the first reason).

Each log file's first line cites its source and is not part of the quoted log: it is dropped
before the log is read, as a user would paste only what follows it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .public_verdicts import PUBLIC, verdict

INDEX = json.loads((PUBLIC / "INDEX.json").read_text())
RECORDED = ("exit", "boots", "read", "lines", "explained_by", "reason")


def test_every_log_is_indexed_and_cites_its_source() -> None:
    logs = sorted(p.name for p in PUBLIC.glob("*.log"))
    assert logs == sorted(INDEX)
    assert len(logs) >= 30
    for name in logs:
        head = (PUBLIC / name).read_text(encoding="utf-8").split("\n", 1)[0]
        assert head.startswith("# source: https://"), name
        assert INDEX[name]["config_note"] and INDEX[name]["verdict_note"], name


@pytest.mark.parametrize("name", sorted(INDEX))
def test_public_log_verdict(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    expected = INDEX[name]
    got = verdict(name, expected["config"])
    assert {k: got[k] for k in RECORDED} == {k: expected[k] for k in RECORDED}
