"""Errors shared by every dryboot command.

:class:`InputError` is bad input (a malformed config, an impossible flag, a corrupt patch, a
hostile path). The CLI prints it as one line and exits with code 2; no traceback.
"""

from __future__ import annotations


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
