"""``dryboot check-log``: read a real vLLM boot log, predict it, and compare line by line.

:mod:`~dryboot.checklog.parse` reads the log (prefixes, colours, interleaved workers),
:mod:`~dryboot.checklog.literal` and :mod:`~dryboot.checklog.argmap` turn its
``non-default args`` into engine flags, :mod:`~dryboot.checklog.locate` finds the config.json
(local path or the Hugging Face cache, offline), :mod:`~dryboot.checklog.compare` predicts over
the logged budget interval and explains differences, :mod:`~dryboot.checklog.check` ties them.
"""

from __future__ import annotations

__all__ = ["check_log"]


def __getattr__(name: str) -> object:
    if name == "check_log":
        from dryboot.checklog.check import check_log  # at call: keeps `import dryboot` light

        return check_log
    raise AttributeError(name)
