"""Small per-release record sets (a cases module ``C`` with ``RELEASES``, ``KEPT``, ``RECORDS`` and
``cases(workdir)``): record each release's oracle answers, and compare dryboot with them. Used by the
Gemma-4 fp8 / multimodal-prefix set and the V1-model-runner set; :func:`record_gpu_cases` records the
GPU-faked sets (DeepSeek-V4, Flint, GLM-5.3-Flash, Dots3-Note, SM 12.x MLA, SM 9.0 sparse MLA, FA4 head 256)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable
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

#: a GPU case: (config name, flags, GPU or ``None`` for the oracle's default H200, *more arguments of
#: ``run_oracle_as.py`` after the GPU: the FlashInfer arm)
GpuCase = tuple[Any, ...]


def config_entry(case: GpuCase, answer: dict[str, Any], work: Path) -> dict[str, Any]:
    """A GPU case's record entry: its config name, flags, GPU (when not the default) and what
    :data:`e2e_harness.LOGGED_KEPT` names of the oracle's ``answer`` (the error cut to 400 characters)."""
    name, flags, gpu = case[:3]
    entry: dict[str, Any] = {"config": name, "argv": flags}
    if gpu:
        entry["gpu"] = gpu
    entry["vllm"] = H.kept_answer(answer, H.LOGGED_KEPT, 400)
    return entry


def record_gpu_cases(
    cases_module: ModuleType,
    argv: list[str],
    *,
    releases: tuple[str, ...] | None = None,
    cases: Callable[[str], dict[str, GpuCase]] | None = None,
    record_path: Callable[[str], Path] | None = None,
    model_dir: Callable[[Path, str, str], str] | None = None,
    entry: Callable[[GpuCase, dict[str, Any], Path], dict[str, Any]] = config_entry,
    case_timeout: float = 300.0,
    case_argv: Callable[[Path, list[str]], list[str]] | None = None,
) -> int:
    """Record a release's engine start on a cases module's GPU cases: ``argv`` is ``PYTHON [CASE...]``;
    each GPU's cases run as that GPU (``tests/data/gpus/run_oracle_as.py GPU [ARM]``, a case's
    :data:`GpuCase`), and each case's ``entry`` (default :func:`config_entry`) goes into the record
    (other cases' entries kept when only some are named, in the release's case order; ``RECORD_OUT``
    writes elsewhere). Defaults: ``releases`` ``C.RELEASES``, ``cases(release)`` ``C.CASES``,
    ``record_path`` ``C.record_path``, ``model_dir(work, case id, config name)`` the config
    ``C.config(name)`` written under ``work``, ``case_argv(work, flags)`` the flags as given.
    Returns the exit status: 1 (nothing written) on a
    release outside ``releases`` or an oracle crash. Used by the GPU-faked recorders
    (``record_deepseek_v4_gpus.py``, ``record_flint.py``, ``record_glm5next.py``, ``record_dots3_note.py``,
    ``record_sm12_mla.py``, ``record_sm90_sparse_mla.py``, ``record_fa4_hd256.py``)."""
    C = cases_module
    python, only = argv[0], set(argv[1:])
    version = H.vllm_version(python)
    releases = C.RELEASES if releases is None else releases
    if version not in releases:
        print(f"these cases are recorded on vLLM {', '.join(releases)} only", file=sys.stderr)
        return 1
    every = cases(version) if cases else C.CASES
    todo = {k: v for k, v in every.items() if not only or k in only}
    res: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for run_as in sorted({(c[2] or "", *c[3:]) for c in todo.values()}):
            inputs = [
                {
                    "id": cid,
                    "model": model_dir(work, cid, c[0]) if model_dir else H._write_config(work, cid, C.config(c[0])),
                    "argv": case_argv(work, c[1]) if case_argv else c[1],
                }
                for cid, c in todo.items()
                if (c[2] or "", *c[3:]) == run_as
            ]
            oracle = [str(RUN_AS), *run_as] if run_as[0] else None
            res.update(H.OracleRunner(python, jobs=1, case_timeout=case_timeout, oracle_argv=oracle).run(inputs))
        if H.crashed_cases(res):
            return 1
        record = (record_path or C.record_path)(version)
        path = Path(os.environ.get("RECORD_OUT") or record)
        doc: dict[str, Any] = json.loads(record.read_text()) if record.exists() else {"vllm": version, "cases": {}}
        width = max([20, *map(len, todo)])
        for cid, c in todo.items():
            doc["cases"][cid] = entry(c, res[cid], work)
            print(f"{cid:{width}} {'served' if res[cid].get('ok') else str(res[cid].get('error', ''))[:110]}")
    doc["cases"] = {k: doc["cases"][k] for k in every if k in doc["cases"]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"vLLM {version}: {len(todo)} cases recorded into {path}")
    return 0
