"""Small per-release record sets (a cases module ``C`` with ``RELEASES``, ``KEPT``, ``RECORDS`` and
``cases(workdir)``): record each release's oracle answers, and compare dryboot with them. Used by the
Gemma-4 fp8 / multimodal-prefix set and the V1-model-runner set."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import e2e_harness as H


def record(cases_module: ModuleType) -> int:
    """Run every case on each release's boot environment (``~/.cache/dryboot/boot-env/<release>``)
    and write the kept answers to the module's ``RECORDS`` (``<release>/<case id>`` keys)."""
    C = cases_module
    out: dict[str, dict[str, object]] = {}
    for release in C.RELEASES:
        python = Path.home() / ".cache/dryboot/boot-env" / release / "bin/python"
        cases = C.cases(H.default_workdir())
        res = H.OracleRunner(str(python)).run([c.oracle_input() for c in cases])
        for c in cases:
            out[f"{release}/{c.id}"] = H.kept_answer(res[c.id], C.KEPT, 600)
    C.RECORDS.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(out)} answers -> {C.RECORDS}")
    return 0


class Recorded:
    """A record set's answers and cases: :meth:`problems` compares dryboot with one record."""

    def __init__(self, cases_module: ModuleType) -> None:
        self.answers: dict[str, dict[str, Any]] = json.loads(cases_module.RECORDS.read_text())
        self.cases = {c.id: c for c in cases_module.cases(H.default_workdir())}
        self.releases: tuple[str, ...] = cases_module.RELEASES

    def keys(self) -> list[str]:
        return sorted(self.answers)

    def complete(self) -> bool:
        """Every case recorded on every release."""
        return set(self.answers) == {f"{r}/{c}" for r in self.releases for c in self.cases}

    def problems(self, key: str) -> list[str]:
        """How dryboot's answer differs from the record ``<release>/<case id>`` (empty: it agrees)."""
        release, cid = key.split("/")
        verdict = H.compare(self.answers[key], H.run_dryboot(self.cases[cid], release))
        return [f"{k}: vLLM {a} != dryboot {b}" for k, (a, b) in verdict["diffs"].items()]
