"""A stack carried to the next release and booted on its own code (issue 30): the reference
deployment's sliding-window group-size patch on vLLM 0.28.0 against the same patch ported to
0.29.0 by ``dryboot series port`` (``examples/ported-0.29.0``, compared with a fresh port in
``tests/patching/test_port_vllm.py``), each arm started in its own release's boot environment.

Needs both boot environments (``dryboot boot-env --vllm-version 0.28.0`` and ``0.29.0``, where
``profiles --boot`` finds them) and runs only when asked, as every boot test: ``DRYBOOT_BOOT_PYTHON``
set (.ci/run builds both and sets it). Asked and an environment missing: a skip, or under ``CI`` a
failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dryboot.boot.env import default_env_dir

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "reference-deployment-port.toml"

pytestmark = pytest.mark.slow


def _envs() -> None:
    if not os.environ.get("DRYBOOT_BOOT_PYTHON"):
        if os.environ.get("CI"):
            pytest.fail("DRYBOOT_BOOT_PYTHON is not set; CI sets it in .ci/run")
        pytest.skip("boot tests not asked for: set DRYBOOT_BOOT_PYTHON (the 0.28.0 boot environment's python)")
    missing = [v for v in ("0.28.0", "0.29.0") if not (default_env_dir(v) / "bin" / "python").is_file()]
    if missing:
        why = f"no boot environment for vLLM {', '.join(missing)} (dryboot boot-env --vllm-version X)"
        if os.environ.get("CI"):
            pytest.fail(why + "; CI builds them in .ci/run")
        pytest.skip(why)


def compare(a: str, b: str) -> dict[str, object]:
    r = subprocess.run(
        [sys.executable, "-m", "dryboot", "profiles", str(EXAMPLE), "--compare", a, b, "--boot", "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-2000:]  # 1: the arms differ
    (row,) = json.loads(r.stdout)["profiles"]
    return dict(row)


def test_ported_stack_boots_identically_on_the_next_release() -> None:
    """The ported stack on 0.29.0's code gives 0.28.0's figures to the token; without it,
    0.29.0's own code gives others (the patch still changes what it changed)."""
    _envs()
    row = compare("on-0.28.0", "ported-0.29.0")
    assert row["identical"] is True
    assert row["ported-0.29.0"]["row"] == "448/3.23%/68,605"  # type: ignore[index]
    row = compare("ported-0.29.0", "upstream-0.29.0")
    assert row["identical"] is False and row["changes"]
