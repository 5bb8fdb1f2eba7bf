"""``python -m dryboot`` and the ``dryboot`` script: ``series apply`` and ``series status`` of
the plain shapes start without click (:func:`dryboot.cli.patch_report.main`); everything else is
:func:`dryboot.cli.main`."""

import os
import sys


def _patch_report() -> object:
    """:mod:`dryboot.cli.patch_report`, loaded from its file without running
    ``dryboot/cli/__init__.py``: that imports click, 20-50 ms measured, as long as GNU patch
    takes for a whole small stack (the module imports nothing from :mod:`dryboot.cli`)."""
    name = "dryboot.cli.patch_report"
    if name not in sys.modules:
        # importlib.util would import collections, contextlib and functools: a fifth of a small
        # stack's run; the interpreter's own import machinery is loaded at its start
        # at call: only the fast start loads a module by its file
        from _frozen_importlib import module_from_spec
        from _frozen_importlib_external import spec_from_file_location

        spec = spec_from_file_location(name, os.path.join(os.path.dirname(__file__), "cli", "patch_report.py"))
        assert spec is not None and spec.loader is not None
        mod = module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


def main() -> None:
    if sys.argv[1:2] == ["series"]:
        from dryboot.patching._signals import suppress  # at call: contextlib's, without its import cost

        code = _patch_report().main(sys.argv[1:])  # type: ignore[attr-defined]
        if code is not None:
            for stream in (sys.stdout, sys.stderr):
                with suppress(OSError):  # a closed pipe (| head)
                    stream.flush()
            os._exit(code)  # nothing left to do: skip tearing down the objects the run built
    from dryboot.cli import main as cli_main  # at call: click only when the fast start declines

    cli_main()


if __name__ == "__main__":
    main()
