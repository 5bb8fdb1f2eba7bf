"""The ``dryboot`` command line: a thin layer over the Python API.

Subcommands are imported lazily (only the one being run), so ``dryboot --help`` and every
command start fast. Exit codes: 0 ok, 1 a finding (violated invariant, mismatch, failed hunk),
2 bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import sys
import threading
from typing import Any

import click

from dryboot import __version__
from dryboot.errors import InputError, end_on_output_error

# command name -> "module:attribute" of a click.Command; loaded on first use.
_COMMANDS: dict[str, tuple[str, str]] = {
    "plan": ("dryboot.cli.plan_cmd", "plan"),
    "boot": ("dryboot.cli.boot_cmd", "boot"),
    "boot-env": ("dryboot.cli.boot_cmd", "boot_env"),
    "check-log": ("dryboot.cli.checklog_cmd", "check_log"),
    "sweep": ("dryboot.cli.sweep_cmd", "sweep"),
    "profiles": ("dryboot.cli.profiles_cmd", "profiles"),
    "matrix": ("dryboot.cli.matrix_cmd", "matrix"),
    "promote": ("dryboot.cli.profiles_cmd", "promote"),
    "hunks": ("dryboot.cli.patch_cmds", "hunks"),
    "series": ("dryboot.cli.patch_cmds", "series"),
    "swap": ("dryboot.cli.patch_cmds", "swap"),
}


class _LazyGroup(click.Group):
    """Loads subcommands on first use, and is the one place bad input becomes exit 2."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; an :class:`InputError` from any command (the API, a flag, a
        patch) is printed as one line on stderr and exits 2, with no traceback."""
        try:
            return super().invoke(ctx)
        except InputError as exc:
            click.echo(f"dryboot: error: {exc.line()}", err=True)
            sys.exit(2)  # not ctx.exit: click's main(standalone_mode=False) returns that code

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(_COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _COMMANDS:
            module_name, attr = _COMMANDS[cmd_name]
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError:
                return None
            cmd = getattr(module, attr, None)
            return cmd if isinstance(cmd, click.Command) else None
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dryboot")
def cli() -> None:
    """Know what a (patched) vLLM boot will do before you boot."""


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point.

    Every bad-input path ends as one line on stderr and exit 2: :class:`InputError` in
    the group (:meth:`_LazyGroup.invoke`), click's own usage errors (unknown option, bad
    choice), which click would otherwise print over several lines, here (``dryboot plan:
    error: ...``). A group given no command prints its help as click does (stderr, exit 2).
    """
    _exit_on_sigterm()
    try:
        _run(argv)
    except SystemExit as exc:
        code = exc.code
    except OSError as exc:  # a write of the report failed (> /dev/full, | head)
        sys.exit(end_on_output_error(exc))
    else:
        code = 0
    try:  # what the buffer still holds is written now, where a failure is reported as one line
        sys.stdout.flush()
    except OSError as exc:
        code = end_on_output_error(exc)
    sys.exit(code)


def _run(argv: list[str] | None) -> None:
    """:func:`main` but for the output's flush and its write errors: ends in ``sys.exit``."""
    try:
        cli.main(args=argv, prog_name="dryboot", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        # a group called with no command: its help, as click prints it (on stderr, exit 2)
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.UsageError as exc:
        # "dryboot plan: error: No such option ..." (argparse's "prog: error: message" form)
        prog = exc.ctx.command_path if exc.ctx is not None else "dryboot"
        click.echo(f"{prog}: error: {exc.format_message()}", err=True)
        sys.exit(2)
    except click.exceptions.Abort as exc:
        cause = exc.__cause__
        if isinstance(cause, KeyboardInterrupt) and str(cause):
            # click turns KeyboardInterrupt (SIGINT, or a rolled-back transaction's signal) into Abort
            click.echo(f"dryboot: interrupted ({cause}); nothing was left half-written", err=True)
            sys.exit(128 + int(getattr(cause, "signum", 2)))
        click.echo("dryboot: aborted", err=True)
        sys.exit(128 + int(getattr(cause, "signum", 2)))
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        detail = f" ({exc}); nothing was left half-written" if str(exc) else ""
        click.echo(f"dryboot: interrupted{detail}", err=True)
        sys.exit(128 + int(getattr(exc, "signum", 2)))
    sys.exit(0)


class _Terminated(KeyboardInterrupt):
    """SIGTERM outside a transaction's write phase (which handles signals itself)."""

    signum = 15


def _exit_on_sigterm() -> None:
    """SIGTERM ends the command the way SIGINT does (cleanly, exit 128 + 15 = 143), instead of
    Python's default of dying without cleanup."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: Any) -> None:
        raise _Terminated("interrupted by SIGTERM")

    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGTERM, handler)
