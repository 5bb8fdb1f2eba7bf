"""The local backend: a pool of worker processes (spawned), each keeping its warm environments.

Tasks are grouped by :attr:`~dryboot.matrix.model.BootTask.env_key`; an idle worker takes the
next task of the environment it last ran, else a group nobody works on, else (so no core idles
on a long queue) a share of the largest group that holds at least ``steal_min`` tasks. One task
at a time per worker, so the parent always knows what a worker holds: a worker that dies
(killed, out of memory) loses nothing -- its task is retried once in another (or a fresh)
process, then reported as ``"error"``; a task past its deadline (its timeout, plus vLLM's import
allowance the first time a worker meets its environment, plus ``grace_s``) has its worker killed
and is reported ``"error"``, named, without a retry. The pool outlives :meth:`LocalBackend.run`,
so a second run finds its workers warm.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from dryboot.boot.session import IMPORT_TIMEOUT
from dryboot.matrix.model import BootTask, TaskResult


def _serve(conn: Connection) -> None:
    """A worker's loop: receive a task, send its result, until ``None`` or the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when the pool ends
    # at call: the worker's modules load in the worker process, not in the parent's import
    from dryboot.matrix.worker import close_sessions, run_task

    try:
        while True:
            try:
                task = conn.recv()
            except EOFError:
                break
            if task is None:
                break
            conn.send(run_task(task))
    finally:
        close_sessions()


def error_result(task: BootTask, reason: str, worker: str = "") -> TaskResult:
    """A task that produced no answer (its worker died twice, or it timed out)."""
    return TaskResult(task.cell_id, task.arm, "error", None, None, None, None, (), reason, 0.0, False, worker)


@dataclass
class _Worker:
    proc: Any
    conn: Connection
    env: tuple[str, str, str] | None = None
    warm: set[tuple[str, str, str]] = field(default_factory=set)
    task: BootTask | None = None
    deadline: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.proc.pid}@local"


class LocalBackend:
    """A process pool on this machine (see the module docstring).

    :param workers: processes (default ``os.cpu_count()``).
    :param grace_s: seconds allowed past a task's own timeout before its worker is killed.
    :param steal_min: an idle worker joins a tree another worker runs only while at least this many
        of its tasks wait (a warm engine start is ~0.2-1.5 s, vLLM's import ~7-17 s).
    """

    def __init__(self, workers: int | None = None, grace_s: float = 30.0, steal_min: int = 24) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.grace_s = grace_s
        self.steal_min = steal_min
        self._ctx = mp.get_context("spawn")
        self._pool: list[_Worker] = []

    def _start(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_serve, args=(child,), daemon=True, name="dryboot-matrix-worker")
        proc.start()
        child.close()
        return _Worker(proc, parent)

    def _end(self, w: _Worker) -> None:
        if w.proc.is_alive():
            w.proc.kill()
        w.proc.join(5)
        w.conn.close()

    def run(self, tasks: Sequence[BootTask], done: Callable[[TaskResult], None]) -> None:
        """Run ``tasks`` on the pool; ``done`` is called once per task from this thread."""
        groups: dict[tuple[str, str, str], deque[BootTask]] = {}
        for t in tasks:
            groups.setdefault(t.env_key, deque()).append(t)
        tries: dict[tuple[str, str], int] = {}
        left = len(tasks)
        while len(self._pool) < min(self.workers, max(left, 1)):
            self._pool.append(self._start())

        def take(w: _Worker) -> BootTask | None:
            if w.env is not None and groups.get(w.env):
                return groups[w.env].popleft()
            busy = {x.env for x in self._pool if x.task is not None}
            free = [k for k, q in groups.items() if q and k not in busy]
            # a share of a tree another worker runs costs this one vLLM's import: worth it only
            # for a long queue (a modelled arm's or dryboot's plan's tasks import nothing)
            pool = free or [
                k
                for k, q in groups.items()
                if q and (len(q) >= self.steal_min or k[1].startswith("dryboot:") or k in w.warm)
            ]
            if not pool:
                return None
            key = max(pool, key=lambda k: (k in w.warm, len(groups[k])))
            w.env = key
            return groups[key].popleft()

        def dispatch() -> None:
            for i, w in enumerate(self._pool):
                if w.task is not None:
                    continue
                if not w.proc.is_alive():
                    self._end(w)
                    w = self._pool[i] = self._start()
                t = take(w)
                if t is None:
                    continue
                allowance = 0.0 if t.env_key in w.warm or t.env_key[1].startswith("dryboot:") else IMPORT_TIMEOUT
                w.task, w.deadline = t, time.monotonic() + t.timeout_s + allowance + self.grace_s
                with contextlib.suppress(OSError, ValueError):  # a dead worker: found below by its sentinel
                    w.conn.send(t)

        def finish(res: TaskResult) -> None:
            nonlocal left
            left -= 1
            done(res)

        dispatch()
        while left > 0:
            busy = [w for w in self._pool if w.task is not None]
            if not busy:
                dispatch()
                if not any(w.task is not None for w in self._pool):
                    break  # nothing left to run (cannot happen: every task is queued or busy)
                continue
            now = time.monotonic()
            timeout = max(0.0, min(w.deadline for w in busy) - now)
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=min(timeout, 5.0))
            for w in busy:
                task = w.task
                assert task is not None
                if w.conn in ready:
                    try:
                        res = w.conn.recv()
                    except (EOFError, OSError):
                        res = None
                    if res is not None:
                        w.task = None
                        w.warm.add(task.env_key)
                        finish(res)
                        continue
                if not w.proc.is_alive() or w.proc.sentinel in ready:
                    w.task = None
                    code = w.proc.exitcode
                    name = w.name
                    self._end(w)
                    key = (task.cell_id, task.arm)
                    tries[key] = tries.get(key, 0) + 1
                    if tries[key] < 2:
                        groups.setdefault(task.env_key, deque()).appendleft(task)
                    else:
                        finish(error_result(task, f"the worker process died twice (exit {code}) running it", name))
                    continue
                if time.monotonic() > w.deadline:
                    w.task = None
                    name = w.name
                    self._end(w)
                    finish(error_result(task, f"timed out: no answer within {task.timeout_s:g} s", name))
            dispatch()

    def close(self) -> None:
        """End every worker (their warm sessions end with them)."""
        for w in self._pool:
            with contextlib.suppress(OSError, ValueError):
                w.conn.send(None)
        for w in self._pool:
            w.proc.join(30)
            self._end(w)
        self._pool = []

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
