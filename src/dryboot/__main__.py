"""``python -m dryboot`` and the ``dryboot`` script: ``series apply`` and ``series status`` of
the plain shapes start without click (:mod:`dryboot.patching.entry`); everything else is
:func:`dryboot.cli.main`."""

import sys


def main() -> None:
    from dryboot.patching.entry import main as fast

    code = fast(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from dryboot.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
