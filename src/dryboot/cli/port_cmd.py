"""``dryboot series port``: carry a patch series to a newer tree or vLLM release (a thin command
over :func:`dryboot.patching.port.port_series`). Exit codes: 0 every patch ported (or found
upstream), 1 a conflict (reported per hunk; the patches before it written), 2 bad input."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from dryboot.boot.releases import release_tree
from dryboot.errors import InputError
from dryboot.patching.port import PatchPort, PortResult, port_series
from dryboot.textout import fit, terminal_width


def _tree(path: str | None, version: str | None, flag: str) -> str:
    if (path is None) == (version is None):
        raise InputError(f"--{flag}", None, f"give exactly one of --{flag} TREE and --{flag}-version X")
    if version is not None:
        return str(release_tree(version, f"--{flag}-version"))
    assert path is not None
    return path


def _hunk_words(p: PatchPort) -> list[str]:
    out = []
    for f in p.files:
        words = []
        for h in f.hunks:
            w = f"hunk {h.number} {h.status}"
            if h.status == "moved":
                w += f" (offset {h.offset} line{'' if abs(h.offset) == 1 else 's'})"
            elif h.detail and h.status in ("merged", "conflict"):
                w += f" ({h.detail})"
            words.append(w)
        name = f.path + (f" -> {f.new_path}" if f.new_path and f.new_path != f.path else "")
        tail = "; ".join(words) if words else f.status
        if f.status == "upstream":
            tail += " -- already in --to"
        out.append(f"   {name} ({f.op}): {tail}")
    return out


def render_port(res: PortResult, as_json: bool, width: int | None = None) -> int:
    """Print the port report, its text fitting ``width`` columns (default: the terminal's,
    :func:`dryboot.textout.terminal_width`; piped, lines whole); return the exit code (0 ported, 1 a conflict)."""
    if as_json:
        click.echo(json.dumps(_json(res), indent=2))
        return 0 if res.ok else 1
    columns = terminal_width() if width is None else width

    def say(line: str) -> None:
        click.echo(fit(line, columns))

    for p in res.patches:
        say(f"== {p.name}: {p.status}")
        for line in _hunk_words(p):
            say(line)
        if p.reject is not None and res.written:
            rej, conflicts = os.path.join(res.written, f"{p.name}.rej"), os.path.join(res.written, "conflicts", "")
            say(f"   written: {rej}, the conflicted files under {conflicts}")
    c = res.counts()
    ported = sum(1 for p in res.patches if p.status == "ported")
    upstream = sum(1 for p in res.patches if p.status == "upstream")
    hunks = ", ".join(f"{n} {k}" for k, n in c.items() if n)
    where = f"; written to {res.written}" if res.written else " (--check: nothing written)"
    say(f"{ported} of {len(res.patches)} patches ported, {upstream} already upstream (hunks: {hunks or 'none'}){where}")
    return 0 if res.ok else 1


def _json(res: PortResult) -> dict[str, Any]:
    return {
        "old": res.old,
        "new": res.new,
        "ok": res.ok,
        "written": res.written,
        "hunks": res.counts(),
        "patches": [
            {
                "name": p.name,
                "status": p.status,
                "files": [
                    {
                        "path": f.path,
                        "new_path": f.new_path or None,
                        "op": f.op,
                        "status": f.status,
                        "hunks": [
                            {"number": h.number, "status": h.status, "offset": h.offset, "detail": h.detail}
                            for h in f.hunks
                        ],
                    }
                    for f in p.files
                ],
            }
            for p in res.patches
        ],
    }


@click.command("port")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--from", "old", type=click.Path(file_okay=False), help="The tree the series applies to (OLD).")
@click.option("--to", "new", type=click.Path(file_okay=False), help="The tree to carry it to (NEW).")
@click.option("--from-version", help="OLD as vLLM release X, fetched by package name (0.27.1-0.33.0).")
@click.option("--to-version", help="NEW as vLLM release X, fetched by package name.")
@click.option("--out", type=click.Path(), help="Write the ported series here (a new or empty directory).")
@click.option("--check", is_flag=True, help="Report only; write nothing.")
@click.option(
    "--fuzz", default=0, show_default=True, type=click.IntRange(0, 100), help="Fuzz accepted applying to OLD."
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
def series_port(
    directory: str,
    old: str | None,
    new: str | None,
    from_version: str | None,
    to_version: str | None,
    out: str | None,
    check: bool,
    fuzz: int,
    as_json: bool,
) -> None:
    """Carry the series to a newer tree: each patch applied to OLD exactly, its change merged
    into NEW three ways (git's merge: OLD the ancestor), and written back against NEW as quilt
    refresh writes it, with a report per hunk: unchanged, moved, merged or conflict."""
    if check == (out is not None):
        raise InputError("--out", None, "give --out DIR to write the ported series, or --check to write nothing")
    res = port_series(directory, _tree(old, from_version, "from"), _tree(new, to_version, "to"), out, fuzz)
    code = render_port(res, as_json)
    if code:
        sys.exit(code)
