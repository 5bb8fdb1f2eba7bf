"""The generated end-to-end cases without vLLM (issue 38): ``data/e2e-sample/vllm-0.28.0.json`` holds
vLLM 0.28.0's answers (its engine start, ``record_e2e_sample.py``) to every 10th of the 300 cases
``test_e2e.py::test_e2e_agreement`` runs through both tools (that test needs ``DRYBOOT_VLLM_PYTHON``).
Here the same cases are generated again and dryboot is held to the recorded answers with the
harness's verdict, so a regression on that path fails the default run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H

RECORD = Path(__file__).resolve().parent / "data" / "e2e-sample" / "vllm-0.28.0.json"
DOC: dict[str, Any] = json.loads(RECORD.read_text())


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, H.Case]]:
    work = tmp_path_factory.mktemp("e2e-sample")
    meta = DOC["meta"]
    cases = H.generate_cases(meta["cases"], meta["seed"], work)[:: meta["every"]]
    return work, {c.id: c for c in cases}


def _local(text: str, work: Path) -> str:
    return text.replace("{work}", str(work)).replace("{repo}", str(H.REPO))


def test_the_sample_is_the_generators_cases(generated: tuple[Path, dict[str, H.Case]]) -> None:
    """Regenerated, the cases are the recorded ones (a changed generator means re-recording)."""
    work, cases = generated
    assert [r["id"] for r in DOC["rows"]] == list(cases)
    for row in DOC["rows"]:
        c = cases[row["id"]]
        assert (c.family, c.model, c.argv, c.env) == (
            row["family"], _local(row["model"], work), [_local(a, work) for a in row["argv"]], row["env"]
        ), row["id"]  # fmt: skip
    answers = [r["vllm"] for r in DOC["rows"]]
    assert len(answers) == 30 and 10 <= sum(a["ok"] for a in answers) <= 20  # both outcomes sampled
    assert not any("OracleCrash" in str(a.get("error")) for a in answers)


@pytest.mark.parametrize("row", DOC["rows"], ids=[r["id"] for r in DOC["rows"]])
def test_dryboot_agrees_with_the_recorded_answer(
    row: dict[str, Any], generated: tuple[Path, dict[str, H.Case]]
) -> None:
    _, cases = generated
    case = cases[row["id"]]
    got = H.run_dryboot(case, DOC["meta"]["vllm_version"])
    verdict = H.compare(row["vllm"], got)
    assert verdict["agree"], (
        f"{case.command()}\n  vLLM:    {H._answer(row['vllm'], vllm=True)}\n  dryboot: {H._answer(got, vllm=False)}"
    )


@pytest.mark.parametrize("pin", DOC["pinned"], ids=[p["id"] for p in DOC["pinned"]])
def test_dryboot_agrees_on_the_pinned_cases(pin: dict[str, Any], tmp_path: Path) -> None:
    """Cases recorded beside the sample to pin a rule it rarely reaches (``record_e2e_sample.PINNED``)."""
    model = H.materialize_file(tmp_path, H.REPO / pin["config"])
    case = H.Case(id=pin["id"], family="pinned", model=model, argv=pin["argv"])
    got = H.run_dryboot(case, DOC["meta"]["vllm_version"])
    verdict = H.compare(pin["vllm"], got)
    assert verdict["agree"], (pin["rule"], verdict["diffs"])
