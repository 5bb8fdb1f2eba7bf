"""A CHANGE DETECTOR, not a check: every public boot log of tests/data/checklog/public is read
without a traceback, and dryboot's verdict on it (exit code, each boot's status, the KV lines read
and their statuses, the flag combinations that explain a boot, the first reason) is the one
recorded in INDEX.json. Those recorded verdicts are dryboot's own output, written by
scripts/checklog_corpus_verdicts.py: a failure here says the output changed, not that it is wrong
(rerun the script and read its diff). Whether dryboot gives the figures vLLM logged is checked in
test_posted_figures.py (expectations copied from the logs) and test_workers.py (worked by hand).

Each log file's first line cites its source and is not part of the quoted log: it is dropped
before the log is read, as a user would paste only what follows it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .public_verdicts import PUBLIC, verdict

INDEX = json.loads((PUBLIC / "INDEX.json").read_text())
RECORDED = ("exit", "boots", "read", "lines", "explained_by", "budgets", "memory", "reason")


def test_every_log_is_indexed_and_cites_its_source() -> None:
    logs = sorted(p.name for p in PUBLIC.glob("*.log"))
    assert logs == sorted(INDEX)
    assert len(logs) >= 30
    for name in logs:
        head = (PUBLIC / name).read_text(encoding="utf-8").split("\n", 1)[0]
        assert head.startswith("# source: https://"), name
        assert INDEX[name]["config_note"] and INDEX[name]["verdict_note"], name


@pytest.mark.parametrize("name", sorted(INDEX))
def test_public_log_verdict_unchanged(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    expected = INDEX[name]
    got = verdict(name, expected["config"])
    assert {k: got[k] for k in RECORDED} == {k: expected[k] for k in RECORDED}


def test_pre_v1_lines_are_refused_per_line_not_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With any config, a V0 boot's '# GPU blocks' and V0 error lines are reported as refused by
    name; its lone concurrency line is still read (and, without a budget, unchecked)."""
    import io

    from dryboot.checklog.check import check_lines
    from dryboot.checklog.parse import iter_relevant_lines

    from .public_verdicts import REPO, body

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    config = str(REPO / "examples" / "models" / "gpt-oss-20b.config.json")
    name = "vllm-10517-llama31-8b-3090-three-boots.log"
    boots = list(check_lines(iter_relevant_lines(io.BytesIO(body(name))), source=name, model_path=config))
    second = boots[1].report
    assert second is not None
    by_kind = {c.line.kind.name: c for c in second.comparison.checks}
    assert by_kind["GPU_BLOCKS"].status == by_kind["V0_NOT_ENOUGH"].status == "refused"
    assert "before 0.8" in (by_kind["GPU_BLOCKS"].reason or "")
    assert by_kind["CAPACITY"].status == "unchecked"
