"""``dryboot matrix --ray auto|ADDRESS``: the matrix's tasks on a Ray cluster.

:class:`RayBackend` attaches to a running cluster (``ray start --head`` on one machine, or a
real cluster: ``"auto"`` finds the local one, as ``ray.init(address="auto")`` does) and places
*actors* on every alive node, one per CPU of the node (``workers_per_node`` to choose). An actor is
a long-lived process that runs :func:`dryboot.matrix.worker.run_task`, so the boot sessions it
opened stay warm across its tasks: a cell on a tree it already imported costs one engine start.
The driver hands each actor tasks of the environment it ran last (tasks are grouped by boot
interpreter and tree), two at a time so an actor never waits for the next one.

What travels (Ray's ``runtime_env``, uploaded once, each node unpacking it once):

- dryboot itself (``py_modules``): the actors run the driver's dryboot, whatever a node has
  installed (a node needs Ray and dryboot's dependencies: ``pip install 'dryboot[ray]'``).
- a tree a node does not hold: before the actors start, a probe per node compares each tree's
  fingerprint (the path and size of every file under ``vllm/``) at the same path there. On one
  machine (or a shared file system) the path is the tree, and nothing is shipped. A node without
  it gets the tree's ``vllm`` package in its actors' ``runtime_env`` (``py_modules``: a matrix has
  several trees, and a ``working_dir`` holds one; compiled ``*.so`` files, ``__pycache__`` and
  ``.git`` are left out: the boot fakes the compiled extensions), and the actor finds its unpacked
  copy by the same fingerprint. ``ship="always"`` ships every tree (a test of the path on one
  machine); ``ship="never"`` ships none.
- a release's boot environment is not shipped: an actor whose node lacks the interpreter builds
  that release's environment there once (``dryboot boot-env``'s :func:`dryboot.boot.env.build_env`),
  and an arm that is a release's installed vllm boots the node's own copy of it.
- the driver's ``DRYBOOT_*`` environment variables.

Faults: an actor that dies (its process killed, its node lost) fails its in-flight tasks; each is
retried once on another actor, alone there (so that a second death is its own, not a neighbour's
in the same actor's queue), then reported as status ``"error"`` naming the death (Ray restarts a
dead actor once, cold). A task that runs past its ``timeout_s`` (and a minute's grace for
the engine start's own timeout) is an ``"error"``, its actor restarted. The results do not depend
on order or placement: a task's result is a function of the task (only ``worker`` and ``seconds``
say where and how long it ran).

``import ray`` happens only here, and only when a backend is made: without Ray the one line is
``--ray: Ray is not installed: pip install 'dryboot[ray]'`` (:class:`InputError`, exit 2).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from dryboot.errors import InputError
from dryboot.matrix.model import BootTask, TaskResult

#: Left out of a shipped tree (and of its fingerprint): compiled extensions (the boot fakes them),
#: byte code, version control.
SHIP_EXCLUDES = ("*.so", "__pycache__", "*.pyc", ".git")
#: Seconds a task may run past its ``timeout_s`` before the driver ends its actor.
GRACE_S = 60.0
#: Tasks in flight per actor (the next one waits in the actor's queue, no round trip between).
PER_ACTOR = 2


def _ray() -> Any:
    """The ``ray`` module, or the one-line refusal."""
    try:
        # at call: Ray is an optional extra (dryboot[ray]); only --ray loads it
        import ray
    except ImportError:
        raise InputError("--ray", None, "Ray is not installed: pip install 'dryboot[ray]'") from None
    return ray


def tree_fingerprint(root: str) -> str | None:
    """sha256 (hex) of the sorted relative paths and sizes of the files under ``root/vllm``
    (:data:`SHIP_EXCLUDES` left out), or ``None`` when ``root`` holds no ``vllm/__init__.py``.
    Cheap (no file is read): it tells a copy of a tree from another tree, not a byte changed in
    place; the matrix's cache key, which hashes the files, is what notices that."""
    pkg = Path(root) / "vllm"
    if not (pkg / "__init__.py").is_file():
        return None
    h = hashlib.sha256()
    entries = []
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", ".git"))
        for name in filenames:
            if name.endswith((".so", ".pyc")):
                continue
            path = Path(dirpath) / name
            try:
                size = path.stat().st_size
            except OSError:
                continue
            entries.append(f"{path.relative_to(pkg).as_posix()}\0{size}")
    for entry in sorted(entries):
        h.update(entry.encode("utf-8", "surrogateescape") + b"\n")
    return h.hexdigest()


def _probe(roots: Sequence[str]) -> dict[str, str | None]:
    """On a node: each tree root's fingerprint at that path there."""
    return {root: tree_fingerprint(root) for root in roots}


class Worker:
    """The actor's class (plain Python: Ray wraps it): runs tasks in this process so that
    :mod:`dryboot.matrix.worker`'s warm sessions persist between them.

    :param trees: each tree the driver boots, driver path -> fingerprint; a tree whose path on
        this node has another fingerprint (or none) is looked for among the shipped copies.
    :param releases: tree roots that are a release's installed vllm, driver path -> release.
    :param shipped: tree roots shipped to this node: their copy is looked for first.
    """

    def __init__(self, trees: dict[str, str | None], releases: dict[str, str], shipped: Sequence[str] = ()) -> None:
        self.trees = trees
        self.releases = releases
        self.shipped = set(shipped)
        self._roots: dict[str, str] = {}
        self._pythons: dict[str, str] = {}

    def name(self) -> str:
        # at call: runs in the Ray actor's process, which loads the worker there
        from dryboot.matrix.worker import worker_name

        return worker_name()

    def _python(self, python: str, version: str | None) -> str:
        if python in self._pythons:
            return self._pythons[python]
        local = python
        if not Path(python).is_file():
            if version is None:
                raise InputError(python, None, "this boot environment is not on the Ray node, and no release is named")
            # at call: only a node that lacks the environment (or a release arm) needs it
            from dryboot.boot.env import build_env

            local = build_env(version).python
        self._pythons[python] = local
        return local

    def _root(self, root: str, python: str) -> str:
        if root in self._roots:
            return self._roots[root]
        if root in self.releases:
            # at call: only a node that lacks the environment (or a release arm) needs it
            from dryboot.boot.env import installed_vllm

            local = str(installed_vllm(python).parent)
        else:
            want = self.trees.get(root)
            local = root
            if want is not None and (root in self.shipped or tree_fingerprint(root) != want):
                found = [p for p in sys.path if p and tree_fingerprint(p) == want]
                if not found:
                    raise InputError(root, None, "this tree is neither on the Ray node nor shipped to it")
                local = found[0]
        self._roots[root] = local
        return local

    def run(self, task: BootTask) -> TaskResult:
        """:func:`dryboot.matrix.worker.run_task` on this node's copy of the task's tree."""
        # at call: runs in the Ray actor's process, which loads the worker there
        from dryboot.matrix.worker import _result, run_task

        python, root, gpu = task.env_key
        if not root.startswith("dryboot:"):
            try:
                release = self.releases.get(root) or task.version
                python = self._python(python, release)
                root = self._root(root, python)
            except InputError as exc:
                return _result(task, "error", None, exc.line(), time.perf_counter())
            task = dataclasses.replace(task, env_key=(python, root, gpu))
        return run_task(task)

    def close(self) -> None:
        """End this actor's warm sessions (before the actor is killed)."""
        # at call: runs in the Ray actor's process, which loads the worker there
        from dryboot.matrix.worker import close_sessions

        close_sessions()


@dataclasses.dataclass
class _Actor:
    handle: Any
    node: str
    runs: int = 0
    deaths: int = 0
    env: tuple[str, str] | None = None
    inflight: int = 0
    dead: bool = False
    #: runs a task that was in flight on an actor that died: alone, so that a second death is its own
    alone: bool = False
    #: died, and Ray restarts it: no task until its health probe answers
    recovering: bool = False

    def ready(self) -> bool:
        """Takes tasks now."""
        return not self.dead and not self.recovering


def _dryboot_dir() -> str:
    # at call: the package's own folder, shipped to the nodes as py_modules
    import dryboot

    return str(Path(dryboot.__file__).resolve().parent)


class RayBackend:
    """The :class:`~dryboot.matrix.model.Backend` on a Ray cluster.

    :param address: ``"auto"`` (the cluster this machine runs or ``RAY_ADDRESS`` names) or a
        Ray address (``HOST:PORT``, ``ray://HOST:10001``).
    :param workers_per_node: actors per node (default: the node's CPUs).
    :param ship: ``"auto"`` (trees a node lacks), ``"always"`` or ``"never"``.
    :raises InputError: Ray is not installed, the cluster cannot be reached, or it has no
        alive node with a CPU.
    """

    def __init__(self, address: str, workers_per_node: int | None = None, ship: str = "auto") -> None:
        self.ray = _ray()
        if ship not in ("auto", "always", "never"):
            raise InputError("ship", ship, "expected auto, always or never")
        self.address = address
        self.workers_per_node = workers_per_node
        self.ship = ship
        self._actors: list[_Actor] = []
        self._key: tuple[tuple[str, str | None], ...] | None = None
        #: what was shipped where: node id -> the tree roots shipped to it
        self.shipped: dict[str, list[str]] = {}
        self._owns = not self.ray.is_initialized()
        #: the trees this job ships (Ray uploads local directories only with the job's runtime_env)
        self._job_trees: tuple[str, ...] = ()
        if self._owns:
            self._init(())
        self.nodes = [
            n for n in self.ray.nodes() if n.get("Alive") and float(n.get("Resources", {}).get("CPU", 0)) >= 1
        ]
        if not self.nodes:
            self.close()
            raise InputError("--ray", address, "the cluster has no alive node with a CPU")

    def _init(self, trees: tuple[str, ...]) -> None:
        """Attach with the job's runtime_env: dryboot and ``trees``' vllm packages as
        ``py_modules``, the ``DRYBOOT_*`` variables."""
        env_vars = {k: v for k, v in os.environ.items() if k.startswith("DRYBOOT_")}
        runtime_env: dict[str, Any] = {
            "py_modules": [_dryboot_dir(), *(str(Path(r) / "vllm") for r in trees)],
            "env_vars": env_vars,
        }
        if trees:
            runtime_env["excludes"] = list(SHIP_EXCLUDES)
        try:
            self.ray.init(
                address=self.address,
                runtime_env=runtime_env,
                logging_level="WARNING",
                log_to_driver=False,
                configure_logging=False,
            )
        except Exception as exc:  # ConnectionError, ValueError: no cluster at that address
            line = f"cannot attach to a Ray cluster: {exc}".splitlines()[0]
            raise InputError("--ray", self.address, line) from None
        self._job_trees = trees

    # -- actors -----------------------------------------------------------------------------
    def _start(self, tasks: Sequence[BootTask]) -> None:
        """Actors on every node for these tasks' trees (kept while the trees are the same)."""
        ray = self.ray
        # at call: Ray is an optional extra (dryboot[ray]); only --ray loads it
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        # at call: only a node that lacks the environment (or a release arm) needs it
        from dryboot.boot.env import installed_vllm
        from dryboot.boot.session import release_of, resolve_tree

        roots = sorted({t.env_key[1] for t in tasks if not t.env_key[1].startswith("dryboot:")})
        releases: dict[str, str] = {}
        for t in tasks:
            python, root, _ = t.env_key
            if root.startswith("dryboot:") or root in releases:
                continue
            try:
                if Path(python).is_file() and str(installed_vllm(python).parent) == str(Path(root).resolve()):
                    version = resolve_tree(root).version
                    if version is not None:
                        releases[root] = release_of(version, root)
            except InputError:
                continue
        trees = {r: tree_fingerprint(r) for r in roots if r not in releases}
        key = tuple(sorted(trees.items())) + tuple(sorted(releases.items()))
        if self._key == key and any(not a.dead for a in self._actors):
            return
        self._stop_actors()
        found: dict[str, dict[str, str | None]] = {n["NodeID"]: {} for n in self.nodes}
        if trees and self.ship == "auto":  # which node holds which tree, at the driver's path
            probe = ray.remote(num_cpus=0)(_probe)
            on_node = {
                n["NodeID"]: probe.options(
                    scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
                ).remote(list(trees))
                for n in self.nodes
            }
            for node, ref in on_node.items():
                try:
                    found[node] = ray.get(ref, timeout=300)
                except Exception as exc:  # a node lost, a probe that cannot start
                    why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    raise InputError("--ray", self.address, f"node {node[:12]} did not answer: {why}") from None
        self.shipped = {
            n["NodeID"]: [
                r
                for r, fp in trees.items()
                if fp is not None
                and self.ship != "never"
                and (self.ship == "always" or found[n["NodeID"]].get(r) != fp)
            ]
            for n in self.nodes
        }
        ship = tuple(sorted({r for rs in self.shipped.values() for r in rs}))
        if not set(ship) <= set(self._job_trees):
            # Ray uploads a local directory only with the job's runtime_env: attach again with it
            if not self._owns:
                raise InputError("--ray", self.address, f"cannot ship {ship[0]}: Ray was initialized before dryboot")
            ray.shutdown()
            self._init(ship)
        actor_cls = ray.remote(num_cpus=1, max_restarts=1, max_task_retries=0)(Worker)
        for n in self.nodes:
            node = n["NodeID"]
            for _ in range(self.workers_per_node or int(float(n["Resources"]["CPU"]))):
                strategy = NodeAffinitySchedulingStrategy(node, soft=False)
                handle = actor_cls.options(scheduling_strategy=strategy).remote(trees, releases, self.shipped[node])
                self._actors.append(_Actor(handle, node))
        self._key = key

    def _stop_actors(self) -> None:
        ray = self.ray
        live = [a for a in self._actors if not a.dead]
        refs = [a.handle.close.remote() for a in live]
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=30)
        for a in self._actors:
            try:
                ray.kill(a.handle, no_restart=True)
            except Exception:
                continue
        self._actors = []
        self._key = None

    # -- Backend ----------------------------------------------------------------------------
    def run(self, tasks: Sequence[BootTask], done: Callable[[TaskResult], None]) -> None:
        """Every task on the cluster; ``done`` once per task, from this thread."""
        if not tasks:
            return
        ray = self.ray
        # at call: Ray is an optional extra (dryboot[ray]); only --ray loads it
        from ray.exceptions import GetTimeoutError, RayActorError

        # at call: runs in the Ray actor's process, which loads the worker there
        from dryboot.matrix.worker import _result

        self._start(tasks)
        groups: dict[tuple[str, str], collections.deque[BootTask]] = collections.defaultdict(collections.deque)
        for t in tasks:
            groups[(t.env_key[0], t.env_key[1])].append(t)
        avoid: dict[tuple[str, str], set[int]] = {}
        deaths: dict[tuple[str, str], int] = {}
        inflight: dict[Any, tuple[int, BootTask, float, int]] = {}  # -> actor, task, sent, its deaths
        probes: dict[Any, int] = {}  # a restarting actor's health probe -> the actor
        timed_out: set[Any] = set()

        def next_task(i: int) -> BootTask | None:
            actor = self._actors[i]
            if actor.alone:
                return None
            order = sorted(groups, key=lambda k: (k != actor.env, -len(groups[k])))
            alive = sum(1 for a in self._actors if not a.dead)
            for k in order:
                q = groups[k]
                for _ in range(len(q)):
                    t = q.popleft()
                    key = (t.cell_id, t.arm)
                    suspect = key in deaths
                    if (i in avoid.get(key, ()) and alive > 1) or (suspect and actor.inflight):
                        q.append(t)
                        continue
                    actor.alone = suspect
                    if not q:
                        del groups[k]
                    actor.env = k
                    return t
            return None

        def fail(t: BootTask, reason: str) -> None:
            done(_result(t, "error", None, reason, time.perf_counter()))

        while groups or inflight:
            if not any(not a.dead for a in self._actors):  # what is in flight still answers (an error)
                for q in groups.values():
                    for t in q:
                        fail(t, "every Ray actor died")
                groups.clear()
                if not inflight:
                    break
            for i, actor in enumerate(self._actors):
                while actor.ready() and actor.inflight < PER_ACTOR:
                    nxt = next_task(i)
                    if nxt is None:
                        break
                    inflight[actor.handle.run.remote(nxt)] = (i, nxt, time.monotonic(), actor.deaths)
                    actor.inflight += 1
            if not inflight and not probes:  # no actor would take what is left (named, not a hang)
                for q in groups.values():
                    for t in q:
                        fail(t, "no Ray actor could take the task")
                groups.clear()
                break
            ready, _ = ray.wait([*inflight, *probes], num_returns=1, timeout=1.0)
            for ref in ready:
                if ref in probes:
                    self._probed(ref, probes)
                    continue
                i, t, _started, sent_after = inflight.pop(ref)
                actor = self._actors[i]
                actor.inflight -= 1
                if actor.inflight == 0:
                    actor.alone = False
                if ref in timed_out:
                    timed_out.discard(ref)
                    continue
                try:
                    result = ray.get(ref, timeout=60)
                except RayActorError as exc:
                    # ActorUnavailableError too: Ray says so first when the actor's process is
                    # killed under a task it ran (the task "may or may not have been executed"),
                    # before it learns of the death; counting it as nothing re-ran a killer among
                    # other tasks, until every actor's restart was spent under its neighbours
                    key = (t.cell_id, t.arm)
                    deaths[key] = deaths.get(key, 0) + 1
                    # one death, whatever was in flight: a task sent before the last death seen
                    # (``actor.deaths`` then) is that death again, never a second one
                    if sent_after == actor.deaths and not actor.dead:
                        actor.deaths += 1
                        actor.env = None
                        if actor.deaths > 1:
                            actor.dead = True  # Ray restarts an actor once
                        else:
                            actor.recovering = True
                            probes[actor.handle.name.remote()] = i
                    why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    if deaths[key] >= 2:
                        fail(t, f"worker died twice (Ray actor: {why})")
                    else:
                        avoid.setdefault(key, set()).add(i)
                        groups[(t.env_key[0], t.env_key[1])].appendleft(t)
                except GetTimeoutError:
                    fail(t, "the Ray actor did not return the result")
                except Exception as exc:  # the task raised in the actor: its own failure
                    fail(t, f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1:]}")
                else:
                    done(result)
            now = time.monotonic()
            for ref, (i, t, started, _) in list(inflight.items()):
                if ref not in timed_out and now - started > t.timeout_s + GRACE_S:
                    timed_out.add(ref)
                    fail(t, f"timed out: the engine start took more than {t.timeout_s:g} s")
                    self.ray.kill(self._actors[i].handle, no_restart=False)

    def _probed(self, ref: Any, probes: dict[Any, int]) -> None:
        """A restarting actor's health probe answered: the actor takes tasks again, is probed
        again (still restarting), or is dead."""
        # at call: Ray is an optional extra (dryboot[ray]); only --ray loads it
        from ray.exceptions import ActorUnavailableError

        i = probes.pop(ref)
        actor = self._actors[i]
        try:
            self.ray.get(ref, timeout=60)
        except ActorUnavailableError:
            time.sleep(0.5)
            probes[actor.handle.name.remote()] = i
        except Exception:  # the restart failed: Ray gives it up
            actor.dead = True
            actor.recovering = False
        else:
            actor.recovering = False

    def close(self) -> None:
        """Stop the actors (their warm sessions end) and detach from the cluster."""
        with contextlib.suppress(Exception):
            self._stop_actors()
        if self._owns and self.ray.is_initialized():
            self.ray.shutdown()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def local_head(cpus: int = 2, object_store_bytes: int = 200_000_000, timeout_s: float = 120.0) -> Iterator[str]:
    """A one-machine Ray cluster for tests and benches: ``ray start --head`` on loopback with
    ``cpus`` CPUs (so ``cpus`` actors), ``object_store_bytes`` of object store, no dashboard, its
    ports picked free, in a temporary directory of its own; yields its address (``127.0.0.1:PORT``).
    ``--block`` keeps the head and its processes in one process group, which the exit ends
    (SIGTERM, then SIGKILL): this cluster's processes only, never another Ray on the machine.

    :raises InputError: Ray is not installed, or the head did not start (its log's tail).
    """
    _ray()
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    port = _free_port()
    ports = {
        "--port": port,
        "--dashboard-agent-listen-port": _free_port(),
        "--dashboard-agent-grpc-port": _free_port(),
        "--metrics-export-port": _free_port(),
        "--runtime-env-agent-port": _free_port(),
    }
    beside = Path(sys.executable).parent / "ray"
    cli = str(beside) if beside.is_file() else (shutil.which("ray") or "ray")
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    env.pop("RAY_ADDRESS", None)
    log_path = Path(temp) / "head.log"
    with open(log_path, "w") as log:
        head = subprocess.Popen(
            [
                cli,
                "start",
                "--head",
                "--node-ip-address=127.0.0.1",
                *(f"{k}={v}" for k, v in ports.items()),
                f"--num-cpus={cpus}",
                "--include-dashboard=false",
                f"--object-store-memory={object_store_bytes}",
                "--disable-usage-stats",
                f"--temp-dir={temp}",
                "--block",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + timeout_s
        while "Ray runtime started" not in log_path.read_text(errors="replace"):
            if head.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
                raise InputError("ray start --head", None, f"the head did not start: {tail[0]}")
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(head.pid, sig)
            except ProcessLookupError:
                break
            with suppress(subprocess.TimeoutExpired):
                head.wait(timeout=wait)
        with suppress(ProcessLookupError):  # what the head's children left in its group
            os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)
