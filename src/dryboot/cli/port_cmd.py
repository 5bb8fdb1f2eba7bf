"""``dryboot series port``: carry a patch series to a newer tree or vLLM release (a thin command
over :func:`dryboot.patching.port.port_series`). Exit codes: 0 every patch ported (or found
upstream), 1 a conflict (reported per hunk; the patches before it written), 2 bad input."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from typing import Any

import click

from dryboot.boot.releases import release_tree
from dryboot.errors import InputError
from dryboot.patching.port import PatchPort, PortResult, port_series
from dryboot.patching.port_resume import resume_from, was_keep_going
from dryboot.patching.port_root import relation
from dryboot.patching.reroot import reroot_series
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
        elif f.detail.startswith("warning:"):
            tail += f" -- {f.detail}"
        out.append(f"   {name} ({f.op}): {tail}")
    return out


def _fate(p: PatchPort) -> str:
    """One patch's fate in a few words (the summary table's second column)."""
    if p.status == "partly upstream":
        up, total = p.upstream_hunks()
        files_up = sum(1 for f in p.files if f.status == "upstream")
        return (
            f"partly upstream ({up} of {total} hunks in NEW)" if up else f"partly upstream ({files_up} file(s) in NEW)"
        )
    if p.status == "depends":
        return f"depends on {', '.join(p.depends)}"
    if p.status == "conflict":
        up, total = p.upstream_hunks()
        why = ["creates a file NEW has"] if any(f.offer is not None for f in p.files) else []
        why += [f"{up} of {total} hunks in NEW"] if up else []
        return f"conflict ({'; '.join(why)})" if why else "conflict"
    return p.status


def _hunk_tally(p: PatchPort) -> str:
    c: dict[str, int] = {}
    for h in p.hunks():
        c[h.status] = c.get(h.status, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in c.items()) or "-"


def _summary(res: PortResult) -> list[str]:
    """The table of every patch's fate: name, fate, hunks."""
    rows = [("patch", "fate", "hunks")] + [(p.name, _fate(p), _hunk_tally(p)) for p in res.patches]
    w0, w1 = (max(len(r[k]) for r in rows) for k in (0, 1))
    return [f"{a:<{w0}}  {b:<{w1}}  {c}".rstrip() for a, b, c in rows]


def render_port(res: PortResult, as_json: bool, width: int | None = None) -> int:
    """Print the port report (a summary table of every patch's fate, then the detail per hunk), its
    text fitting ``width`` columns (default: the terminal's, :func:`dryboot.textout.terminal_width`;
    piped, lines whole); return the exit code (0 ported, 1 a conflict)."""
    if as_json:
        click.echo(json.dumps(_json(res), indent=2))
        return 0 if res.ok else 1
    columns = terminal_width() if width is None else width

    def say(line: str) -> None:
        click.echo(fit(line, columns))

    for line in _summary(res):
        say(line)
    click.echo("")
    for p in res.patches:
        say(f"== {p.name}: {_fate(p)}")
        for line in _hunk_words(p):
            say(line)
        if p.reject is not None and res.written:
            rej, conflicts = os.path.join(res.written, f"{p.name}.rej"), os.path.join(res.written, "conflicts", "")
            say(f"   written: {rej}, the conflicted files under {conflicts}")
    c = res.counts()
    ported = sum(1 for p in res.patches if p.status in ("ported", "partly upstream", "resolved"))
    upstream = sum(1 for p in res.patches if p.status == "upstream")
    hunks = ", ".join(f"{n} {k}" for k, n in c.items() if n)
    where = f"; written to {res.written}" if res.written else " (--check: nothing written)"
    say(f"{ported} of {len(res.patches)} patches ported, {upstream} already upstream (hunks: {hunks or 'none'}){where}")
    first = res.first_conflict()
    if first is not None and res.written:
        say(
            f"resolve the markers under {os.path.join(res.written, 'conflicts', first.name, '')} and run the same "
            "command with --continue, or drop the patch with --skip"
        )
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
                "fate": _fate(p),
                "depends": p.depends,
                "files": [
                    {
                        "path": f.path,
                        "new_path": f.new_path or None,
                        "op": f.op,
                        "status": f.status,
                        "detail": f.detail,
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
@click.option(
    "--directory",
    "root_dir",
    metavar="DIR",
    help="The folder of both trees the series' paths are relative to (e.g. vllm); default: found.",
)
@click.option("--out", type=click.Path(), help="Write the ported series here (a new or empty directory).")
@click.option("--check", is_flag=True, help="Report only; write nothing.")
@click.option("--keep-going", is_flag=True, help="Port every patch: a conflicting one is left out, the rest go on.")
@click.option(
    "--continue",
    "cont",
    is_flag=True,
    help="After resolving the markers under OUT/conflicts/PATCH/: take them as the patch's content and go on.",
)
@click.option("--skip", is_flag=True, help="Drop the conflicting patch (commented out in the series) and go on.")
@click.option(
    "--fuzz", default=0, show_default=True, type=click.IntRange(0, 100), help="Fuzz accepted applying to OLD."
)
@click.option(
    "--boot-arms",
    is_flag=True,
    help="With --from-version/--to-version: also write OUT/boot/arms.toml, the original and ported stacks "
    "as profiles --compare --boot arms.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
def series_port(
    directory: str,
    old: str | None,
    new: str | None,
    from_version: str | None,
    to_version: str | None,
    root_dir: str | None,
    out: str | None,
    check: bool,
    keep_going: bool,
    cont: bool,
    skip: bool,
    fuzz: int,
    boot_arms: bool,
    as_json: bool,
) -> None:
    """Carry the series to a newer tree: each patch applied to OLD exactly, its change merged
    into NEW three ways (git's merge: OLD the ancestor), and written back against NEW as quilt
    refresh writes it, with a report per hunk: unchanged, moved, merged, upstream or conflict."""
    if check == (out is not None):
        raise InputError("--out", None, "give --out DIR to write the ported series, or --check to write nothing")
    if cont and skip:
        raise InputError("--continue", None, "give one of --continue and --skip")
    resume = None
    if (cont or skip) and out is not None:
        resume = resume_from(out, directory, "continue" if cont else "skip")
        keep_going = keep_going or was_keep_going(out)
    elif cont or skip:
        raise InputError("--continue" if cont else "--skip", None, "needs --out DIR, the earlier port's output")
    res = port_series(
        directory,
        _tree(old, from_version, "from"),
        _tree(new, to_version, "to"),
        out,
        fuzz,
        keep_going=keep_going,
        resume=resume,
        directory=root_dir,
    )
    if boot_arms and not (from_version and to_version and out):
        raise InputError("--boot-arms", None, "needs --from-version, --to-version and --out")
    if boot_arms and res.written and from_version and to_version:
        write_boot_arms(res, directory, from_version, to_version)
    code = render_port(res, as_json)
    if code:
        sys.exit(code)


def write_boot_arms(res: PortResult, series_dir: str, old_version: str, new_version: str) -> str:
    """``OUT/boot/arms.toml``: the original stack on OLD and the ported one on NEW as
    ``profiles --compare --boot`` arms (a boot arm applies its series to the tree holding
    ``vllm/``: a stack rooted in the package folder is copied there re-rooted, under
    ``OUT/boot/``). Written whole (a temporary folder renamed), after the port itself."""
    assert res.written is not None
    out = os.path.abspath(res.written)
    boot = os.path.join(out, "boot")
    tmp = tempfile.mkdtemp(prefix=".boot-", dir=out)
    try:
        folder = relation(str(release_tree(old_version, "--from-version")), res.old)
        arms = {"original": os.path.abspath(series_dir), "ported": out}
        if folder.startswith("sub:"):
            for arm, src in list(arms.items()):
                reroot_series(src, os.path.join(tmp, arm), folder[4:])
                arms[arm] = os.path.join(boot, arm)
        names = (f"original-{old_version}", f"ported-{new_version}")
        text = [
            "# The original stack on its release and the ported stack on the new one, as arms of",
            "# `dryboot profiles --compare --boot` (written by dryboot series port). Boot both with a",
            "# deployment's profiles file (its [defaults] and [profiles]):",
            f"#   cat DEPLOYMENT.toml {os.path.join(boot, 'arms.toml')} > boot.toml &&",
            f"#   dryboot profiles boot.toml --compare {names[0]} {names[1]} --boot",
            "",
            f'[arms."{names[0]}"]',
            f"series = {json.dumps(arms['original'])}",
            f'base = "{old_version}"',
            "",
            f'[arms."{names[1]}"]',
            f"series = {json.dumps(arms['ported'])}",
            f'base = "{new_version}"',
            "",
        ]
        with open(os.path.join(tmp, "arms.toml"), "x") as fh:
            fh.write("\n".join(text))
        os.rename(tmp, boot)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return os.path.join(boot, "arms.toml")
