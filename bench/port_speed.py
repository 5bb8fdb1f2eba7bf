"""Benchmark of ``dryboot series port`` (issue 30) against ``git am -3`` on the same series.

The series are the maintainer-refreshed Debian patches of ``tests/patching/test_port_corpus.py``
(fetched by package name, cached in ``~/.cache/dryboot-stacks``): the patches both releases
carry with the same change, ported from the older release's pristine tree to the newer's.

Per package it times, median of ``--repeat`` runs:

- ``git am -3``: the series as commits on OLD (made once, not timed), then ``git am -3`` of the
  mbox onto a branch holding NEW -- only the ``am`` is timed, as a maintainer with both trees in
  one repository pays it;
- ``python -m dryboot series port SERIES --from OLD --to NEW --out DIR`` (a process of its own:
  start-up included; it also writes the refreshed series, which ``am`` does not).

It prints both wall times, their ratio (dryboot / git; < 1: dryboot is faster), and the median
ratio over packages. Run: ``python bench/port_speed.py [--repeat 3] [--only bash,cron]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.patching import port_corpus as P
from tests.patching.test_port import GIT_ENV, git
from tests.patching.test_port_corpus import CASES


def _am_repo(pr: P.Pair, series: Path, work: Path) -> tuple[Path, list[Path]]:
    """A repository with OLD + the series as commits (mbox written) and a branch ``new`` holding
    NEW, checked out: ready for ``git am -3``."""
    repo = work / "repo"
    shutil.copytree(pr.old.tree, repo, symlinks=True)
    git(repo, "init", "-q", "-b", "old")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "old")
    entries = [ln.split() for ln in (series / "series").read_text().splitlines() if ln.strip()]
    for name, *opts in entries:
        git(repo, "apply", "--index", next((o for o in opts if o.startswith("-p")), "-p1"), str(series / name))
        git(repo, "commit", "-q", "--allow-empty", "-m", name)
    git(repo, "format-patch", "-q", "-o", str(work / "mbox"), f"HEAD~{len(entries)}")
    git(repo, "checkout", "-q", "-b", "new", f"HEAD~{len(entries)}")
    return repo, sorted((work / "mbox").iterdir())


def _reset_new(repo: Path, pr: P.Pair, base: str | None) -> str:
    if base is None:
        for p in repo.iterdir():
            if p.name != ".git":
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        shutil.copytree(pr.new.tree, repo, dirs_exist_ok=True, symlinks=True)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", "new")
        return git(repo, "rev-parse", "HEAD").stdout.strip()
    git(repo, "am", "--abort", check=False)
    git(repo, "reset", "-q", "--hard", base)
    return base


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    ratios = []
    print(f"{'package':<22} {'pair':<18} {'patches':>7} {'git am -3 s':>11} {'port s':>8} {'ratio':>6}")
    for (old, new), package, _count in CASES:
        if only and package not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            pr = P.pair(package, work / "src", (old, new))
            names = P.portable(pr, work)
            series = P.sub_series(pr.old, names, work / "series")
            repo, mails = _am_repo(pr, series, work)
            base = _reset_new(repo, pr, None)
            t_git, t_port = [], []
            for k in range(a.repeat):
                _reset_new(repo, pr, base)
                t0 = time.perf_counter()
                for m in mails:
                    subprocess.run(["git", "am", "-3", "-q", str(m)], cwd=repo, env=GIT_ENV, capture_output=True)
                t_git.append(time.perf_counter() - t0)
                out = work / f"out{k}"
                cmd = [sys.executable, "-m", "dryboot", "series", "port", str(series)]
                cmd += ["--from", str(pr.old.tree), "--to", str(pr.new.tree), "--out", str(out)]
                t0 = time.perf_counter()
                subprocess.run(cmd, capture_output=True, check=False)
                t_port.append(time.perf_counter() - t0)
            g, d = statistics.median(t_git), statistics.median(t_port)
            ratios.append(d / g)
            print(f"{package:<22} {old + '->' + new:<18} {len(names):>7} {g:>11.3f} {d:>8.3f} {d / g:>6.2f}")
    if ratios:
        print(f"median ratio (dryboot series port / git am -3): {statistics.median(ratios):.2f} over {len(ratios)}")


if __name__ == "__main__":
    main()
