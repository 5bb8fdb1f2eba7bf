"""One task, in whatever process runs it (a local pool worker, a Ray actor, the caller itself).

:func:`run_task` keeps a module-level dict of warm :class:`dryboot.boot.session.BootSession`s
keyed by ``(python, tree import root)``: a session takes the GPU per engine start (the child
clears vLLM's per-process caches before each), so a worker's second cell on a tree costs one
engine start, not vLLM's import, whatever its GPU. A modelled arm (``env_key[1]`` is
``"dryboot:<policy>"``) and dryboot's own plan of a cell (arm :data:`~dryboot.matrix.model.PLAN_ARM`)
run dryboot's planner in this process: the flags read as ``plan --serve`` reads a pasted
``vllm serve`` line (:func:`dryboot.checklog.serve.parse_serve`, :func:`~dryboot.checklog.serve.plan_inputs`).

Without ``--kv-cache-memory-bytes`` a boot's KV budget is the tree's own weights and dryboot's
other terms for the same flags and GPU, as ``dryboot boot`` computes it
(:func:`dryboot.boot.budget.boot_budget`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import socket
import time
from pathlib import Path
from typing import Any

from dryboot.boot.budget import boot_budget, needs_budget
from dryboot.boot.compare import Figures, boot_figures, plan_figures
from dryboot.boot.session import H200, BootSession, Tree, limitation, parse_gpu
from dryboot.checklog.serve import parse_serve, plan_inputs
from dryboot.errors import InputError
from dryboot.matrix.model import BootTask, TaskResult
from dryboot.planner.plan import Plan, Policies, plan
from dryboot.planner.profiles import Arm as ProfileArm
from dryboot.planner.profiles import Profile, plan_profile
from dryboot.vllm.transformers_utils.config import load_config_json

#: Warm sessions of this process, by (python, tree import root).
_SESSIONS: dict[tuple[str, str], BootSession] = {}
#: Test hook (fault tests only): ``kill-once:SUBSTR:MARKER_FILE`` (the task whose
#: ``cell_id|arm`` holds SUBSTR kills its own process, once: the marker file records it),
#: ``hang:SUBSTR`` (sleeps past any timeout), ``kill:SUBSTR[:MARKER_FILE]`` (kills its process every
#: time, a line per kill in the marker file).
TEST_HOOK = "DRYBOOT_MATRIX_TEST_HOOK"


def worker_name() -> str:
    """``pid@host`` of this process."""
    return f"{os.getpid()}@{socket.gethostname()}"


def _hook(task: BootTask) -> None:
    spec = os.environ.get(TEST_HOOK)
    if not spec:
        return
    what, _, rest = spec.partition(":")
    needle, _, marker = rest.partition(":")
    if not needle or needle not in f"{task.cell_id}|{task.arm}":
        return
    if what == "kill-once" and marker and not Path(marker).exists():
        Path(marker).write_text(worker_name())
        os.kill(os.getpid(), signal.SIGKILL)
    elif what == "kill":
        if marker:  # one line per kill: which process it ended
            with open(marker, "a") as f:
                f.write(worker_name() + "\n")
        os.kill(os.getpid(), signal.SIGKILL)
    elif what == "hang":
        time.sleep(10 * 86400)


def _session(python: str, root: str) -> BootSession:
    key = (python, root)
    s = _SESSIONS.get(key)
    if s is not None and s._proc.poll() is None:
        return s
    s = BootSession(python, Tree(root, root, None), H200)
    _SESSIONS[key] = s
    return s


@atexit.register
def close_sessions() -> None:
    """End every warm session of this process."""
    while _SESSIONS:
        _, s = _SESSIONS.popitem()
        with contextlib.suppress(Exception):
            s.close()


def plan_task(
    task: BootTask,
    version: str,
    grouping: str = "upstream",
    unification: str = "upstream",
    budgeted: bool = False,
) -> Plan:
    """dryboot's plan of the task's model under its flags and GPU, with release ``version``'s rules
    (the GPU passed as ``--gpu`` unless it is the default H200, as ``dryboot boot`` plans).
    ``budgeted``: without ``--kv-cache-memory-bytes``, planned at the KV budget dryboot predicts
    for the GPU (:func:`dryboot.planner.profiles.plan_profile`, as ``profiles`` plans a profile);
    otherwise the plan has no capacity then (the boot's budget is computed from it).

    :raises InputError: dryboot refuses the inputs (named).
    """
    source = "flags"
    cmd = parse_serve(["vllm", "serve", task.model, *task.argv], {}, source, version=version)
    extra: dict[str, object] = {"vllm-version": version}
    if parse_gpu(task.gpu) != H200:
        extra["gpu"] = task.gpu
    sp = plan_inputs(cmd, model_path=task.model, extra_flags=extra, source=source)
    policies = Policies(grouping, unification)
    if budgeted:
        prof = Profile(task.cell_id, sp.model, sp.args, sp.drafter, {"model": task.model}, None, Path("/"))
        try:
            return plan_profile(prof, ProfileArm(task.arm, version, policies), source)
        except InputError as exc:  # said as plan says it: the flag and why, not the profile's name
            raise InputError("flags", None, exc.reason.removeprefix(f"{source}: ")) from None
    return plan(sp.model, sp.args, drafter=sp.drafter, policies=policies)


def _result(task: BootTask, status: str, fig: Figures | None, reason: str | None, t0: float) -> TaskResult:
    ok = status == "ok" and fig is not None
    return TaskResult(
        cell_id=task.cell_id,
        arm=task.arm,
        status=status,
        tokens=fig.tokens if ok and fig else None,
        block_size=fig.block_size if ok and fig else None,
        num_blocks=fig.num_blocks if ok and fig else None,
        max_model_len=fig.max_model_len if ok and fig else None,
        lines=fig.kv_log if fig is not None else (),
        reason=None if reason is None else " ".join(reason.split())[:2000],
        seconds=round(time.perf_counter() - t0, 4),
        cached=False,
        worker=worker_name(),
        figures=fig,
    )


def _boot(task: BootTask, t0: float) -> TaskResult:
    python, root, _ = task.env_key
    try:
        session = _session(python, root)
    except InputError as exc:
        return _result(task, "error", None, exc.line(), t0)
    budget: dict[str, Any] | None = None
    bb = None
    if needs_budget(list(task.argv)):
        try:
            p = plan_task(task, session.release)
            source, config = load_config_json(task.model)
            bb = boot_budget(p, config, source)
        except InputError as exc:
            why = f"no --kv-cache-memory-bytes, and dryboot cannot estimate the budget: {exc.line()}"
            return _result(task, "error", None, why, t0)
        budget = bb.case()
    answer = session.boot(task.model, list(task.argv), budget=budget, gpu=parse_gpu(task.gpu), timeout=task.timeout_s)
    limit = limitation(answer)
    if limit is not None:
        if answer.get("stage") == "crash" and "hung" in str(answer.get("error")):
            limit = f"timed out: the engine start took more than {task.timeout_s:g} s"
        return _result(task, "error", None, limit, t0)
    fig = boot_figures(answer)
    tree_budget = answer.get("budget") or {}
    if bb is not None and tree_budget:
        load = bb.load_verdict(list(tree_budget.get("weights_bytes") or []))
        if load is not None:  # vLLM never sizes a KV cache (as dryboot boot says it)
            return _result(
                task, "refused", Figures(refusal=f"won't: {load.reason}", kv_log=fig.kv_log), load.reason, t0
            )
    if fig.refusal is not None:
        return _result(task, "refused", fig, fig.refusal, t0)
    return _result(task, "ok", fig, None, t0)


def run_task(task: BootTask) -> TaskResult:
    """Run one task here: a boot in this process's warm session of the task's tree, or dryboot's
    plan (plan and modelled arms). Never raises for the task's own failure: a tree that does not
    import, a crash, a timeout are status ``"error"``; inputs the code refuses are ``"refused"``."""
    _hook(task)
    t0 = time.perf_counter()
    try:
        if task.env_key[1].startswith("dryboot:"):
            try:
                rules = (task.grouping or "upstream", task.unification or "upstream")
                p = plan_task(task, task.version or "0.28.0", *rules, budgeted=True)
            except InputError as exc:
                return _result(task, "refused", Figures(refusal=exc.line()), exc.line(), t0)
            fig = plan_figures(p)
            if fig.refusal is None and fig.tokens is None and needs_budget(list(task.argv)):
                # no budget predicted: vLLM would not start (won't), or dryboot cannot say (named)
                note = next((n for n in reversed(p.notes) if n.startswith("KV budget")), "KV budget not estimated")
                won = re.search(r"verdict won't: (.*)", note)
                if won:
                    return _result(
                        task, "refused", Figures(refusal=f"won't: {won.group(1)}"), f"won't: {won.group(1)}", t0
                    )
                return _result(task, "error", None, f"dryboot's model: {note}", t0)
            return _result(task, "ok" if fig.refusal is None else "refused", fig, fig.refusal, t0)
        return _boot(task, t0)
    except Exception as exc:  # one task's failure is its result, never the worker's end
        return _result(task, "error", None, f"{type(exc).__name__}: {exc}", t0)
