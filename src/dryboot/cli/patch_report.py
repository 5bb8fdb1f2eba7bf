"""The text of ``dryboot series apply``, ``series status`` and ``swap``: rendering of the
results :mod:`dryboot.patching.stack` returns (the engine prints nothing).

Free of click: the click commands (:mod:`dryboot.cli.patch_cmds`) and the fast start below
both call these, so both print the same bytes. Each takes an ``echo(text, err=False)`` that
prints one line, and returns the exit code (0 ok, 1 a finding).

**The fast start** (:func:`main`). Importing click (and building the command tree) costs about
as much as GNU patch takes to apply a whole small stack, so ``python -m dryboot`` / the
``dryboot`` script hand a command line of exactly these plain shapes here first::

    series apply DIRECTORY --to TARGET [--fuzz N]
    series status DIRECTORY --on TARGET [--fuzz N] [--json]

(options in any order, ``--opt=value`` allowed). Anything else -- help, an unknown or repeated
option, a value click would refuse (``--fuzz`` outside 0-100, a path naming a file) -- returns
None and goes to click, which owns every usage message. The output, exit codes and one-line
errors are those of :func:`dryboot.cli.main` (2 for bad input; 128 + the signal when
interrupted). The cyclic garbage collector is off for these runs (they make many objects and
no cycles worth collecting), and ``python -m dryboot`` leaves through ``os._exit`` once the
output is flushed, skipping the interpreter's teardown of everything it built. This module
imports nothing from :mod:`dryboot.cli` (whose ``__init__`` imports click), so that
:mod:`dryboot.__main__` can load it on its own.
"""

from __future__ import annotations

import gc
import os
import sys

from dryboot.errors import InputError, end_on_output_error
from dryboot.patching import _signals, stack
from dryboot.patching.census import hunk_json, hunk_status_words, outcome_lines, plural, refresh_hint

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (start-up time)
    from collections.abc import Callable
    from typing import Any

    from dryboot.patching.apply import PatchStatus
    from dryboot.patching.stack import SeriesApplied, SeriesStatus, Swapped

    Echo = Callable[..., object]


def fuzz_hints(st: PatchStatus, flag: str = "--fuzz") -> list[str]:
    """The hint to refresh (or give more fuzz to) a patch whose failed hunks need fuzz."""
    need = [r.needs_fuzz for r in st.forward.hunks() if r.status == "failed" and r.needs_fuzz]
    return ["   " + refresh_hint(max(need), flag)] if need else []


def _restored(paths: list[str] | None, target: str, echo: Echo) -> None:
    if paths is not None:
        echo(
            f"rolled back an interrupted transaction in {target} ({plural(len(paths), 'file')} "
            "restored to what they were before it)"
        )


def _notes(notes: list[str], echo: Echo) -> None:
    for n in notes:
        echo(n if n.startswith("note: ") else f"warning: {n}", err=True)


def waiting(target: str, echo: Echo) -> Callable[[], object]:
    """The ``on_wait`` of :class:`~dryboot.patching.stack.Options`: say why the run pauses."""
    return lambda: echo(f"waiting for another dryboot run on {target} to finish", err=True)


def render_apply(res: SeriesApplied, echo: Echo) -> int:
    """``series apply``'s report: the patches in order, then a summary; 1 when a patch failed."""
    target = res.target
    _restored(res.restored, target, echo)
    _notes(res.notes, echo)
    run = res.run
    exact = offset = fuzzed = already = 0
    report: list[str] = []
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
    for line in report:
        echo(line)
    if already:
        echo(f"{plural(already, 'patch')} already applied (skipped)")
    echo(f"{plural(exact, 'patch')} applied with exact context, {offset} of them at an offset, {fuzzed} with fuzz")
    return 0


def render_status(res: SeriesStatus, as_json: bool, echo: Echo) -> int:
    """``series status``'s report; 1 when any patch is partial or in conflict."""
    target = res.target
    if res.pending is not None:
        paths = res.pending
        echo(
            f"interrupted transaction pending in {target} ({plural(len(paths), 'file')}): the next "
            "`series apply` or `swap` on it first rolls it back, restoring "
            + ", ".join(paths[:5])
            + (", ..." if len(paths) > 5 else "")
            + "; the status below is of the tree as it will be after that roll-back",
            err=as_json,
        )
    _notes(res.notes, echo)
    sts = res.state.statuses
    disabled = res.series.disabled
    if as_json:
        import json  # at call: only for --json (json costs the fast start)

        doc = []
        for (e, _), st in zip(res.patches, sts, strict=True):
            d: dict[str, Any] = {"patch": e.name, "state": st.state, "hunks": [hunk_json(h) for h in st.hunks]}
            if st.note:
                d["note"] = st.note
            doc.append(d)
        doc.extend({"patch": name, "state": "disabled", "hunks": []} for name in disabled)
        echo(json.dumps(doc, indent=2))
    else:
        for (e, _), st in zip(res.patches, sts, strict=True):
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
        n = len(res.patches)
        if res.state.prefix == n:
            echo(f"series status: all {plural(n, 'patch')} applied")
        else:
            echo(f"series status: the first {res.state.prefix} of {plural(n, 'patch')} applied")
    return 0 if res.ok else 1


def render_swap(res: Swapped, old: str, new: str, target: str, echo: Echo) -> int:
    """``swap``'s report; 1 when OLD did not reverse or NEW did not apply (nothing written)."""
    _restored(res.restored, target, echo)
    _notes(res.notes, echo)
    if res.state == "already":
        echo(f"swap: {new} already applied and {old} not: nothing to do in {target}")
        return 0
    if res.forward is None:
        echo(f"== {old} (reverse): FAILED")
        for line in outcome_lines(res.reverse):
            echo(line)
        echo(f"swap: nothing was written to {target}")
        return 1
    no = res.reverse.offset_hunks()
    echo(f"== {old} (reversed" + (f", {plural(no, 'hunk')} at an offset)" if no else ")"))
    for line in outcome_lines(res.reverse):
        echo(line)
    fo = res.forward
    notes = []
    if fo.offset_hunks():
        notes.append(f"{plural(fo.offset_hunks(), 'hunk')} at an offset")
    if fo.fuzz_hunks():
        notes.append(f"{plural(fo.fuzz_hunks(), 'hunk')} with fuzz")
    echo(f"== {new}" + (f" ({', '.join(notes)})" if notes else "") + ("" if fo.ok else ": FAILED"))
    for line in outcome_lines(fo):
        echo(line)
    if not fo.ok:
        echo(f"swap: nothing was written to {target}")
        return 1
    echo(f"swapped {old} -> {new} in {target}")
    return 0


_OPTS = {
    "apply": {"--to": "target", "--fuzz": "fuzz"},
    "status": {"--on": "target", "--fuzz": "fuzz", "--json": ""},
}
_REQUIRED = {"apply": "--to", "status": "--on"}


def parse(argv: list[str]) -> tuple[str, dict[str, str]] | None:
    """``(command, values)`` for a command line this module runs itself, else None."""
    if len(argv) < 2 or argv[0] != "series" or argv[1] not in _OPTS:
        return None
    cmd, known = argv[1], _OPTS[argv[1]]
    vals: dict[str, str] = {}
    args = argv[2:]
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-"):
            name, eq, value = a.partition("=")
            if name not in known or name in vals:
                return None
            if known[name] == "":  # a flag
                if eq:
                    return None
                value = "1"
            elif not eq:
                i += 1
                if i >= len(args):
                    return None
                value = args[i]
            vals[name] = value
        else:
            if "DIRECTORY" in vals:
                return None
            vals["DIRECTORY"] = a
        i += 1
    if "DIRECTORY" not in vals or _REQUIRED[cmd] not in vals:
        return None
    for key in ("DIRECTORY", _REQUIRED[cmd]):
        if not vals[key] or os.path.isfile(vals[key]):  # click.Path(file_okay=False) says why
            return None
    fz = vals.get("--fuzz", "0")
    if not (fz.isascii() and fz.isdigit() and int(fz) <= 100):
        return None
    return cmd, vals


def _echo(text: str = "", err: bool = False) -> None:
    if err:
        sys.stdout.flush()
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    else:
        sys.stdout.write(text + "\n")


def main(argv: list[str]) -> int | None:
    """Run ``argv`` (without the program name) if it is one of the plain shapes above and
    return its exit code; None when click must handle it."""
    got = parse(argv)
    if got is None:
        return None
    cmd, vals = got
    # a run of a few hundred milliseconds that makes ~10^5 objects and no garbage cycles worth
    # collecting: the cyclic collector would only walk them, again and again
    gc.disable()
    _exit_on_sigterm()
    try:
        if cmd == "apply":
            opts = stack.Options(int(vals.get("--fuzz", "0")), on_wait=waiting(vals["--to"], _echo))
            code = render_apply(stack.apply_series(vals["DIRECTORY"], vals["--to"], opts), _echo)
        else:
            opts = stack.Options(int(vals.get("--fuzz", "0")), on_wait=waiting(vals["--on"], _echo))
            res = stack.series_state(vals["DIRECTORY"], vals["--on"], opts)
            code = render_status(res, "--json" in vals, _echo)
    except InputError as exc:
        _echo(f"dryboot: error: {exc.line()}", err=True)
        return 2
    except OSError as exc:  # the reader went away (| head), or the report cannot be written
        return end_on_output_error(exc)
    except KeyboardInterrupt as exc:  # as click reports it: a blank line, then why
        _echo("", err=True)
        if str(exc):
            _echo(f"dryboot: interrupted ({exc}); nothing was left half-written", err=True)
        else:
            _echo("dryboot: aborted", err=True)
        return 128 + int(getattr(exc, "signum", 2))
    try:
        sys.stdout.flush()
    except OSError as exc:
        return end_on_output_error(exc)
    return code


class _Terminated(KeyboardInterrupt):
    """SIGTERM outside a transaction's write phase (which handles signals itself)."""

    signum = 15


def _exit_on_sigterm() -> None:
    """SIGTERM ends the command the way SIGINT does (exit 143), as :func:`dryboot.cli.main`."""

    def handler(signum: int, frame: object) -> None:
        raise _Terminated("interrupted by SIGTERM")

    with _signals.suppress(ValueError, OSError):  # not the main thread
        _signals.signal(_signals.SIGTERM, handler)
