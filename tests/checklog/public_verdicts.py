"""The verdict ``dryboot check-log`` gives one public log, as tests/data/checklog/public/INDEX.json
records it (shared by test_public_corpus_change_detector.py and scripts/checklog_corpus_verdicts.py)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from dryboot.checklog.check import LogReport, check_lines
from dryboot.checklog.parse import iter_relevant_lines

REPO = Path(__file__).resolve().parents[2]
PUBLIC = REPO / "tests" / "data" / "checklog" / "public"


def body(name: str) -> bytes:
    """The posted text: the file without its first line (the source citation)."""
    return (PUBLIC / name).read_bytes().split(b"\n", 1)[1]


def verdict(name: str, config: str | None) -> dict[str, Any]:
    """Exit code, each boot's status, each boot's KV lines read (kinds) and checked (statuses),
    the flag combinations that explain a boot (with the KV budget searched where the log states
    none), the memory lines read (for budget calibration) and
    the first reason given."""
    stream = io.BytesIO(body(name))
    boots = tuple(
        check_lines(iter_relevant_lines(stream, name), source=name, model_path=str(REPO / config) if config else None)
    )
    report = LogReport(name, boots)
    return {
        "exit": report.exit_code if boots else 2,
        "boots": [b.status for b in boots],
        "read": [[line.kind.name for line in b.facts.kv_lines] for b in boots],
        "lines": [[c.status for c in b.report.comparison.checks] if b.report else [] for b in boots],
        "explained_by": [
            [c.describe() for c in b.report.search.explaining] if b.report and b.report.search else [] for b in boots
        ],
        "budgets": [list(b.report.search.budget_notes) if b.report and b.report.search else [] for b in boots],
        "memory": [[f"{what}: {figure}" for what, figure, _ in b.facts.memory] for b in boots],
        "reason": next((b.reason.split(": ", 2)[-1] for b in boots if b.reason), None),
    }
