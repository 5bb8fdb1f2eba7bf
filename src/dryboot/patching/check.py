"""``series check``: verify a patch series against a pristine upstream tag.

Everything happens in a temporary ``git worktree`` of the tag (the user's checkout and index
are never touched; the worktree is removed afterwards).

- Pass 1 applies the whole series with dryboot's engine, patch by patch, and cross-checks each
  patch with GNU patch (``patch --dry-run -f --fuzz 0``) on the same tree state where GNU patch
  is installed: any disagreement (applies / fails, or a different offset census) is a finding.
- Pass 2 (``--git-apply NAMES|all``) starts again from the tag and runs ``git apply --check``
  then ``git apply`` from the worktree root with ``--directory=<prefix>`` on the named patches
  in series order (the others are applied by the engine). git resolves ``diff --git`` paths from
  the repository root and silently skips paths outside the current directory (exit 0, even with
  ``--check``); so a git apply that leaves the tree unchanged is an error here, never a pass.

A pass that changes nothing is an error. The report's last line is ``patch integrity: OK`` or
names every failing patch.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

from dryboot.errors import InputError
from dryboot.patching.apply import PatchOutcome, Tree, patch_status
from dryboot.patching.census import outcome_lines
from dryboot.patching.parse import PatchFile
from dryboot.patching.series import SeriesEntry, load_series
from dryboot.patching.transaction import commit

_GNU_HUNK = re.compile(
    r"^Hunk #(\d+) (succeeded|FAILED|ignored) at (-?\d+)(?: with fuzz (\d+))?"
    r"(?: \(offset (-?\d+) lines?\))?"
)


@dataclass
class CheckReport:
    """Findings of a series check: ``failed`` names each failing patch (or pass)."""

    findings: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed

    def fail(self, name: str, message: str) -> None:
        self.findings.append(f"{name}: {message}")
        if name not in self.failed:
            self.failed.append(name)

    def last_line(self) -> str:
        if self.ok:
            return "patch integrity: OK"
        return "patch integrity: FAILED: " + ", ".join(self.failed)


def git_env(ceiling: str | None = None) -> dict[str, str]:
    """The environment for git subprocesses: no inherited ``GIT_*`` variables (no foreign
    ``GIT_DIR``/``GIT_WORK_TREE``/index), C locale, and ``GIT_CEILING_DIRECTORIES`` so git never
    looks above ``ceiling`` for an enclosing repository."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["LC_ALL"] = "C"
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    if ceiling:
        env["GIT_CEILING_DIRECTORIES"] = ceiling
    return env


def _git(args: list[str], cwd: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, errors="replace", check=False
    )


def gnu_dry_run(target: str, entry: SeriesEntry) -> tuple[int, list[tuple[int, str, int]], str]:
    """Run ``patch --dry-run -f --fuzz 0 -pN [-R]`` in ``target``.

    :returns: (exit code, per-hunk notable results as (hunk, "FAILED"|"offset"|"fuzz", offset)
        in output order, raw output). GNU patch prints nothing for exact hunks.
    """
    cmd = [
        "patch",
        "--dry-run",
        "-f",
        "--fuzz",
        "0",
        f"-p{entry.strip}",
        "-d",
        target,
        "-i",
        os.path.abspath(entry.path),
    ]
    if entry.reverse:
        cmd.insert(1, "-R")
    p = subprocess.run(
        cmd, capture_output=True, text=True, errors="replace", env={**os.environ, "LC_ALL": "C"}, check=False
    )
    notable = []
    for line in p.stdout.splitlines():
        m = _GNU_HUNK.match(line)
        if m:
            kind = "FAILED" if m.group(2) != "succeeded" else ("fuzz" if m.group(4) else "offset")
            notable.append((int(m.group(1)), kind, int(m.group(5) or 0)))
    return p.returncode, notable, p.stdout + p.stderr


def census_text(notable: list[tuple[int, str, int]]) -> str:
    """A census as a reader says it: ``hunk #1 FAILED, hunk #3 at offset 4`` (``every hunk
    exact`` when nothing is notable)."""
    if not notable:
        return "every hunk exact"
    words = {"FAILED": "FAILED", "fuzz": "with fuzz at offset", "offset": "at offset"}
    return ", ".join(
        f"hunk #{n} {words.get(kind, kind)}" + (f" {off:+d}" if kind != "FAILED" else "") for n, kind, off in notable
    )


def engine_notable(out: PatchOutcome) -> list[tuple[int, str, int]]:
    """The engine's census in GNU patch's output form (see :func:`gnu_dry_run`)."""
    res = []
    for f in out.files:
        if f.error and not f.results:
            continue
        for r in f.results:
            if r.status == "failed":
                res.append((r.number, "FAILED", 0))
            elif r.status == "fuzz":
                res.append((r.number, "fuzz", r.offset))
            elif r.offset:
                res.append((r.number, "offset", r.offset))
    return res


@dataclass
class GitApplyResult:
    """``ok`` when git apply checked and applied the patch and the tree changed."""

    ok: bool
    message: str


def git_apply(root: str, patch_path: str, directory: str = "", strip: int = 1, reverse: bool = False) -> GitApplyResult:
    """Run ``git apply --check`` then ``git apply`` on the directory ``root`` (``--directory``,
    ``-pN``, ``-R``) in an isolated repository: a fresh temporary ``--git-dir`` with ``root``
    as work tree, so no enclosing repository (not even the one ``root`` sits in) changes how
    paths resolve. A run that leaves the tree unchanged (git's silent "Skipped patch") is a
    failure, never a pass.
    """
    with tempfile.TemporaryDirectory(prefix="dryboot-git-") as gd:
        env = git_env(gd)
        _git(["init", "-q", gd], gd, env)
        base = ["--git-dir", os.path.join(gd, ".git"), "--work-tree", os.path.abspath(root)]
        opts = [f"-p{strip}"] + (["-R"] if reverse else [])
        if directory:
            opts.append(f"--directory={directory}")
        pp = os.path.abspath(patch_path)
        before = _tree_id(root, base, env)
        chk = _git([*base, "apply", "--check", "-v", *opts, pp], root, env)
        if chk.returncode != 0:
            errs = [x for x in chk.stderr.splitlines() if x.startswith(("error", "fatal"))]
            return GitApplyResult(False, "git apply --check failed: " + (errs[0] if errs else chk.stderr.strip()))
        if "Skipped patch" in chk.stderr + chk.stdout:
            return GitApplyResult(False, "git apply skipped paths outside the directory")
        app = _git([*base, "apply", *opts, pp], root, env)
        if app.returncode != 0:
            return GitApplyResult(False, "git apply failed: " + app.stderr.strip().split("\n")[0])
        if _tree_id(root, base, env) == before:
            return GitApplyResult(False, "git apply exited 0 but changed nothing")
        return GitApplyResult(True, "ok")


def _tree_id(root: str, base: list[str], env: dict[str, str]) -> str:
    _git([*base, "add", "-A", "."], root, env)
    return _git([*base, "write-tree"], root, env).stdout.strip()


def _commit_outcome(target: str, out: PatchOutcome) -> None:
    changes, modes = out.tree.changes, out.tree.modes
    commit(target, dict(changes), dict(modes))


def _quiet(line: str) -> None:
    """The default ``echo``: progress lines go nowhere."""


def check_series(
    directory: str,
    upstream: str,
    ref: str,
    prefix: str = "",
    git_apply_names: str = "",
    echo: Callable[[str], None] | None = None,
) -> CheckReport:
    """Check the series in ``directory`` against ``ref`` of the git repository ``upstream``.
    Nothing is printed: ``echo`` (when given) receives each progress line and finding as it
    comes; the report holds the findings.

    :param prefix: the package directory inside the repository (patch paths are relative to
        it after the strip level).
    :param git_apply_names: ``all`` or comma-separated series names for pass 2 (empty: none).
    :raises InputError: bad series, unknown names, not a git repository, unknown ref.
    """
    echo = echo or _quiet
    patches = load_series(directory)
    names = [e.name for e, _ in patches]
    if git_apply_names.strip() == "all":
        gnames = set(names)
    else:
        gnames = {x.strip() for x in git_apply_names.split(",") if x.strip()}
        unknown = sorted(gnames - set(names))
        if unknown:
            raise InputError("--git-apply", None, "not in the series: " + ", ".join(unknown))
    if prefix.startswith("/") or ".." in prefix.split("/"):
        raise InputError("--prefix", None, f"{prefix!r}: must be a relative path inside the repository")
    env = git_env()
    if not os.path.isdir(upstream):
        raise InputError("--upstream", None, f"{upstream}: not a directory")
    if _git(["rev-parse", "--git-dir"], upstream, env).returncode != 0:
        raise InputError("--upstream", None, f"{upstream}: not a git repository")
    rv = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], upstream, env)
    if rv.returncode != 0:
        raise InputError("--ref", None, f"{ref}: no such tag or commit in {upstream}")
    sha = rv.stdout.strip()
    tmp = tempfile.mkdtemp(prefix="dryboot-check-")
    wt = os.path.join(tmp, "wt")
    report = CheckReport()
    try:
        add = _git(["worktree", "add", "--detach", "--quiet", wt, sha], upstream, env)
        if add.returncode != 0:
            raise InputError("--upstream", None, "git worktree add failed: " + add.stderr.strip().split("\n")[-1])
        target = os.path.join(wt, prefix) if prefix else wt
        if not os.path.isdir(target):
            raise InputError("--prefix", None, f"{prefix}: no such directory at {ref}")
        _pass1(patches, target, report, echo)
        if gnames:
            _git(["checkout", "-f", "--detach", "--quiet", sha], wt, git_env(tmp))
            _git(["clean", "-fdxq"], wt, git_env(tmp))
            _pass2(patches, wt, target, prefix, gnames, report, echo)
    finally:
        _git(["worktree", "remove", "--force", wt], upstream, env)
        shutil.rmtree(tmp, ignore_errors=True)
        _git(["worktree", "prune"], upstream, env)
    for f in report.findings:
        echo(f)
    return report


def _pass1(
    patches: list[tuple[SeriesEntry, PatchFile]], target: str, report: CheckReport, echo: Callable[[str], None]
) -> None:
    have_gnu = shutil.which("patch") is not None
    changed = False
    for e, pf in patches:
        tree = Tree.open(target)
        gnu = gnu_dry_run(target, e) if have_gnu else None
        st = patch_status(tree, pf, e.strip, e.reverse, 0, both=False)
        if st.forward.ok:
            mine = engine_notable(st.forward)
            no = sum(1 for x in mine if x[1] == "offset")
            echo(f"pass 1: {e.name}: applies" + (f" ({no} hunks at an offset)" if no else ""))
            _commit_outcome(target, st.forward)
            changed = changed or bool(st.forward.tree.changes or st.forward.tree.modes)
        elif st.state == "applied":
            report.fail(
                e.name, "already applied upstream (drop it from the series; GNU patch would offer to reverse it)"
            )
            mine = engine_notable(st.forward)
        else:
            report.fail(e.name, f"does not apply ({st.state}):\n" + "\n".join(outcome_lines(st.forward)))
            mine = engine_notable(st.forward)
        if gnu is not None:
            rc, theirs, _raw = gnu
            if (rc == 0) != st.forward.ok:
                report.fail(
                    e.name,
                    f"GNU patch disagrees: it {'applies' if rc == 0 else 'fails'}"
                    f" with --fuzz 0 (exit {rc}), dryboot "
                    f"{'applies' if st.forward.ok else 'does not'}",
                )
            elif theirs != mine:
                report.fail(
                    e.name, f"GNU patch's census differs: GNU {census_text(theirs)}; dryboot {census_text(mine)}"
                )
    if patches and not changed:
        report.fail("pass 1", "the series changed nothing")


def _pass2(
    patches: list[tuple[SeriesEntry, PatchFile]],
    wt: str,
    target: str,
    prefix: str,
    gnames: set[str],
    report: CheckReport,
    echo: Callable[[str], None],
) -> None:
    for e, pf in patches:
        if e.name in gnames:
            r = git_apply(wt, e.path, prefix, e.strip, e.reverse)
            if r.ok:
                echo(f"pass 2: {e.name}: git apply ok")
            else:
                report.fail(e.name, r.message)
            continue
        st = patch_status(Tree.open(target), pf, e.strip, e.reverse, 0, both=False)
        if st.forward.ok:
            _commit_outcome(target, st.forward)
