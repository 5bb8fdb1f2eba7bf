"""Hybrid / non-attention-state architectures against vLLM's recorded answers.

``data/hybrids-recorded.json`` holds what vLLM 0.28.0's engine start (``src/dryboot/boot/engine_start.py``) answered
for each architecture's tiny config (``data/architectures/<Arch>.json``) under >= 20 flag sets
(``record_hybrids.py`` records it). ``test_dryboot_matches_vllm`` needs no vLLM: dryboot must
agree with every answer (same figures, or both refuse). ``test_oracle_reproduces_record`` re-runs
the oracle when ``DRYBOOT_VLLM_PYTHON`` is set.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import record_hybrids as R

DOC: dict[str, Any] = json.loads(R.RECORDED.read_text())
CASES = [(arch, i, row) for arch in R.ARCHITECTURES for i, row in enumerate(DOC["cases"][arch])]


def test_every_architecture_is_recorded_under_twenty_flag_sets() -> None:
    assert DOC["vllm_version"] == "0.28.0"
    for arch in R.ARCHITECTURES:
        rows = DOC["cases"][arch]
        assert len({json.dumps(r["argv"]) for r in rows}) >= 20, arch
        # most flag sets start the engine: the figures are checked, not only refusals
        assert sum(1 for r in rows if r["vllm"]["ok"]) >= 12, arch


@pytest.mark.parametrize(("arch", "i", "row"), CASES, ids=[f"{a}-{i}" for a, i, _ in CASES])
def test_dryboot_matches_vllm(arch: str, i: int, row: dict[str, Any], tmp_path: Path) -> None:
    case = R.case(arch, i, row["argv"], tmp_path)
    got = H.run_dryboot(case, DOC["vllm_version"])
    verdict = H.compare(row["vllm"], got)
    assert verdict["agree"], f"{case.command()}\nvLLM: {H._answer(row['vllm'], True)}\ndryboot: {verdict['diffs']}"


@pytest.mark.fidelity
@pytest.mark.slow
def test_oracle_reproduces_record(vllm_python: str, tmp_path: Path) -> None:
    cases = [R.case(arch, i, row["argv"], tmp_path) for arch, i, row in CASES]
    res = H.OracleRunner(vllm_python, jobs=1).run([c.oracle_input() for c in cases])
    wrong = [
        c.command()
        for c, (_, _, row) in zip(cases, CASES, strict=True)
        if {k: res[c.id].get(k) for k in R.KEEP} != row["vllm"]
    ]
    assert not wrong, "\n".join(wrong[:5])
