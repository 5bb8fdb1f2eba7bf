"""A fast start for ``dryboot series apply`` and ``dryboot series status``: no click.

Importing click (and building the command tree) costs about as much as GNU patch takes to apply
a whole small stack, so ``python -m dryboot`` / the ``dryboot`` script hand a command line of
exactly these plain shapes here first::

    series apply DIRECTORY --to TARGET [--fuzz N]
    series status DIRECTORY --on TARGET [--fuzz N] [--json]

(options in any order, ``--opt=value`` allowed). Anything else -- help, an unknown or repeated
option, a value click would refuse (``--fuzz`` outside 0-100, a path naming a file) -- returns
None and goes to click, which owns every usage message. The command bodies are the ones the
click commands run (:mod:`dryboot.patching.commands`), so the output is the same, and so are
the exit codes and the one-line errors of :func:`dryboot.cli.main` (2 for bad input; 128 + the
signal when interrupted). The cyclic garbage collector is off for these runs (they make many
objects and no cycles worth collecting), and ``python -m dryboot`` leaves through ``os._exit``
once the output is flushed, skipping the interpreter's teardown of everything it built.
"""

from __future__ import annotations

import gc
import os
import sys

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
    from dryboot.errors import InputError
    from dryboot.patching import commands

    _exit_on_sigterm()
    try:
        if cmd == "apply":
            code = commands.series_apply(vals["DIRECTORY"], vals["--to"], int(vals.get("--fuzz", "0")), _echo)
        else:
            fz = int(vals.get("--fuzz", "0"))
            code = commands.series_status(vals["DIRECTORY"], vals["--on"], fz, "--json" in vals, _echo)
    except InputError as exc:
        _echo(f"dryboot: error: {exc.line()}", err=True)
        return 2
    except BrokenPipeError:  # the reader went away (| head): exit 1 quietly, as click does
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (what is left is flushed there at exit)
        return 1
    except KeyboardInterrupt as exc:  # as click reports it: a blank line, then why
        _echo("", err=True)
        if str(exc):
            _echo(f"dryboot: interrupted ({exc}); nothing was left half-written", err=True)
        else:
            _echo("dryboot: aborted", err=True)
        return 128 + int(getattr(exc, "signum", 2))
    sys.stdout.flush()
    return code


class _Terminated(KeyboardInterrupt):
    """SIGTERM outside a transaction's write phase (which handles signals itself)."""

    signum = 15


def _exit_on_sigterm() -> None:
    """SIGTERM ends the command the way SIGINT does (exit 143), as :func:`dryboot.cli.main`."""
    from dryboot.patching import _signals

    def handler(signum: int, frame: object) -> None:
        raise _Terminated("interrupted by SIGTERM")

    with _signals.suppress(ValueError, OSError):  # not the main thread
        _signals.signal(_signals.SIGTERM, handler)
