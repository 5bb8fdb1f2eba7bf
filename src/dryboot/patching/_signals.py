"""The few names of :mod:`signal` the transaction and the fast start need, taken from the C
module under it (``_signal``): :mod:`signal` itself imports :mod:`enum` to wrap the numbers,
a cost ``series apply`` would pay on every start for names it never shows."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _impl
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
