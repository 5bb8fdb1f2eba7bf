"""``dryboot matrix MATRIX.toml``: models x GPUs x flag sets x arms, each cell dryboot's plan
and every arm's own dry boot, compared arm against arm (:mod:`dryboot.matrix`)."""

from __future__ import annotations

import importlib
import json
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import click


def _optional(module: str, attr: str, option: str) -> Any:
    """``dryboot.matrix.<module>.<attr>``, imported at call (the reports and Ray are optional)."""
    # at call: only a missing optional module raises it
    from dryboot.errors import InputError

    try:
        return getattr(importlib.import_module(f"dryboot.matrix.{module}"), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(option, None, f"not available in this build ({exc})") from None


@click.command("matrix")
@click.argument("matrix_path", metavar="MATRIX.toml")
@click.option("--json", "as_json", is_flag=True, help="Print every cell (each arm's figures, lines, verdict) as JSON.")
@click.option("--html", "html_path", metavar="FILE", help="Also write the self-contained HTML report to FILE.")
@click.option("--junit", "junit_path", metavar="FILE", help="Also write JUnit XML (one test case per cell) to FILE.")
@click.option("--workers", type=click.IntRange(1, 512), help="Local worker processes (default: the CPU count).")
@click.option("--ray", "ray_address", metavar="auto|ADDRESS", help="Run the cells on a Ray cluster instead.")
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    help="Where results are cached by the hash of every input (default ~/.cache/dryboot/matrix).",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write cached results.")
@click.option("--timeout", type=click.FloatRange(min=0.1), help="Seconds per engine start (default: the file's, 300).")
def matrix(
    matrix_path: str,
    as_json: bool,
    html_path: str | None,
    junit_path: str | None,
    workers: int | None,
    ray_address: str | None,
    cache_dir: str | None,
    no_cache: bool,
    timeout: float | None,
) -> None:
    """Dry-boot every cell of MATRIX.toml: models x GPUs x flag sets, on every arm.

    Each cell is dryboot's plan and each arm's own engine start (a source tree, an installed
    site-packages/vllm, an upstream release's boot environment, a patch series on a release, or
    dryboot's modelled policies), the first two arms compared figure by figure and line by line,
    and the cell's expectation checked ("identical", "tokens >= N", "refused"; with none, every
    arm must start). Workers keep one warm boot process per tree; results are cached by the hash
    of every input. Exit 0: every cell met; 1: a cell failed or is in error (named); 2: bad input.
    """
    # at call: only `dryboot matrix` loads the matrix package
    from dryboot.matrix.cache import Cache, default_cache_dir
    from dryboot.matrix.local import LocalBackend
    from dryboot.matrix.run import run_matrix
    from dryboot.matrix.spec import load_matrix
    from dryboot.matrix.table import progress_bar, render_table

    cache_root = None if no_cache else (Path(cache_dir) if cache_dir else default_cache_dir())
    scratch = Path(tempfile.mkdtemp(prefix="dryboot-matrix-"))
    try:
        # flag sets' drafter configs are laid out as model folders where the cache keeps them,
        # so their paths (part of the flags' hash) are the same on every run
        models_dir = cache_root / "models" if cache_root is not None else scratch
        spec = load_matrix(matrix_path, models_dir)
        if timeout is not None:
            spec = replace(spec, timeout_s=timeout)
        render_html = _optional("report_html", "render_html", "--html") if html_path else None
        render_junit = _optional("report_junit", "render_junit", "--junit") if junit_path else None
        backend = _optional("ray_backend", "RayBackend", "--ray")(ray_address) if ray_address else LocalBackend(workers)
        try:
            with progress_bar() as progress:
                result = run_matrix(spec, backend, Cache(cache_root), progress, scratch)
        finally:
            backend.close()
        if html_path and render_html is not None:
            Path(html_path).write_text(render_html(result), encoding="utf-8")
        if junit_path and render_junit is not None:
            Path(junit_path).write_text(render_junit(result), encoding="utf-8")
        if as_json:
            click.echo(json.dumps(result.as_json(), indent=2))
        else:
            click.echo("\n".join(render_table(result)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    raise SystemExit(result.exit_code)


__all__ = ["matrix"]
