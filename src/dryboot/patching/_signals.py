"""The few names of :mod:`signal` the transaction and the fast start need, taken from the C
module under it (``_signal``): :mod:`signal` itself imports :mod:`enum` to wrap the numbers,
a cost ``series apply`` would pay on every start for names it never shows; and the two context
managers the transaction uses, without :mod:`contextlib`."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _impl
    from typing import Any
else:
    try:
        import _signal as _impl
    except ImportError:  # an interpreter without it: the module everybody has
        import signal as _impl

SIGINT: int = int(_impl.SIGINT)
SIGTERM: int = int(_impl.SIGTERM)
SIGHUP: int = int(_impl.SIGHUP)
SIG_IGN = _impl.SIG_IGN
signal = _impl.signal
NAMES = {SIGINT: "SIGINT", SIGTERM: "SIGTERM", SIGHUP: "SIGHUP"}


class handling:
    """``with handling(handler):`` SIGINT, SIGTERM and SIGHUP go to ``handler`` (a callable, or
    ``SIG_IGN``) inside the block and to their old handlers after it. Outside the main thread
    ``signal.signal`` refuses and nothing is changed. A class, not a ``contextlib`` generator:
    importing :mod:`contextlib` costs the quick start :mod:`functools` and :mod:`collections`."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler
        self.old: dict[int, Any] = {}

    def __enter__(self) -> None:
        for sig in (SIGINT, SIGTERM, SIGHUP):
            with suppress(ValueError, OSError):
                self.old[sig] = signal(sig, self.handler)

    def __exit__(self, *exc: object) -> None:
        for sig, h in self.old.items():
            signal(sig, h)


class suppress:
    """``with suppress(OSError):`` the block's exceptions of those types are ignored."""

    def __init__(self, *types: type[BaseException]) -> None:
        self.types = types

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, value: object, tb: object) -> bool:
        return kind is not None and issubclass(kind, self.types)
