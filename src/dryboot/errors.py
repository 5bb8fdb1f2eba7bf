"""Errors shared by every dryboot command.

:class:`InputError` is bad input (a malformed config, an impossible flag, a corrupt patch, a
hostile path). The CLI prints it as one line and exits with code 2; no traceback.
"""

from __future__ import annotations

import os
import sys


class InputError(Exception):
    """Bad input, reported as one line: ``<source>: <where>: <reason>``.

    :param source: the file (or flag) the input came from, e.g. ``models/x/config.json`` or
        ``--kv-cache-dtype``.
    :param where: the field, key or line inside it (``None`` when the whole source is at fault).
    :param reason: why it is rejected, phrased for the user.
    """

    def __init__(self, source: str, where: str | None, reason: str) -> None:
        self.source = source
        self.where = where
        self.reason = reason
        super().__init__(self.line())

    def line(self) -> str:
        """The one-line message (no trailing newline)."""
        parts = [self.source]
        if self.where:
            parts.append(self.where)
        parts.append(self.reason)
        return ": ".join(parts)


# --------------------------------------------------------------------------------------
# refusals' wording: every refusal of the same kind says it the same way
# --------------------------------------------------------------------------------------


def missing_field(why: str | None = None) -> str:
    """The reason of a refusal of an absent required field: ``required field is missing``, with
    ``why`` (which vLLM code reads it, what fails without it) in parentheses."""
    return "required field is missing" if why is None else f"required field is missing ({why})"


def not_positive_integer(value: object, name: str | None = None) -> str:
    """The reason of a refusal of a value that must be a positive integer: ``[<name> ]must be a
    positive integer, got <value!r>``."""
    return f"{name + ' ' if name else ''}must be a positive integer, got {value!r}"


# --------------------------------------------------------------------------------------
# a command's own output that cannot be written
# --------------------------------------------------------------------------------------

#: The exit status of a command whose standard output cannot be written (a full disk,
#: ``> /dev/full``, a quota): 2, the status of every error that is not a finding, so that a
#: script never reads a lost report as exit 0 (all is well) or 1 (a figure is wrong). A reader
#: that goes away (``| head``, EPIPE) is not an error of ours: exit 1 quietly, as click does.
OUTPUT_ERROR_EXIT = 2
BROKEN_PIPE_EXIT = 1


def output_error_line(exc: OSError) -> str:
    """The one line for an :class:`OSError` that ended a command outside its input checks:
    ``dryboot: error: <file>: <reason>`` for an error naming its file, else ``dryboot: error:
    standard output: cannot write: <reason>`` (the write of the command's report that failed)."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None:
        return f"dryboot: error: {exc.filename}: {reason}"
    return f"dryboot: error: standard output: cannot write: {reason}"


def end_on_output_error(exc: OSError) -> int:
    """Report ``exc`` (raised writing or flushing the command's output) and return the exit
    status: :data:`BROKEN_PIPE_EXIT` without a word for a reader that went away, else
    :data:`OUTPUT_ERROR_EXIT` after :func:`output_error_line` on stderr. Standard output is
    pointed at the null device first, so that what is left in its buffer does not fail again
    (with a second message and a traceback) when the interpreter flushes it at exit."""
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (closed by the interpreter at exit)
    if isinstance(exc, BrokenPipeError):
        return BROKEN_PIPE_EXIT
    try:
        sys.stderr.write(output_error_line(exc) + "\n")
        sys.stderr.flush()
    except OSError:  # stderr gone too: the status is all that is left
        pass
    return OUTPUT_ERROR_EXIT
