"""Without Ray installed, ``--ray`` is one line and exit 2 (an :class:`InputError`), and nothing
else in dryboot imports Ray."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dryboot.errors import InputError


def test_without_ray_the_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from dryboot.matrix import ray_backend

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(InputError) as exc:
        ray_backend.RayBackend("auto")
    assert exc.value.line() == "--ray: Ray is not installed: pip install 'dryboot[ray]'"


def test_ray_is_imported_only_by_the_backend() -> None:
    code = (
        "import sys, dryboot.matrix.model, dryboot.matrix.worker, dryboot.matrix.ray_backend, "
        "dryboot.matrix.report_html, dryboot.matrix.report_junit; print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cli_without_ray_is_exit_2_in_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    from pathlib import Path

    from reports_sample import cli_matrix, run_cli

    monkeypatch.setitem(sys.modules, "ray", None)
    code, out, err = run_cli("matrix", str(cli_matrix(Path(str(tmp_path)))), "--no-cache", "--ray", "auto")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == ["dryboot: error: --ray: Ray is not installed: pip install 'dryboot[ray]'"]
