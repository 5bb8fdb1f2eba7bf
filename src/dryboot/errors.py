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
