"""Benchmark on the real-stack corpus (issue 20): ``dryboot series apply`` vs a shell loop of GNU
patch over the same series, per stack, as a ratio (dryboot / GNU loop; < 1: dryboot is faster).

The stacks are those of ``tests/patching/test_corpus.py`` (Debian 12 source packages fetched with
``apt-get source``, the PyPI-based stacks of ``tests/data/stacks``; cached in
``~/.cache/dryboot-stacks``). Each repeat copies the pristine tree twice (not timed), then times:

- the GNU loop: one ``sh`` running ``patch -f -s --fuzz 0 --no-backup-if-mismatch -pN -i P`` for
  each patch in series order (dpkg-source's quilt format applies at fuzz 0);
- ``python -m dryboot series apply SERIES --to TREE`` (a process of its own: start-up included).

It prints, per stack, the number of patches, whether both trees are byte-identical, the median
wall times and their ratio, and the floor (``python -c pass``, the interpreter's bare start, over
the GNU loop: no Python program can go below it); then the median ratio over stacks of >= 20 patches and over stacks
of 1-5 patches (issue 20's targets: <= 1.0 and <= 2.0), and the load average.

Run: ``python bench/corpus_speed.py [--repeat 5] [--only glibc,bash]``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.patching import corpus as C


def _gnu_script(st: C.Stack, tree: Path) -> str:
    lines = []
    for name, opts in st.entries:
        rev = " -R" if "-R" in opts else ""
        lines.append(
            f"patch -f -s --fuzz 0 --no-backup-if-mismatch -r - -p{C.strip_of(opts)}{rev} "
            f"-d {shlex.quote(str(tree))} -i {shlex.quote(str(st.series / name))} || exit 1"
        )
    return "\n".join(lines) + "\n"


def _timed(cmd: list[str]) -> tuple[float, int]:
    t = time.perf_counter()
    p = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**C.ENV, "PYTHONDONTWRITEBYTECODE": ""}
    )
    return time.perf_counter() - t, p.returncode


def bench(kind: str, name: str, repeat: int, work: Path) -> tuple[int, bool, float, float, float]:
    st = C.debian_stack(name, work) if kind == "debian" else C.data_stack(name, work)
    gnu_t, mine_t, floor_t = [], [], []
    same = True
    for _ in range(repeat):
        g, m = work / "g", work / "m"
        for d in (g, m):
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(st.tree, d, symlinks=True)
        script = work / "loop.sh"
        script.write_text(_gnu_script(st, g))
        tg, rg = _timed(["sh", str(script)])
        tm, rm = _timed([sys.executable, "-m", "dryboot", "series", "apply", str(st.series), "--to", str(m)])
        assert rg == 0 and rm == 0, (name, rg, rm)
        gnu_t.append(tg)
        mine_t.append(tm)
        floor_t.append(_timed([sys.executable, "-c", "pass"])[0])
        same = (
            same
            and subprocess.run(["diff", "-r", "-q", "--no-dereference", str(g), str(m)], capture_output=True).returncode
            == 0
        )
    return len(st.entries), same, statistics.median(gnu_t), statistics.median(mine_t), statistics.median(floor_t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated stack names")
    args = ap.parse_args()
    cases = [("debian", p) for p in C.DEBIAN] + [("data", s) for s in C.data_stacks()]
    if args.only:
        keep = set(args.only.split(","))
        cases = [c for c in cases if c[1] in keep]
    rows = []
    print(f"{'stack':<20} {'patches':>7}  {'tree':<9} {'GNU loop':>9} {'dryboot':>9} {'ratio':>6} {'floor':>6}")
    for kind, name in cases:
        with tempfile.TemporaryDirectory() as d:
            n, same, tg, tm, tf = bench(kind, name, args.repeat, Path(d))
        rows.append((name, n, same, tg, tm, tf))
        print(
            f"{name:<20} {n:>7}  {'identical' if same else 'DIFFERENT':<9} {tg:>8.3f}s {tm:>8.3f}s {tm / tg:>6.2f}"
            f" {tf / tg:>6.2f}",
            flush=True,
        )
    long = [(tm / tg, tf / tg) for _, n, _, tg, tm, tf in rows if n >= 20]
    short = [(tm / tg, tf / tg) for _, n, _, tg, tm, tf in rows if 1 <= n <= 5]
    for label, got in ((">= 20", long), ("1-5", short)):
        if got:
            print(
                f"median ratio, stacks of {label} patches ({len(got)}): {statistics.median(r for r, _ in got):.2f}"
                f" (floor, `python -c pass` / GNU loop: {statistics.median(f for _, f in got):.2f})"
            )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not all(r[2] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
