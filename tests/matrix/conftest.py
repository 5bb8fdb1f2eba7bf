"""The boot environment fixtures of tests/boot (``boot_python``, ``pristine``): the same rule
decides whether the matrix tests that boot run (named by ``$DRYBOOT_BOOT_PYTHON``; skipped
without one, failed under ``CI``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("boot_env_fixtures", Path(__file__).parents[1] / "boot" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_boot = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boot)

boot_python = _boot.boot_python
pristine = _boot.pristine
