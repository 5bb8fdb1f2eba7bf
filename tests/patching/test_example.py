"""The README's example stack (examples/patch-stack) works as documented."""

from __future__ import annotations

import shutil
from pathlib import Path

from .helpers import run_cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "patch-stack"


def test_example_stack(tmp_path: Path) -> None:
    target = tmp_path / "pkg"
    shutil.copytree(EXAMPLE / "pkg", target)
    patches = str(EXAMPLE / "patches")
    assert run_cli("series", "list", patches).stdout.split() == [
        "0001-block-size-32.patch",
        "0002-log-large-blocks.patch",
    ]
    assert run_cli("hunks", "check", *map(str, sorted((EXAMPLE / "patches").glob("*.patch")))).exit_code == 0
    r = run_cli("series", "apply", patches, "--to", str(target))
    assert r.exit_code == 0
    assert r.stdout.splitlines()[-1] == "2 patches applied with exact context, 0 of them at an offset, 0 with fuzz"
    assert "DEFAULT_BLOCK_SIZE = 32" in (target / "config.py").read_text()
    r = run_cli("series", "apply", patches, "--to", str(target))
    assert r.stdout.splitlines()[:2] == [
        "== 0001-block-size-32.patch (already applied)",
        "== 0002-log-large-blocks.patch (already applied)",
    ]
