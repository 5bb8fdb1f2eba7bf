"""The typed entry points of the patch engine: apply a series to a tree, read a tree's state
under a series, swap one patch for another. Nothing is printed: each returns a result the caller
renders (the ``dryboot series`` / ``swap`` commands do, in :mod:`dryboot.cli.patch_report`).

``apply_series(directory, target)`` is the call for "apply this series to this tree,
transactionally, and tell me what happened"::

    from dryboot.patching.stack import Options, apply_series

    res = apply_series("patches/", "site-packages/vllm", Options(fuzz=0))
    if not res.ok:                      # nothing was written
        step = res.run.steps[-1]        # the patch that failed, with per-hunk evidence
    res.applied(), res.already()        # names of the patches applied now / found applied

Each writing call holds an advisory lock on the target for its whole transaction (a second
writer waits, see :func:`~dryboot.patching.transaction.locked`), first rolls back an interrupted
transaction found there (its journal checked: see :mod:`dryboot.patching.transaction`), and
writes all or nothing. Bad input (an unreadable series, an invalid patch, a path outside the
target, a hostile journal, a write that fails -- every touched file restored) raises
:class:`~dryboot.errors.InputError`.
"""

from __future__ import annotations

from dryboot.errors import InputError
from dryboot.patching._record import field, record
from dryboot.patching.apply import PatchOutcome, Tree, apply_patch
from dryboot.patching.parse import PatchFile, read_patch
from dryboot.patching.series import SeriesEntry, SeriesFile, load_series, read_series_file
from dryboot.patching.state import SeriesRun, StackState, blind_hunks, contextless_hunks, run_series, stack_state
from dryboot.patching.transaction import commit, locked, pending, recover, rolled_back

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (start-up time)
    from collections.abc import Callable
    from typing import Any


@record
class Options:
    """How to run: ``fuzz`` (GNU patch ``--fuzz``: accepted for applying, and for recognising
    applied patches; 0 by default), ``strip`` (``-pN``, for ``swap``; a series gives its own),
    ``on_wait`` (called once, with no argument, when another dryboot run holds the target's
    lock and this one waits for it)."""

    fuzz: int = 0
    strip: int = 1
    on_wait: Callable[[], object] | None = None


@record
class SeriesApplied:
    """What :func:`apply_series` did. ``run``: the steps in order (``already``, ``applied``, or
    one ``failed`` last); ``ok`` and ``written`` (nothing is written unless every patch
    applied); ``restored``: the paths an interrupted earlier transaction had touched, rolled
    back before this run (None when there was none); ``series``: the series file read (its
    unlisted and disabled patches); ``notes``: warnings that did not stop the run."""

    target: str
    run: SeriesRun
    series: SeriesFile
    written: bool = False
    restored: list[str] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.run.ok

    def applied(self) -> list[str]:
        return [s.entry.name for s in self.run.steps if s.state == "applied"]

    def already(self) -> list[str]:
        return [s.entry.name for s in self.run.steps if s.state == "already"]


def _notes(series: SeriesFile, patches: list[tuple[SeriesEntry, PatchFile]]) -> list[str]:
    out = [series.unlisted_note()] if series.unlisted else []
    for _, pf in patches:
        out.extend(pf.notes())
    return out


def _restored(entries: list[dict[str, Any]] | None) -> list[str] | None:
    return None if entries is None else [str(e["path"]) for e in entries]


def apply_series(directory: str, target: str, options: Options | None = None) -> SeriesApplied:
    """Apply the series in ``directory`` to the tree ``target`` after its applied prefix, in
    order, as one transaction (``dryboot series apply``); see the module docstring.

    :raises InputError: bad input, as the module docstring says (exit 2 in the CLI).
    """
    opts = options or Options()
    series = read_series_file(directory)
    patches = load_series(directory, series)
    tree = Tree.open(target)
    with locked(tree.root, on_wait=opts.on_wait):
        restored = _restored(recover(tree.root))
        run = run_series(patches, tree, opts.fuzz)
        res = SeriesApplied(target, run, series, restored=restored, notes=_notes(series, patches))
        if run.ok:
            assert run.tree is not None
            changes, modes = run.tree.all_changes()
            _commit(tree.root, changes, modes, "--to", target)
            res.written = bool(changes or modes)
    return res


def _commit(root: str, changes: dict[str, bytes | None], modes: dict[str, int], flag: str, target: str) -> None:
    try:
        commit(root, changes, modes)
    except OSError as exc:
        raise InputError(flag, target, f"cannot write ({exc}); every touched file was restored") from None


@record
class SeriesStatus:
    """What :func:`series_state` found: ``state`` (per patch, the applied prefix), ``series``,
    ``pending`` (the paths an interrupted transaction touched: the state is of the tree as it
    will be after the next writing run rolls it back; None when there is none), ``notes``."""

    target: str
    state: StackState
    series: SeriesFile
    patches: list[tuple[SeriesEntry, PatchFile]]
    pending: list[str] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No patch partial or in conflict."""
        return not any(st.state in ("partial", "conflict") for st in self.state.statuses)


def series_state(directory: str, target: str, options: Options | None = None) -> SeriesStatus:
    """The state of ``target`` under the series in ``directory`` (``dryboot series status``):
    nothing is written; a pending interrupted transaction is laid over the tree as its roll-back
    will leave it. Holds a shared lock on the target while it reads (a writer running finishes
    first).

    :raises InputError: bad input (an unreadable series, an invalid patch, a hostile journal).
    """
    opts = options or Options()
    series = read_series_file(directory)
    patches = load_series(directory, series)
    tree = Tree.open(target, "--on")
    with locked(tree.root, shared=True, on_wait=opts.on_wait):
        entries = pending(tree.root)
        if entries is not None:
            changes, modes = rolled_back(tree.root, entries)
            tree = tree.child()
            tree.changes.update(changes)
            tree.modes.update(modes)
        state = stack_state(patches, tree, opts.fuzz)
    return SeriesStatus(target, state, series, patches, _restored(entries), _notes(series, patches))


@record
class Swapped:
    """What :func:`swap_patches` did: ``state`` is ``swapped`` (written), ``already`` (NEW reads
    applied and OLD does not: nothing to do, nothing written) or ``failed`` (nothing written);
    ``reverse`` OLD's reversal, ``forward`` NEW's application (None when OLD did not reverse);
    ``restored`` as :class:`SeriesApplied`'s."""

    state: str
    reverse: PatchOutcome
    forward: PatchOutcome | None
    restored: list[str] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.state != "failed"


def swap_patches(old: str, new: str, target: str, options: Options | None = None) -> Swapped:
    """Reverse patch file ``old`` on ``target`` (exactly, or within ``options.fuzz``) and apply
    ``new`` on the result, as one transaction (``dryboot swap``). Run again, it finds NEW applied
    and OLD not, and does nothing (``already``), as a second ``series apply`` does.

    :raises InputError: unreadable or invalid patches, unsafe paths, a hostile journal, a
        failed write (every touched file restored).
    """
    opts = options or Options()
    po, pn = read_patch(old), read_patch(new)
    po.require_valid()
    pn.require_valid()
    tree = Tree.open(target, "--in")
    with locked(tree.root, on_wait=opts.on_wait):
        restored = _restored(recover(tree.root))
        notes = po.notes() + pn.notes()
        rev = apply_patch(tree, po, opts.strip, reverse=True, fuzz=opts.fuzz)
        if rev.ok and blind_hunks(rev, po, new_side=True):
            # OLD "reverses" only by a placement that proves nothing (fuzz trimmed all of a
            # hunk's new side): when NEW's new side is really there, NEW is applied already
            # (issue 28: a second swap at --fuzz 3 re-added OLD's deleted lines, then NEW again)
            undo = apply_patch(tree, pn, opts.strip, reverse=True, fuzz=opts.fuzz, measure=False)
            if undo.ok and not blind_hunks(undo, pn, new_side=True):
                return Swapped("already", rev, None, restored, notes)
        if not rev.ok:
            undo = apply_patch(tree, pn, opts.strip, reverse=True, fuzz=opts.fuzz, measure=False)
            redo = apply_patch(tree, po, opts.strip, reverse=False, fuzz=opts.fuzz, measure=False)
            # OLD "applicable" only with all of a hunk's context fuzzed away proves nothing
            redo_fits = redo.ok and not blind_hunks(redo, po, new_side=False) and not contextless_hunks(redo, po)
            state = "already" if undo.ok and not redo_fits else "failed"
            return Swapped(state, rev, None, restored, notes)
        fwd = apply_patch(rev.tree, pn, opts.strip, reverse=False, fuzz=opts.fuzz)
        if not fwd.ok:
            return Swapped("failed", rev, fwd, restored, notes)
        changes, modes = fwd.tree.all_changes()
        _commit(tree.root, changes, modes, "--in", target)
    return Swapped("swapped", rev, fwd, restored, notes)
