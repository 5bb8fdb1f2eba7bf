"""docs/weights.md's match table (vLLM 0.28.0, ``recorded.json``) against the recorded data: its
total row is recounted from every case, as ``test_weights.py`` classifies them (matched, with
their pipeline stages; vLLM's refusals refused; refused by name), and its rows add up to it."""

from __future__ import annotations

import re
from pathlib import Path

from test_weights import MODELLED, RECORDED

DOC = Path(__file__).resolve().parents[2] / "docs" / "weights.md"


def _table() -> list[list[str]]:
    text = DOC.read_text()
    start = text.index("### Match table (vLLM 0.28.0, `tests/fidelity/data/weights/recorded.json`)")
    rows = []
    for line in text[start:].splitlines()[1:]:
        if rows and not line.startswith("|"):
            break
        if line.startswith("|") and not line.startswith("|---") and not line.startswith("| family"):
            rows.append([c.strip().strip("*") for c in line.strip("|").split("|")])
    return rows


def _figures(row: list[str]) -> tuple[int, int, int, int, int, int]:
    configs, cases, matched, refusals, by_name = row[2:7]
    m = re.fullmatch(r"(\d+)(?: \((\d+)\))?", matched)
    assert m, matched
    return int(configs), int(cases), int(m[1]), int(m[2] or 0), int(refusals), int(by_name)


def _recorded() -> tuple[int, int, int, int, int, int]:
    matched = [row for cid, row in MODELLED.items() if row["ok"]]
    stages = sum(len(row["stages"]) if "stages" in row else 1 for row in matched)
    refusals = sum(1 for row in MODELLED.values() if not row["ok"])
    by_name = len(RECORDED) - len(MODELLED)
    configs = len({row["config"] for row in RECORDED.values()})
    return configs, len(RECORDED), len(matched), stages, refusals, by_name


def test_total_row_is_the_recorded_data() -> None:
    total = _table()[-1]
    assert total[0] == "total"
    assert _figures(total) == _recorded() == (229, 1437, 1286, 1668, 92, 59)


def test_rows_add_up_to_the_total() -> None:
    *rows, total = _table()
    sums = tuple(sum(col) for col in zip(*(_figures(r) for r in rows), strict=True))
    assert sums == _figures(total)
