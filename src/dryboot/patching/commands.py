"""The bodies of ``dryboot series apply`` and ``dryboot series status``, free of click.

:mod:`dryboot.cli.patch_cmds` (the click commands) and :mod:`dryboot.patching.entry` (the fast
start for the two commands, which imports no click) both run these, so both print the same
bytes. Each takes an ``echo(text, err=False)`` that prints one line and returns the exit code
(0 ok, 1 a finding); bad input raises :class:`~dryboot.errors.InputError`.
"""

from __future__ import annotations

from dryboot.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (start-up time)
    from collections.abc import Callable
    from typing import Any

    from dryboot.patching.apply import PatchStatus

    Echo = Callable[..., object]


def roll_back_pending(root: str, target: str, echo: Echo) -> None:
    """Roll back an interrupted transaction in ``root``, saying so (writing commands only)."""
    from dryboot.patching.census import plural
    from dryboot.patching.transaction import pending, recover

    entries = pending(root)
    recover(root)
    if entries is not None:
        echo(
            f"rolled back an interrupted transaction in {target} ({plural(len(entries), 'file')} "
            "restored to what they were before it)"
        )


def fuzz_hints(st: PatchStatus, flag: str = "--fuzz") -> list[str]:
    """The hint to refresh (or give more fuzz to) a patch whose failed hunks need fuzz."""
    from dryboot.patching.census import refresh_hint

    need = [r.needs_fuzz for r in st.forward.hunks() if r.status == "failed" and r.needs_fuzz]
    return ["   " + refresh_hint(max(need), flag)] if need else []


def series_apply(directory: str, target: str, fuzz: int, echo: Echo) -> int:
    """``dryboot series apply DIRECTORY --to TARGET [--fuzz N]``: apply the series after its
    applied prefix, in order, as one transaction; 1 (nothing written) when a patch fails."""
    from dryboot.patching.apply import Tree
    from dryboot.patching.census import outcome_lines, plural
    from dryboot.patching.series import load_series, run_series
    from dryboot.patching.transaction import commit

    patches = load_series(directory)
    tree = Tree.open(target)
    roll_back_pending(tree.root, target, echo)
    run = run_series(patches, tree, fuzz)
    exact = offset = fuzzed = already = 0
    report: list[str] = []  # printed once the run is known to have been written
    for st in run.steps:
        name = st.entry.name
        note = [f"   note: {st.status.note}"] if st.status.note else []
        if st.state == "already":
            report.append(f"== {name} (already applied)")
            report.extend(note)
            already += 1
            continue
        if st.state == "failed":
            what = "partially applied" if st.status.state == "partial" else "FAILED"
            for line in report:
                echo(line)
            echo(f"== {name}: {what}")
            for line in outcome_lines(st.outcome):
                echo(line)
            for line in note + fuzz_hints(st.status):
                echo(line)
            lead = f"the first {plural(run.prefix, 'patch')} read applied; " if run.prefix else ""
            echo(f"series apply: stopped at {name}; {lead}nothing was written to {target}")
            return 1
        o = st.outcome
        nf, no = o.fuzz_hunks(), o.offset_hunks()
        notes = []
        if no:
            notes.append(f"{plural(no, 'hunk')} at an offset")
        if nf:
            notes.append(f"{plural(nf, 'hunk')} with fuzz")
        report.append(f"== {name}" + (f" ({', '.join(notes)})" if notes else ""))
        report.extend(outcome_lines(o))
        report.extend(note)
        if nf:
            fuzzed += 1
        else:
            exact += 1
            offset += 1 if no else 0
    assert run.tree is not None
    changes, modes = run.tree.all_changes()
    try:
        commit(run.tree.root, changes, modes)
    except OSError as exc:
        raise InputError("--to", target, f"cannot write ({exc}); every touched file was restored") from None
    for line in report:
        echo(line)
    if already:
        echo(f"{plural(already, 'patch')} already applied (skipped)")
    echo(f"{plural(exact, 'patch')} applied with exact context, {offset} of them at an offset, {fuzzed} with fuzz")
    return 0


def series_status(directory: str, target: str, fuzz: int, as_json: bool, echo: Echo) -> int:
    """``dryboot series status DIRECTORY --on TARGET [--fuzz N] [--json]``: per patch applied /
    applicable / partial / conflict with per-hunk evidence; 1 when any is partial or conflict."""
    from dryboot.patching.apply import Tree
    from dryboot.patching.census import hunk_json, hunk_status_words, plural
    from dryboot.patching.series import load_series, read_series_file
    from dryboot.patching.state import stack_state
    from dryboot.patching.transaction import pending, rolled_back

    patches = load_series(directory)
    disabled = read_series_file(directory)[1]
    tree = Tree.open(target, "--on")
    entries = pending(tree.root)
    if entries is not None:
        changes, modes = rolled_back(tree.root, entries)
        tree = tree.child()
        tree.changes.update(changes)
        tree.modes.update(modes)
        msg = (
            f"interrupted transaction pending in {target} ({plural(len(entries), 'file')}): the next "
            "`series apply` or `swap` on it first rolls it back, restoring "
            + ", ".join(e["path"] for e in entries[:5])
            + (", ..." if len(entries) > 5 else "")
            + "; the status below is of the tree as it will be after that roll-back"
        )
        echo(msg, err=as_json)
    state = stack_state(patches, tree, fuzz)
    sts = state.statuses
    if as_json:
        import json

        doc = []
        for (e, _), st in zip(patches, sts, strict=True):
            d: dict[str, Any] = {"patch": e.name, "state": st.state, "hunks": [hunk_json(h) for h in st.hunks]}
            if st.note:
                d["note"] = st.note
            doc.append(d)
        doc.extend({"patch": name, "state": "disabled", "hunks": []} for name in disabled)
        echo(json.dumps(doc, indent=2))
    else:
        for (e, _), st in zip(patches, sts, strict=True):
            echo(f"{e.name}: {st.state}")
            for h in st.hunks:
                echo(f"   {h.file}: hunk {h.number}: {hunk_status_words(h)}")
            if st.note:
                echo(f"   note: {st.note}")
            if st.state in ("partial", "conflict"):
                for line in fuzz_hints(st):
                    echo(line)
        for name in disabled:
            echo(f"{name}: disabled (commented out in the series)")
        n = len(patches)
        if state.prefix == n:
            echo(f"series status: all {plural(n, 'patch')} applied")
        else:
            echo(f"series status: the first {state.prefix} of {plural(n, 'patch')} applied")
    return 1 if any(st.state in ("partial", "conflict") for st in sts) else 0
