"""The matrix's types (all frozen, all picklable) and the :class:`Backend` protocol.

A *cell* is one model × GPU × flag set; each of the matrix's arms boots it once (a
:class:`BootTask` -> a :class:`TaskResult`), dryboot plans it once (the reserved arm
:data:`PLAN_ARM`), and the cell's :class:`CellResult` compares the first two arms line by line
(:func:`dryboot.boot.compare.differences`, as ``profiles --compare --boot`` does) and checks the
cell's :class:`Expectation`. Field names are the contract with the report and Ray modules
(MATRIX-SPEC.md); JSON documents use the same names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from dryboot.boot.compare import Figures

#: The arm name under which dryboot's own plan of a cell is reported (no user arm may take it).
PLAN_ARM = "dryboot"

#: :attr:`TaskResult.status` values.
TASK_STATUSES = ("ok", "refused", "error")
#: :attr:`CellResult.status` values.
CELL_STATUSES = ("met", "failed", "error")
#: :attr:`CellResult.agreement` values.
AGREEMENTS = ("identical", "differs", "both refuse", "error")


@dataclass(frozen=True)
class Arm:
    """The code one column of the matrix boots.

    :param name: the arm's name in MATRIX.toml (``[arms.NAME]``).
    :param kind: ``"tree"`` (a source tree or scratch tree: a directory holding ``vllm/``),
        ``"site-packages"`` (an installed ``site-packages/vllm``), ``"release"`` (an upstream
        release by version: that release's boot environment's installed vllm), ``"series"`` (a
        patch series applied to a pristine release, as ``profiles`` arms), or ``"policy"``
        (dryboot's modelled policies: planned, not booted).
    :param tree: the directory put first on the boot child's ``sys.path`` (kinds tree,
        site-packages, release; for ``series`` the scratch tree once built), else ``None``.
    :param python: the boot environment's interpreter (``None`` for ``policy``).
    :param version: the vLLM release (``"0.28.0"``) the arm is, or is based on.
    :param series: the patch series directory (kind ``series``).
    :param grouping: dryboot's grouping policy (kind ``policy``; ``None``: the release's own).
    :param unification: dryboot's unification policy (kind ``policy``; ``None``: the release's own).
    """

    name: str
    kind: str
    tree: str | None = None
    python: str | None = None
    version: str | None = None
    series: str | None = None
    grouping: str | None = None
    unification: str | None = None


@dataclass(frozen=True)
class FlagSet:
    """One row group of the matrix: the ``vllm serve`` flags every cell of it passes.

    :param name: the flag set's name (a profile's name, or the ``[flags.NAME]`` key).
    :param argv: vLLM flags as ``vllm serve`` takes them (``("--max-model-len", "8192", ...)``);
        no ``--model`` and no positional model: the model is the cell's.
    :param source: where it came from: ``"profile"`` (a profiles-format table) or ``"serve"``
        (a pasted ``vllm serve`` line).
    :param expect: the expectation for every cell of this flag set (``None``: none stated).
    """

    name: str
    argv: tuple[str, ...]
    source: str = "profile"
    expect: Expectation | None = None


@dataclass(frozen=True)
class ModelRef:
    """One model row.

    :param name: the name cells use (the MATRIX.toml key, or the config's file/folder name).
    :param path: a directory holding ``config.json`` (a checkpoint folder, an HF cache snapshot)
        or a ``config.json`` file; resolved, absolute.
    :param expect: the expectation for every cell of this model (``None``: none stated).
    """

    name: str
    path: str
    expect: Expectation | None = None


@dataclass(frozen=True)
class Expectation:
    """What the user states a cell does.

    :param kind: ``"identical"`` (every arm boots and the first two arms' figures are equal),
        ``"differs"`` (the first two arms' figures differ, or one starts and the other refuses),
        ``"tokens>="`` (every arm's GPU KV cache tokens at least :attr:`tokens`), or
        ``"refused"`` (every arm refuses the inputs, as vLLM would).
    :param tokens: the bound for ``"tokens>="`` (tokens), else ``None``.
    :param text: the expectation as written (``"tokens >= 60000"``).
    """

    kind: str
    tokens: int | None = None
    text: str = ""


@dataclass(frozen=True)
class BootTask:
    """One arm's engine start of one cell (or dryboot's plan of it: arm :data:`PLAN_ARM`);
    picklable, self-contained: a worker in any process needs nothing else.

    :param cell_id: ``"<model>|<gpu>|<flag set>"``.
    :param arm: the arm's name.
    :param env_key: ``(python, tree import root or "dryboot:<policy>", gpu text)``: tasks with
        the same key share one warm environment.
    :param model: a directory holding ``config.json`` (what ``BootSession.boot`` takes).
    :param argv: vLLM flags.
    :param gpu: the ``--gpu`` text (a table name or ``smXY:SIZE``).
    :param cache_key: sha256 (hex) of every input (tree digest, config bytes, flags, GPU, dryboot
        version).
    :param timeout_s: seconds this engine start may take before it is an ``"error"``.
    :param version: the release dryboot models for plan and policy tasks (``"0.28.0"``).
    :param grouping: dryboot's grouping policy for a policy task (``None``: the release's own).
    :param unification: dryboot's unification policy for a policy task (``None``: the release's own).
    """

    cell_id: str
    arm: str
    env_key: tuple[str, str, str]
    model: str
    argv: tuple[str, ...]
    gpu: str
    cache_key: str
    timeout_s: float
    version: str | None = None
    grouping: str | None = None
    unification: str | None = None


@dataclass(frozen=True)
class TaskResult:
    """One task's answer.

    :param status: ``"ok"``, ``"refused"`` (the arm refuses the inputs, as vLLM would), or
        ``"error"`` (a crash, a timeout, a tree that does not import, a worker that died twice).
    :param tokens: GPU KV cache size in tokens (``None`` unless ``ok``).
    :param block_size: tokens per KV block.
    :param num_blocks: KV blocks.
    :param max_model_len: tokens.
    :param lines: the KV lines the arm logged (for the plan and policy arms dryboot's plan lines).
    :param reason: vLLM's refusal or the error, one line (``None`` when ``ok``).
    :param seconds: wall seconds of this engine start (the cached run's, for a cached result).
    :param cached: the result came from the cache.
    :param worker: ``"pid@host"`` of the process that ran it.
    :param figures: every compared figure (:class:`dryboot.boot.compare.Figures`), ``None``
        for an ``"error"``.
    """

    cell_id: str
    arm: str
    status: str
    tokens: int | None
    block_size: int | None
    num_blocks: int | None
    max_model_len: int | None
    lines: tuple[str, ...]
    reason: str | None
    seconds: float
    cached: bool
    worker: str
    figures: Figures | None = field(default=None, compare=False)

    def as_json(self) -> dict[str, Any]:
        """This result as the ``--json`` document writes it (``figures`` as a dict or ``null``)."""
        doc = asdict(self)
        doc["lines"] = list(self.lines)
        if self.figures is not None:
            doc["figures"]["groups"] = [list(g) for g in self.figures.groups]
            doc["figures"]["kv_log"] = list(self.figures.kv_log)
        return doc


@dataclass(frozen=True)
class CellResult:
    """One model × GPU × flag set.

    :param id: ``"<model>|<gpu>|<flag set>"``.
    :param plan: dryboot's own plan of the cell (arm :data:`PLAN_ARM`: its tokens, block size,
        and verdict as ``status``/``reason``).
    :param arms: each arm's result, in the matrix's arm order.
    :param agreement: between the first two arms: ``"identical"``, ``"differs"``,
        ``"both refuse"``, or ``"error"`` (an arm's task failed).
    :param changes: each figure that differs (``"tokens: a X, b Y"``), empty when none.
    :param diff: unified diff of the first two arms' KV lines (empty when equal).
    :param expectation: the expectation's text (``None``: none stated).
    :param status: ``"met"``, ``"failed"`` (the expectation is not met, or with none stated an
        arm refuses or the arms differ), or ``"error"``.
    :param why: one line saying why the status is not ``"met"`` (``None`` when met).
    """

    id: str
    model: str
    gpu: str
    flag_set: str
    plan: TaskResult
    arms: dict[str, TaskResult]
    agreement: str
    diff: tuple[str, ...]
    expectation: str | None
    status: str
    changes: tuple[str, ...] = ()
    why: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "model": self.model,
            "gpu": self.gpu,
            "flag_set": self.flag_set,
            "plan": self.plan.as_json(),
            "arms": {k: v.as_json() for k, v in self.arms.items()},
            "agreement": self.agreement,
            "changes": list(self.changes),
            "diff": list(self.diff),
            "expectation": self.expectation,
            "status": self.status,
            "why": self.why,
        }


@dataclass(frozen=True)
class Matrix:
    """A parsed MATRIX.toml: cells are every model × gpu × flag set, each booted by every arm.

    :param source: the file, as named on the command line.
    :param expectations: per-cell expectations keyed by cell id (the most specific wins: cell,
        then flag set, then model, then :attr:`expect`).
    :param expect: the matrix-wide expectation (``None``: none).
    :param timeout_s: seconds one engine start may take.
    :param vllm_version: the release dryboot's own plan of each cell models.
    """

    source: str
    models: tuple[ModelRef, ...]
    gpus: tuple[str, ...]
    flag_sets: tuple[FlagSet, ...]
    arms: tuple[Arm, ...]
    expectations: dict[str, Expectation] = field(default_factory=dict)
    expect: Expectation | None = None
    timeout_s: float = 300.0
    vllm_version: str = "0.28.0"

    def expectation(self, cell_id: str) -> Expectation | None:
        """The cell's expectation: its own, its flag set's, GPU's or model's, else the matrix's."""
        return self.expectations.get(cell_id, self.expect)


@dataclass(frozen=True)
class MatrixResult:
    """The whole run.

    :param cells: in model, gpu, flag set order.
    :param exit_code: 0 every cell met; 1 a cell failed or is in error (named in ``cells``);
        2 bad input (never produced here: a bad input raises before a run).
    :param seconds: wall seconds of the run.
    :param cache_hits: tasks answered from the cache.
    """

    cells: tuple[CellResult, ...]
    models: tuple[str, ...]
    gpus: tuple[str, ...]
    flag_sets: tuple[str, ...]
    arms: tuple[str, ...]
    exit_code: int
    seconds: float
    cache_hits: int
    source: str = ""

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` document (same field names as these classes)."""
        return {
            "source": self.source,
            "models": list(self.models),
            "gpus": list(self.gpus),
            "flag_sets": list(self.flag_sets),
            "arms": list(self.arms),
            "exit_code": self.exit_code,
            "seconds": self.seconds,
            "cache_hits": self.cache_hits,
            "cells": [c.as_json() for c in self.cells],
        }


class Backend(Protocol):
    """Where tasks run: :class:`dryboot.matrix.local.LocalBackend` (a process pool) or
    ``dryboot.matrix.ray_backend.RayBackend`` (a Ray cluster). Each worker runs
    :func:`dryboot.matrix.worker.run_task`."""

    def run(self, tasks: Sequence[BootTask], done: Callable[[TaskResult], None]) -> None:
        """Run every task (in any order, any placement); call ``done`` once per task, from the
        calling thread; a task whose worker dies is retried once elsewhere, then reported as
        status "error" with the reason. Never raises for one task's failure."""
        ...

    def close(self) -> None:
        """Release the workers (their warm environments end)."""
        ...
