"""Golden answers on valid inputs, to prove a refactoring of the geometry core changes none.

``record DIR`` writes dryboot's complete answer (``plan --json`` output, or the refusal line) for
every case the recorded-vLLM tests run (``tests/fidelity``: architectures, defaults, e2e, releases,
hybrids, DeepSeek-V4), for ``plan --json`` on each example model under a few flag sets, for
``profiles --json`` on ``examples/reference-deployment.toml`` and for a seeded ``sweep``;
``compare DIR`` records again into a temporary file and lists every case whose answer differs.

    python scripts/core_golden.py record /tmp/core-golden
    python scripts/core_golden.py compare /tmp/core-golden

The fidelity cases are captured by wrapping ``e2e_harness.run_dryboot`` while pytest runs those
tests (``-p`` plugin below), so the case list is exactly the tests' own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIDELITY = REPO / "tests" / "fidelity"
EXAMPLES = REPO / "examples"
#: flag sets every example model is planned under
EXAMPLE_FLAGS = [
    ["--kv-cache-memory-bytes", "40G"],
    ["--kv-cache-memory-bytes", "20G", "-tp", "2", "--kv-cache-dtype", "fp8", "--enable-prefix-caching"],
    ["--kv-cache-memory-bytes", "8G", "--max-model-len", "4096", "--block-size", "32", "--max-num-seqs", "64"],
    ["--gpu-memory", "80G", "--non-kv-memory", "30G", "--gpu-memory-utilization", "0.8"],
    ["-pp", "2", "--kv-cache-memory-bytes", "30G", "--max-model-len", "-1"],
]


class _Capture:
    """pytest plugin: every ``run_dryboot`` answer, keyed by version, model and argv."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.rows: dict[str, Any] = {}

    def pytest_configure(self, config: Any) -> None:
        sys.path.insert(0, str(FIDELITY))
        import e2e_harness as H
        from click.testing import CliRunner

        from dryboot.cli import cli

        original = H.run_dryboot
        rows = self.rows

        def run_dryboot(case: Any, vllm_version: str | None = None) -> dict[str, Any]:
            got: dict[str, Any] = original(case, vllm_version)
            res = CliRunner().invoke(cli, case.dryboot_argv(vllm_version), env=case.env or None)
            key = json.dumps([vllm_version, Path(case.model).name, case.argv, sorted((case.env or {}).items())])
            rows[key] = {"rc": res.exit_code, "output": res.output, "summary": got}
            return got

        H.run_dryboot = run_dryboot

    def pytest_unconfigure(self, config: Any) -> None:
        self.out.write_text(json.dumps(self.rows, indent=1, sort_keys=True))


def _dryboot(*argv: str) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, "-m", "dryboot", *argv], capture_output=True, text=True, env={**os.environ, "COLUMNS": "100"}
    )
    return {"rc": res.returncode, "stdout": res.stdout, "stderr": res.stderr}


def record(out: Path) -> None:
    import pytest

    out.mkdir(parents=True, exist_ok=True)
    plugin = _Capture(out / "fidelity.json")
    rc = pytest.main(["-q", "-p", "no:cacheprovider", "-x", str(FIDELITY)], plugins=[plugin])
    if rc not in (0, 5):
        raise SystemExit(f"fidelity tests failed (exit {rc}): the golden would record a broken state")
    cli: dict[str, Any] = {}
    for model in sorted((EXAMPLES / "models").glob("*.json")):
        for flags in EXAMPLE_FLAGS:
            cli[json.dumps(["plan", model.name, *flags])] = _dryboot("plan", "--model", str(model), *flags, "--json")
    toml = EXAMPLES / "reference-deployment.toml"
    cli["profiles --json"] = _dryboot("profiles", str(toml), "--json")
    cli["profiles"] = _dryboot("profiles", str(toml))
    cli["sweep"] = _dryboot("sweep", "--limit", "400", "--seed", "7", "-j", "1")
    (out / "cli.json").write_text(json.dumps(cli, indent=1, sort_keys=True))
    print(f"{out}: {len(plugin.rows)} fidelity cases, {len(cli)} CLI answers")


def _portable(text: str) -> str:
    """``text`` without what differs run to run: pytest's numbered temporary directories."""
    return re.sub(r"/[^\s'\"]*/pytest-of-[^/]+/pytest-\d+", "<pytest-tmp>", text)


def compare(golden: Path) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        record(Path(tmp))
        bad = 0
        total = 0
        for name in ("fidelity.json", "cli.json"):
            old = json.loads(_portable((golden / name).read_text()))
            new = json.loads(_portable((Path(tmp) / name).read_text()))
            for key in sorted(set(old) | set(new)):
                total += 1
                if old.get(key) != new.get(key):
                    bad += 1
                    print(f"DIFFERS {name} {key[:200]}")
                    if key in old and key in new:
                        for field in old[key]:
                            if old[key][field] != new[key].get(field):
                                print(f"  {field}: was {str(old[key][field])[:400]!r}")
                                print(f"  {field}: now {str(new[key].get(field))[:400]!r}")
        print(f"{total} answers compared, {bad} differ")
        return 1 if bad else 0


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("record", "compare"):
        print(__doc__)
        return 2
    target = Path(sys.argv[2])
    if sys.argv[1] == "record":
        record(target)
        return 0
    return compare(target)


if __name__ == "__main__":
    sys.exit(main())
