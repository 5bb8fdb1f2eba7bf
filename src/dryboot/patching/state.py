"""The state of a tree under a patch series: which prefix is applied, what the rest would do.

The state of a tree is *the longest prefix of the series that is applied*, and it is proven, not
guessed: the prefix is reversed in memory, last patch first, each patch on the tree the later ones'
reversal left, and every patch must reverse (exactly, or within the fuzz given). A patch counts as
reversed only when its new side fits at least as near its header as its old side does: when both
directions fit (the old side also occurs elsewhere, or a patch restores what an earlier one had),
the nearer placement decides, and the status says that both fit.

The patches after the proven prefix are then judged forward on the tree as the earlier ones would
leave it: *applicable* (GNU patch would apply every hunk), *applied* (out of order: its new side is
present and its old side is not, or only farther away), *partial* (each hunk one or the other) or
*conflict*, per hunk with evidence. A hunk whose old side fits only at an offset or with fuzz while
its new side sits exactly where the header puts it is never applied: it reads applied, and the patch
partial.

Reversal works on in-memory layers over only the files the stack touches, and a hunk whose changed
lines do not occur in a file is rejected without a search (see ``prefilter`` in
:func:`~dryboot.patching.apply.apply_patch`), so proving that nothing is applied is cheap.
"""

from __future__ import annotations

from collections.abc import Iterator

from dryboot.patching._record import field, record
from dryboot.patching.apply import HunkStatus, PatchOutcome, PatchStatus, Tree, apply_patch
from dryboot.patching.parse import PatchFile
from dryboot.patching.place import HunkResult, HunkSides, sides, trimmed_context
from dryboot.patching.series import SeriesEntry

Patch = tuple[SeriesEntry, PatchFile]


def _cost(out: PatchOutcome, patch: PatchFile, new_side: bool) -> tuple[int, int, int]:
    """How weak the evidence of a (successful) placement is: the hunks whose sought side is
    empty (a zero-context deletion's new side, a zero-context insertion's old side: they "fit"
    anywhere, so they prove nothing), then total fuzz, then total offset. ``new_side``: the
    placement sought the hunks' new sides."""
    hs = out.hunks()
    return (
        _blind(patch, new_side) + _fuzzed_blind(out, patch, new_side),
        sum(r.fuzz for r in hs),
        sum(abs(r.offset) for r in hs),
    )


def blind_hunks(out: PatchOutcome, patch: PatchFile, new_side: bool) -> int:
    """How many hunks of the (successful) placement ``out`` prove nothing: their sought side
    (the new sides when ``new_side``) is empty, or the fuzz used trimmed all of it."""
    return _blind(patch, new_side) + _fuzzed_blind(out, patch, new_side)


def _fuzzed_placements(out: PatchOutcome, patch: PatchFile) -> Iterator[tuple[HunkSides, int, int]]:
    """Each hunk of ``out`` placed with fuzz: its sides and the context lines the fuzz trimmed
    at the top and the bottom."""
    for fo, sec in zip(out.files, patch.sections, strict=False):
        for r in fo.results:
            if r.fuzz <= 0 or not 1 <= r.number <= len(sec.hunks):
                continue
            sd = sides(sec.hunks[r.number - 1])
            top, bottom = trimmed_context(sd.lead, sd.trail, r.fuzz)
            yield sd, top, bottom


def _fuzzed_blind(out: PatchOutcome, patch: PatchFile, new_side: bool) -> int:
    """How many hunks of ``out`` were placed with a fuzz that trimmed every line of the side
    sought: a pure deletion with three lines of context on each side, sought by its new side
    (context only) at fuzz 3, "fits" anywhere and proves nothing (issue 28: it was read
    applied, and its deletion skipped)."""
    return sum(
        len(sd.new if new_side else sd.old) - max(top, 0) - max(bottom, 0) <= 0
        for sd, top, bottom in _fuzzed_placements(out, patch)
    )


def contextless_hunks(out: PatchOutcome, patch: PatchFile) -> int:
    """How many hunks of the (successful) placement ``out`` matched with every context line
    fuzzed away (fuzz 3 on a ``diff -u`` hunk): only the changed lines were sought, which proves
    nothing about where the patch belongs (issue 35: a second ``swap --fuzz 3`` found OLD's old
    side "applicable" by its removed line alone, next to NEW's addition)."""
    return sum(
        sd.lead + sd.trail > 0 and top >= sd.lead and bottom >= sd.trail
        for sd, top, bottom in _fuzzed_placements(out, patch)
    )


def _blind(patch: PatchFile, new_side: bool) -> int:
    """How many hunks of ``patch`` have an empty new side (``new_side``) or old side."""
    key = ("blind", new_side)
    got = patch.cache.get(key)
    if got is None:
        got = patch.cache[key] = sum(
            1 for s in patch.sections for h in s.hunks if (h.counted_new if new_side else h.counted_old) == 0
        )
    assert isinstance(got, int)
    return got


def _ok(r: HunkResult | None) -> bool:
    return r is not None and r.status != "failed"


def _at_header(r: HunkResult | None) -> bool:
    return _ok(r) and r is not None and r.offset == 0 and r.fuzz == 0


def _where(r: HunkResult) -> str:
    parts = [f"line {r.line}"]
    if r.offset:
        parts.append(f"offset {r.offset:+d}")
    if r.fuzz:
        parts.append(f"fuzz {r.fuzz}")
    return parts[0] + (f" ({', '.join(parts[1:])})" if parts[1:] else "")


def _hunk_statuses(fwd: PatchOutcome, bwd: PatchOutcome | None, applied: set[int] | None = None) -> list[HunkStatus]:
    """Per-hunk states from the two outcomes (files in patch order in both). ``applied``: hunk
    indexes (in patch order) that read applied even though their old side fits too."""
    hs: list[HunkStatus] = []
    k = 0
    for j, ff in enumerate(fwd.files):
        bf = bwd.files[j] if bwd is not None else None
        frs = ff.results or [HunkResult(0, "failed" if ff.error else "exact", 0, 0, evidence=ff.error)]
        brs: list[HunkResult] = []
        if bf is not None:
            brs = bf.results or [HunkResult(0, "failed" if bf.error else "exact", 0, 0, evidence=bf.error)]
        for i, fr in enumerate(frs):
            br = brs[i] if i < len(brs) else None
            f_ok = _ok(fr) and not ff.error
            b_ok = _ok(br) and bf is not None and not bf.error
            if applied is not None and k in applied:
                state = "applied"
            else:
                state = "applicable" if f_ok else ("applied" if b_ok else "conflict")
            hs.append(HunkStatus(ff.new_path or ff.path, fr.number, state, fr, br))
            k += 1
    return hs


def judge(tree: Tree, entry: SeriesEntry, patch: PatchFile, fuzz: int = 0) -> PatchStatus:
    """One patch judged on ``tree`` both ways, with per-hunk evidence (nothing is changed).

    ``applicable``: every hunk's old side fits, and not farther than the new side; its
    ``forward.tree`` layer then holds the applied result. ``applied``: the patch reverses, and
    its new side is at least as near the headers as the old side. ``partial``: each hunk is one
    or the other (including a hunk whose new side is exactly at its header while its old side
    fits only displaced: never applied twice). ``conflict``: otherwise.
    """
    fwd = apply_patch(tree, patch, entry.strip, entry.reverse, fuzz, measure=True, check_modes=True)
    # the full backward census is needed only for per-hunk states: when the forward run failed,
    # or placed a hunk away from its header (whose new side may sit there already)
    quick = fwd.ok
    bwd = apply_patch(
        tree, patch, entry.strip, not entry.reverse, fuzz, measure=False, check_modes=True, prefilter=True, quick=True
    )
    if fwd.ok and not bwd.ok and not all(_at_header(r) for r in fwd.hunks()):
        quick = False
    if not bwd.ok and not quick:
        bwd = apply_patch(
            tree, patch, entry.strip, not entry.reverse, fuzz, measure=False, check_modes=True, prefilter=True
        )
    if fwd.ok and bwd.ok:
        nearer = _cost(bwd, patch, not entry.reverse) <= _cost(fwd, patch, entry.reverse)
        st = PatchStatus("applied" if nearer else "applicable", _hunk_statuses(fwd, bwd), fwd, bwd)
        if nearer:
            for h in st.hunks:
                h.state = "applied"
        st.note = _both_note(st.hunks, nearer)
        return st
    if fwd.ok:
        hs = _hunk_statuses(fwd, bwd)
        twice = {k for k, h in enumerate(hs) if not _at_header(h.forward) and _at_header(h.backward)}
        if twice:
            hs = _hunk_statuses(fwd, bwd, twice)
            st = PatchStatus("partial", hs, fwd, bwd)
            st.note = "not applied twice: " + "; ".join(
                f"{h.file} hunk {h.number}: the new side is already at the header's "
                f"{_where(h.backward)}; the old side fits only at {_where(h.forward)}"
                for k, h in enumerate(hs)
                if k in twice and h.backward is not None
            )
            return st
        return PatchStatus("applicable", hs, fwd, bwd)
    hs = _hunk_statuses(fwd, bwd)
    if bwd.ok:
        return PatchStatus("applied", hs, fwd, bwd)
    states = {h.state for h in hs}
    return PatchStatus("partial" if "conflict" not in states else "conflict", hs, fwd, bwd)


def _both_note(hs: list[HunkStatus], applied: bool) -> str:
    """Say that both directions fit, quoting the first hunk that shows it."""
    for h in hs:
        if h.backward is None or h.forward is h.backward or not (_ok(h.forward) and _ok(h.backward)):
            continue
        new, old = _where(h.backward), _where(h.forward)
        if applied:
            return f"both directions fit: {h.file} hunk {h.number}'s new side at {new}, its old side at {old}"
        return f"both directions fit: {h.file} hunk {h.number}'s old side at {old}, its new side at {new}"
    return "both directions fit"


@record
class _Reversal:
    """One proven step of the prefix chain: the patch's reversal (its ``tree`` is the state
    before the patch) and the forward try on the same tree (None when it cannot fit)."""

    reverse: PatchOutcome
    forward: PatchOutcome | None
    note: str = ""


#: The fuzz up to which a patch is *recognised* applied whatever fuzz the run allows: a patch a
#: run with ``--fuzz N`` applied keeps its fuzzed context in the tree, so a later run without
#: ``--fuzz`` must still see it applied (issue 28). GNU patch's default maximum, 2: at 3 a
#: ``diff -u`` hunk keeps only its changed lines, too little to call a patch applied (a
#: hand-edited line next to it would go unnoticed); a patch applied with ``--fuzz 3`` is
#: recognised by a run with ``--fuzz 3``. Only recognising: nothing is written with this fuzz.
RECOGNISE_FUZZ = 2


def _recognised(tree: Tree, entry: SeriesEntry, patch: PatchFile, fuzz: int) -> _Reversal | None:
    """The reversal of ``patch`` at :data:`RECOGNISE_FUZZ` when ``fuzz`` is lower and the patch
    reads applied only with more fuzz: every hunk's new side placed with context the fuzz
    trimmed but some of it kept (no blind placement), and its old side not placeable even then.
    That is the tree a run with ``--fuzz`` leaves; None otherwise."""
    if fuzz >= RECOGNISE_FUZZ:
        return None
    kw = {"measure": False, "check_modes": True, "prefilter": True, "quick": True}
    bwd = apply_patch(tree, patch, entry.strip, not entry.reverse, RECOGNISE_FUZZ, **kw)
    if not bwd.ok or blind_hunks(bwd, patch, not entry.reverse):
        return None
    if apply_patch(tree, patch, entry.strip, entry.reverse, RECOGNISE_FUZZ, **kw).ok:
        return None
    used = max((r.fuzz for r in bwd.hunks()), default=0)
    return _Reversal(
        bwd,
        None,
        f"applied with fuzz {used}: its context differs from the tree's as a run with --fuzz {used} leaves it "
        "(recognised, never re-applied)",
    )


def _reverses(tree: Tree, entry: SeriesEntry, patch: PatchFile, fuzz: int) -> _Reversal | None:
    """The reversal of ``patch`` on ``tree`` if the patch reads applied there (within ``fuzz``,
    or as a run with more fuzz left it: see :func:`_recognised`), else None."""
    bwd = apply_patch(
        tree, patch, entry.strip, not entry.reverse, fuzz, measure=False, check_modes=True, prefilter=True, quick=True
    )
    if not bwd.ok:
        return _recognised(tree, entry, patch, fuzz)
    fwd = apply_patch(
        tree, patch, entry.strip, entry.reverse, fuzz, measure=False, check_modes=True, prefilter=True, quick=True
    )
    if fwd.ok and _cost(fwd, patch, entry.reverse) < _cost(bwd, patch, not entry.reverse):
        return None
    return _Reversal(bwd, fwd if fwd.ok else None)


def applied_prefix(patches: list[Patch], tree: Tree, fuzz: int = 0) -> tuple[int, list[PatchStatus]]:
    """The longest applied prefix of ``patches`` on ``tree`` and each of its patches' status.

    Tries the longest candidate first: a prefix of k patches needs patch k to reverse on
    ``tree`` itself; the chain then reverses patches k-1..1, each on the tree the previous
    reversal left. The first complete chain wins; 0 when none is.
    """
    for top in range(len(patches) - 1, -1, -1):
        chain: list[_Reversal] = []
        cur = tree
        for i in range(top, -1, -1):
            e, pf = patches[i]
            r = _reverses(cur, e, pf, fuzz)
            if r is None:
                break
            chain.append(r)
            cur = _flatten(r, tree)
        else:
            chain.reverse()
            return top + 1, [_proven(r) for r in chain]
    return 0, []


def _flatten(r: _Reversal, base: Tree) -> Tree:
    """The tree ``r``'s reversal left, as one layer over ``base`` holding only the latest
    content of each file, and ``r``'s own layers emptied (only their per-hunk results are kept).
    Without it a chain of k reversals holds k versions of a file patched k times: 357 MiB for
    200 patches over a 50,000-line file (issue 28); with it, two versions at a time."""
    top = r.reverse.tree
    layers: list[Tree] = []
    t: Tree | None = top
    while t is not None and t is not base:
        layers.append(t)
        t = t.parent
    flat = base.child()
    for layer in reversed(layers):
        flat.changes.update(layer.changes)
        flat.modes.update(layer.modes)
        layer.changes, layer.modes = {}, {}
    if r.forward is not None:
        r.forward.tree.changes, r.forward.tree.modes = {}, {}
    return flat


def _proven(r: _Reversal) -> PatchStatus:
    if r.forward is None:
        hs = _hunk_statuses(r.reverse, r.reverse)
        for h in hs:
            h.state = "applied"
        return PatchStatus("applied", hs, r.reverse, r.reverse, r.note)
    hs = _hunk_statuses(r.forward, r.reverse)
    for h in hs:
        h.state = "applied"
    st = PatchStatus("applied", hs, r.forward, r.reverse)
    st.note = _both_note(hs, True)
    return st


@record
class StackState:
    """A series on a tree: ``prefix`` patches proven applied; ``statuses`` one per patch in
    series order; ``tree`` the target with every applicable patch after the prefix applied
    (up to ``stopped``, the index of the first patch that is neither applicable nor applied,
    when ``stop`` was asked, else None when all are). The forward layers of the applicable
    patches are merged into ``tree`` and emptied: read the result from ``tree``."""

    prefix: int
    statuses: list[PatchStatus]
    tree: Tree
    stopped: int | None = None


def stack_state(patches: list[Patch], tree: Tree, fuzz: int = 0, stop: bool = False) -> StackState:
    """The state of ``tree`` under ``patches`` (see the module docstring); nothing is written.

    :param stop: stop judging at the first patch after the prefix that is neither applicable
        nor applied (``series apply``); otherwise judge every patch, each on the tree the
        earlier applicable ones would leave (``series status``).
    """
    k, statuses = applied_prefix(patches, tree, fuzz)
    layer = tree.child()
    out = StackState(k, statuses, layer)
    last = _last_named(patches)
    for i in range(k, len(patches)):
        e, pf = patches[i]
        st = judge(layer, e, pf, fuzz)
        tree.forget(p for p in (f.new_path or f.path for f in st.forward.files) if last.get(p, -1) <= i)
        if st.state == "applied" and not st.note:
            st.note = "applied out of order (the patches before it are not all applied)"
        out.statuses.append(st)
        if st.state == "applicable":
            st.forward.tree.merge_into_parent()
            # its contents now live in ``layer``; dropping the layer's own copy lets a file patched
            # by many patches keep one version, not one per patch (memory a large file fills)
            st.forward.tree.changes = {}
        elif st.state != "applied" and out.stopped is None:
            out.stopped = i
            if stop:
                break
    return out


def _last_named(patches: list[Patch]) -> dict[str, int]:
    """For each target-relative name a patch of the series names (``-p`` stripped, ``./`` and
    repeated slashes removed), the index of the last patch naming it: after that patch no later
    one reads the file's cached contents and lines again."""
    last: dict[str, int] = {}
    for i, (e, pf) in enumerate(patches):
        for sec in pf.sections:
            for nm in (sec.old, sec.new):
                got = nm.stripped(e.strip) if nm is not None else None
                if got is not None:
                    last["/".join(c for c in got.split("/") if c not in ("", "."))] = i
    return last


@record
class StepResult:
    """One patch of a series run: ``state`` is ``applied`` (now), ``already`` (proven applied:
    skipped, never reversed), or ``failed``; ``outcome`` the forward census; ``status`` the
    full judgement (per-hunk states and a note)."""

    entry: SeriesEntry
    state: str
    outcome: PatchOutcome
    status: PatchStatus


@record
class SeriesRun:
    """A series apply: the steps in order and whether everything applied (then ``tree``
    holds every change, ready to commit); ``prefix`` patches were found applied already."""

    steps: list[StepResult] = field(default_factory=list)
    ok: bool = True
    tree: Tree | None = None
    prefix: int = 0


def run_series(patches: list[tuple[SeriesEntry, PatchFile]], tree: Tree, fuzz: int = 0) -> SeriesRun:
    """Apply ``patches`` in order onto ``tree`` (in memory) after the applied prefix, stopping
    at the first patch that is neither applicable nor applied (see :mod:`dryboot.patching.state`).

    The patches of the proven applied prefix are skipped (never reversed, never re-applied); a
    patch is applied when GNU patch ``-f --fuzz fuzz`` would apply every hunk and its new side
    is not already where its headers put it.
    """
    state = stack_state(patches, tree, fuzz, stop=True)
    run = SeriesRun(tree=state.tree, prefix=state.prefix)
    for (e, _), st in zip(patches, state.statuses, strict=False):
        if st.state == "applicable":
            run.steps.append(StepResult(e, "applied", st.forward, st))
        elif st.state == "applied":
            run.steps.append(StepResult(e, "already", st.forward, st))
        else:
            run.steps.append(StepResult(e, "failed", st.forward, st))
            run.ok = False
            break
    return run
