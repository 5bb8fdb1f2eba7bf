"""Small per-release record sets (a cases module ``C`` with ``RELEASES``, ``KEPT``, ``RECORDS`` and
``cases(workdir)``): record each release's oracle answers, and compare dryboot with them. Used by the
Gemma-4 fp8 / multimodal-prefix set and the V1-model-runner set; :func:`record_gpu_cases` records the
GPU-faked sets of DeepSeek-V4 and Flint."""

from __future__ import annotations

import json
import os
import sys
import tempfile
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


RUN_AS = H.REPO / "tests" / "data" / "gpus" / "run_oracle_as.py"


def record_gpu_cases(cases_module: ModuleType, argv: list[str]) -> int:
    """Record a release's engine start on a cases module's GPU cases (``C.CASES``: id -> (config name,
    flags, GPU or ``None``), ``C.config(name)``, ``C.RELEASES``, ``C.record_path(release)``):
    ``argv`` is ``PYTHON [CASE...]``; each GPU's cases run as that GPU
    (``tests/data/gpus/run_oracle_as.py``), and the answers go into the record (other cases'
    answers kept when only some are named; ``RECORD_OUT`` writes elsewhere). Used by
    ``record_deepseek_v4_gpus.py`` and ``record_flint.py``."""
    C = cases_module
    python, only = argv[0], set(argv[1:])
    version = H.vllm_version(python)
    if version not in C.RELEASES:
        print(f"these cases are recorded on vLLM {', '.join(C.RELEASES)} only", file=sys.stderr)
        return 1
    every = C.CASES
    cases = {k: v for k, v in every.items() if not only or k in only}
    res: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for as_gpu in sorted({g or "" for _, _, g in cases.values()}):
            inputs = [
                {"id": cid, "model": str(H._write_config(work, cid, C.config(name))), "argv": flags}
                for cid, (name, flags, g) in cases.items()
                if (g or "") == as_gpu
            ]
            oracle = [str(RUN_AS), as_gpu] if as_gpu else None
            res.update(H.OracleRunner(python, jobs=1, oracle_argv=oracle).run(inputs))
    if H.crashed_cases(res):
        return 1
    record = C.record_path(version)
    path = Path(os.environ.get("RECORD_OUT") or record)
    doc: dict[str, Any] = json.loads(record.read_text()) if record.exists() else {"vllm": version, "cases": {}}
    for cid, (name, flags, gpu) in cases.items():
        kept = H.kept_answer(res[cid], H.LOGGED_KEPT, 400)
        entry: dict[str, object] = {"config": name, "argv": flags}
        if gpu:
            entry["gpu"] = gpu
        entry["vllm"] = kept
        doc["cases"][cid] = entry
        print(f"{cid:20} {'served' if kept.get('ok') else str(kept.get('error', ''))[:110]}")
    doc["cases"] = {k: doc["cases"][k] for k in every if k in doc["cases"]}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"vLLM {version}: {len(cases)} cases recorded into {path}")
    return 0
