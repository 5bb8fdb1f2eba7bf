"""``python -m dryboot`` and the ``dryboot`` script: ``series apply`` and ``series status`` of
the plain shapes start without click (:mod:`dryboot.patching.entry`); everything else is
:func:`dryboot.cli.main`."""

import os
import sys


def main() -> None:
    from dryboot.patching._signals import suppress  # contextlib's, without its import cost
    from dryboot.patching.entry import main as fast

    code = fast(sys.argv[1:])
    if code is not None:
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError):  # a closed pipe (| head)
                stream.flush()
        os._exit(code)  # nothing left to do: skip tearing down the objects the run built
    from dryboot.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
