"""Run a matrix: prepare the arms' trees, key every task, answer what the cache holds, dispatch
the rest to a backend, and assemble the cells (arm against arm, as ``profiles --compare --boot``
compares them: :func:`dryboot.boot.compare.differences`; then the cell's expectation).
"""

from __future__ import annotations

import difflib
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from dryboot.boot.arms import model_dir
from dryboot.boot.compare import differences
from dryboot.boot.trees import tree_from_series
from dryboot.matrix.cache import Cache, task_key, tree_digest
from dryboot.matrix.model import (
    PLAN_ARM,
    Arm,
    Backend,
    BootTask,
    CellResult,
    Expectation,
    Matrix,
    MatrixResult,
    TaskResult,
)

#: ``progress(done, total)``: tasks answered so far (cached ones included) of all.
Progress = Callable[[int, int], None]


def prepare_arms(matrix: Matrix, workdir: Path) -> tuple[Arm, ...]:
    """The matrix's arms with every ``series`` arm's scratch tree built under ``workdir`` (the
    series applied to a copy of its base release, as ``profiles`` arms are).

    :raises InputError: a series that does not apply (named).
    """
    out = []
    for arm in matrix.arms:
        if arm.kind == "series" and arm.tree is None:
            assert arm.series is not None and arm.version is not None and arm.python is not None
            tree, _ = tree_from_series(
                arm.series, arm.version, arm.python, workdir / "trees" / arm.name, f"{matrix.source}: arms.{arm.name}"
            )
            arm = replace(arm, tree=tree.import_root)
        out.append(arm)
    return tuple(out)


def cell_id(model: str, gpu: str, flag_set: str) -> str:
    """``"<model>|<gpu>|<flag set>"``."""
    return f"{model}|{gpu}|{flag_set}"


def build_tasks(matrix: Matrix, arms: tuple[Arm, ...], workdir: Path) -> list[BootTask]:
    """Every task of the matrix: per cell dryboot's plan, then each arm, keyed (:func:`task_key`)."""
    codes: dict[str, str] = {}
    for arm in arms:
        if arm.kind == "policy":
            codes[arm.name] = f"dryboot:{arm.version}:{arm.grouping}:{arm.unification}"
        else:
            assert arm.tree is not None and arm.python is not None
            codes[arm.name] = f"tree:{arm.python}:{tree_digest(arm.tree)}"
    tasks = []
    for m in matrix.models:
        model = model_dir(m.path, workdir)
        for gpu in matrix.gpus:
            for fs in matrix.flag_sets:
                cid = cell_id(m.name, gpu, fs.name)
                plan_code = f"dryboot:{matrix.vllm_version}:upstream:upstream"
                tasks.append(
                    BootTask(
                        cid,
                        PLAN_ARM,
                        ("", "dryboot:plan", ""),
                        model,
                        fs.argv,
                        gpu,
                        task_key(plan_code, model, fs.argv, gpu),
                        matrix.timeout_s,
                        matrix.vllm_version,
                    )
                )
                for arm in arms:
                    if arm.kind == "policy":
                        env = ("", codes[arm.name], "")
                    else:
                        assert arm.python is not None and arm.tree is not None
                        env = (arm.python, arm.tree, "")
                    tasks.append(
                        BootTask(
                            cid,
                            arm.name,
                            env,
                            model,
                            fs.argv,
                            gpu,
                            task_key(codes[arm.name], model, fs.argv, gpu),
                            matrix.timeout_s,
                            arm.version,
                            arm.grouping,
                            arm.unification,
                        )
                    )
    return tasks


def _meets(exp: Expectation | None, arms: list[TaskResult], agreement: str) -> str | None:
    """Why the cell does not meet ``exp`` (``None``: met). With no expectation stated, every
    arm must start (a refusal is a finding, as ``profiles --compare --boot`` exits 1 on one)."""
    if exp is None:
        refused = [r for r in arms if r.status != "ok"]
        return None if not refused else f"arm {refused[0].arm} refuses: {refused[0].reason}"
    if exp.kind == "identical":
        if agreement != "identical":
            return f"expected identical, the arms {agreement}"
        return None
    if exp.kind == "differs":
        return None if agreement == "differs" else f"expected the arms to differ, they are {agreement}"
    if exp.kind == "refused":
        started = [r for r in arms if r.status != "refused"]
        return None if not started else f"expected refused, arm {started[0].arm} starts"
    low = [r for r in arms if r.status != "ok" or r.tokens is None or r.tokens < (exp.tokens or 0)]
    if low:
        r = low[0]
        got = f"{r.tokens:,} tokens" if r.tokens is not None else f"no KV cache ({r.status}: {r.reason})"
        return f"expected {exp.text}, arm {r.arm} has {got}"
    return None


def assemble(
    matrix: Matrix, arms: tuple[Arm, ...], results: dict[tuple[str, str], TaskResult]
) -> tuple[CellResult, ...]:
    """The cells from every task's result (each present)."""
    names = [a.name for a in arms]
    cells = []
    for m in matrix.models:
        for gpu in matrix.gpus:
            for fs in matrix.flag_sets:
                cid = cell_id(m.name, gpu, fs.name)
                per = {n: results[(cid, n)] for n in names}
                first = [per[n] for n in names[:2]]
                errors = [r for r in per.values() if r.status == "error"]
                changes: tuple[str, ...] = ()
                diff: tuple[str, ...] = ()
                if errors:
                    agreement = "error"
                elif len(first) < 2:
                    agreement = "identical" if first[0].status == "ok" else "both refuse"
                else:
                    a, b = first
                    assert a.figures is not None and b.figures is not None
                    changes = tuple(differences(a.figures, b.figures, a.arm, b.arm))
                    if a.status == b.status == "refused":
                        agreement = "both refuse"
                    else:
                        agreement = "differs" if changes else "identical"
                    diff = tuple(
                        line.rstrip("\n")
                        for line in difflib.unified_diff(list(a.lines), list(b.lines), a.arm, b.arm, lineterm="")
                    )
                exp = matrix.expectation(cid)
                why: str | None
                if errors:
                    status, why = "error", f"arm {errors[0].arm}: {errors[0].reason}"
                else:
                    why = _meets(exp, list(per.values()), agreement)
                    status = "met" if why is None else "failed"
                cells.append(
                    CellResult(
                        cid,
                        m.name,
                        gpu,
                        fs.name,
                        results[(cid, PLAN_ARM)],
                        per,
                        agreement,
                        diff,
                        None if exp is None else exp.text,
                        status,
                        changes,
                        why,
                    )
                )
    return tuple(cells)


def run_matrix(
    matrix: Matrix,
    backend: Backend,
    cache: Cache,
    progress: Progress | None = None,
    workdir: Path | None = None,
) -> MatrixResult:
    """Run every cell of ``matrix`` on ``backend``, answering from ``cache`` what it holds
    (tasks with equal keys run once). ``workdir`` holds the series arms' scratch trees and the
    models laid out as directories (default: a temporary directory, removed at the end; a
    remote backend needs one its workers can read).

    :raises InputError: an arm's series that does not apply (before anything runs).
    """
    t0 = time.perf_counter()
    own = workdir is None
    work = Path(tempfile.mkdtemp(prefix="dryboot-matrix-")) if workdir is None else workdir
    try:
        arms = prepare_arms(matrix, work)
        tasks = build_tasks(matrix, arms, work)
        results: dict[tuple[str, str], TaskResult] = {}
        by_key: dict[str, list[BootTask]] = {}
        hits = 0
        for t in tasks:
            hit = cache.get(t.cache_key, t.cell_id, t.arm)
            if hit is not None:
                results[(t.cell_id, t.arm)] = hit
                hits += 1
            else:
                by_key.setdefault(t.cache_key, []).append(t)
        total = len(tasks)
        count = hits
        if progress is not None:
            progress(count, total)

        def done(res: TaskResult) -> None:
            nonlocal count
            twins = [t for t in by_key.get(_key_of[(res.cell_id, res.arm)], [])]
            cache.put(_key_of[(res.cell_id, res.arm)], res)
            for t in twins:
                results[(t.cell_id, t.arm)] = replace(res, cell_id=t.cell_id, arm=t.arm)
                count += 1
            if progress is not None:
                progress(count, total)

        unique = [ts[0] for ts in by_key.values()]
        _key_of = {(t.cell_id, t.arm): t.cache_key for t in unique}
        if unique:
            backend.run(unique, done)
        cells = assemble(matrix, arms, results)
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    return MatrixResult(
        cells=cells,
        models=tuple(m.name for m in matrix.models),
        gpus=matrix.gpus,
        flag_sets=tuple(f.name for f in matrix.flag_sets),
        arms=tuple(a.name for a in arms),
        exit_code=0 if all(c.status == "met" for c in cells) else 1,
        seconds=round(time.perf_counter() - t0, 3),
        cache_hits=hits,
        source=matrix.source,
    )
