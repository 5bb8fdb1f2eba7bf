"""``dryboot hunks``, ``dryboot series`` and ``dryboot swap``: thin commands over
:mod:`dryboot.patching`. Exit codes: 0 ok, 1 a finding (mismatch, failed hunk, conflict),
2 bad input (one line on stderr)."""

from __future__ import annotations

import sys

import click

from dryboot.cli.patch_report import render_apply, render_status, render_swap, waiting
from dryboot.cli.port_cmd import series_port
from dryboot.inputs import read_regular
from dryboot.patching.check import check_series
from dryboot.patching.recount import check_patch, fix_file
from dryboot.patching.series import read_series_file
from dryboot.patching.stack import Options, apply_series, series_state, swap_patches


@click.group()
def hunks() -> None:
    """Check and repair the @@ hunk headers of patch files."""


@hunks.command("check")
@click.argument("patches", nargs=-1, required=True, type=click.Path(dir_okay=False))
def hunks_check(patches: tuple[str, ...]) -> None:
    """Check every hunk header against its body; exit 1 on any mismatch."""
    bad = 0
    for path in patches:
        for p in check_patch(read_regular(path), path):
            click.echo(f"{path}:{p.lineno}: {p.message}")
            bad += 1
    if bad:
        sys.exit(1)
    click.echo(f"hunks check: every hunk header of {len(patches)} patch file(s) matches its body")


@hunks.command("fix")
@click.argument("patches", nargs=-1, required=True, type=click.Path(dir_okay=False))
def hunks_fix(patches: tuple[str, ...]) -> None:
    """Recount hunk headers in place (atomic, idempotent); print each changed header."""
    left = 0
    for path in patches:
        res = fix_file(path)
        for c in res.changes:
            click.echo(f"{path}:{c.lineno}: {_dec(c.old)} -> {_dec(c.new)}")
        for p in res.unfixable:
            click.echo(f"{path}:{p.lineno}: {p.message}")
            left += 1
    if left:
        sys.exit(1)


def _dec(b: bytes) -> str:
    return b.decode("utf-8", "backslashreplace")


@click.group()
def series() -> None:
    """Apply, inspect and verify a quilt-style patch series."""


@series.command("list")
@click.argument("directory", type=click.Path(file_okay=False))
def series_list(directory: str) -> None:
    """Print the apply order (exit 2 when the series names a file that is not there); patches
    whose line is commented out are listed last as disabled; patch files the series does not
    name are noted on stderr (never applied, as quilt and dpkg-source)."""
    sf = read_series_file(directory)
    if sf.unlisted:
        click.echo(sf.unlisted_note(), err=True)
    for e in sf.entries:
        opts = ([f"-p{e.strip}"] if e.strip != 1 else []) + (["-R"] if e.reverse else [])
        click.echo(" ".join([e.name, *opts]))
    for name in sf.disabled:
        click.echo(f"# {name} (disabled: commented out in the series)")


@series.command("apply")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--to",
    "target",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory to patch (e.g. site-packages/vllm).",
)
@click.option(
    "--fuzz",
    default=0,
    show_default=True,
    type=click.IntRange(0, 100),
    help="Accept hunks that need up to this much fuzz (GNU patch --fuzz); applied patches are "
    "recognised within it, and within 2 whatever it is (a rerun after --fuzz 1 or 2 needs no --fuzz).",
)
def series_apply(directory: str, target: str, fuzz: int) -> None:
    """Apply the series after its applied prefix, in order: all of it, or nothing.

    Running it again changes nothing: the patches already applied are proven so (reversed in
    memory, last first) and skipped."""
    code = render_apply(apply_series(directory, target, Options(fuzz, on_wait=waiting(target, click.echo))), click.echo)
    if code:
        sys.exit(code)


@series.command("status")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--on", "target", required=True, type=click.Path(file_okay=False), help="Directory to inspect (nothing is written)."
)
@click.option(
    "--fuzz",
    default=0,
    show_default=True,
    type=click.IntRange(0, 100),
    help="Judge hunks within this much fuzz (as the series was applied with); applied patches are "
    "recognised within 2 whatever it is.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def series_status_cmd(directory: str, target: str, fuzz: int, as_json: bool) -> None:
    """Per patch: applied / applicable / partial / conflict, with per-hunk evidence.

    The applied patches are the longest prefix of the series that reverses, last patch first;
    the others are judged on the tree the earlier ones would leave."""
    res = series_state(directory, target, Options(fuzz, on_wait=waiting(target, click.echo)))
    code = render_status(res, as_json, click.echo)
    if code:
        sys.exit(code)


@series.command("check")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--upstream", required=True, type=click.Path(file_okay=False), help="Git repository of the pristine upstream."
)
@click.option("--ref", required=True, help="Tag or commit to check against.")
@click.option(
    "--prefix",
    default="",
    help="Directory of the patched package inside the repository (e.g. vllm); patch paths are relative to it.",
)
@click.option(
    "--git-apply", "git_apply", default="", help="Comma-separated patch names (or 'all') to check with git apply too."
)
def series_check(directory: str, upstream: str, ref: str, prefix: str, git_apply: str) -> None:
    """Verify the series on a temporary worktree of REF (your checkout is never touched)."""
    report = check_series(directory, upstream, ref, prefix, git_apply, echo=click.echo)
    click.echo(report.last_line())
    if not report.ok:
        sys.exit(1)


@click.command()
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@click.option("--in", "target", required=True, type=click.Path(file_okay=False), help="Directory where OLD is applied.")
@click.option(
    "-p", "--strip", default=1, show_default=True, type=click.IntRange(0, 100), help="Strip level (GNU patch -pN)."
)
@click.option(
    "--fuzz",
    default=0,
    show_default=True,
    type=click.IntRange(0, 100),
    help="Fuzz accepted for both: OLD is reversed within it (give the fuzz OLD was applied with), "
    "NEW applied within it.",
)
def swap(old: str, new: str, target: str, strip: int, fuzz: int) -> None:
    """Reverse OLD (exactly, or within --fuzz) and apply NEW, as one transaction. Run again, it
    finds NEW applied and OLD not: nothing to do (exit 0)."""
    res = swap_patches(old, new, target, Options(fuzz, strip, on_wait=waiting(target, click.echo)))
    code = render_swap(res, old, new, target, click.echo)
    if code:
        sys.exit(code)


series.add_command(series_port)
