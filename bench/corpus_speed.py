"""Benchmark on the real-stack corpus (issue 20): ``dryboot series apply`` vs a shell loop of GNU
patch over the same series, per stack, as a ratio (dryboot / GNU loop; < 1: dryboot is faster).

The stacks are those of ``tests/patching/test_corpus.py`` (Debian 12 source packages fetched with
``apt-get source``, the PyPI-based stacks of ``tests/data/stacks``; cached in
``~/.cache/dryboot-stacks``). Each repeat copies the pristine tree twice (not timed), then times:

- the GNU loop: one ``sh`` running ``patch -f -s --fuzz 0 --no-backup-if-mismatch -pN -i P`` for
  each patch in series order (dpkg-source's quilt format applies at fuzz 0);
- ``python -m dryboot series apply SERIES --to TREE`` (a process of its own: start-up included).

It prints, per stack, the number of patches, whether both trees are byte-identical, the median
wall times and their ratio, the same ratio of CPU times (user + system, steadier than wall time
on a loaded machine), and the floor (``python -c pass``, the interpreter's bare start, over
the GNU loop: no Python program can go below it); then the median ratio over stacks of >= 20 patches and over stacks
of 1-5 patches (issue 20's targets: <= 1.0 and <= 2.0), and the load average.

Run: ``python bench/corpus_speed.py [--repeat 5] [--only glibc,bash]``.
"""

from __future__ import annotations

import argparse
import os
import resource
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


def _timed(cmd: list[str]) -> tuple[float, int, float]:
    """Wall time, exit code, and CPU time (user + system of the process and every descendant it
    waited for: steadier than wall time on a loaded machine)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=C.ENV)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, p.returncode, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench(kind: str, name: str, repeat: int, work: Path) -> dict[str, object]:
    st = C.debian_stack(name, work) if kind == "debian" else C.data_stack(name, work)
    keys = ("gnu", "mine", "floor", "gnu_cpu", "mine_cpu", "floor_cpu")
    got: dict[str, list[float]] = {k: [] for k in keys}
    same = True
    for _ in range(repeat):
        g, m = work / "g", work / "m"
        for d in (g, m):
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(st.tree, d, symlinks=True)
        script = work / "loop.sh"
        script.write_text(_gnu_script(st, g))
        tg, rg, cg = _timed(["sh", str(script)])
        tm, rm, cm = _timed([sys.executable, "-m", "dryboot", "series", "apply", str(st.series), "--to", str(m)])
        tf, _, cf = _timed([sys.executable, "-c", "pass"])
        assert rg == 0 and rm == 0, (name, rg, rm)
        for key, v in zip(keys, (tg, tm, tf, cg, cm, cf), strict=True):
            got[key].append(v)
        diff = ["diff", "-r", "-q", "--no-dereference", str(g), str(m)]
        same = same and subprocess.run(diff, capture_output=True).returncode == 0
    out: dict[str, object] = {k: statistics.median(v) for k, v in got.items()}
    out.update(name=name, n=len(st.entries), same=same)
    return out


def _med(rows: list[dict[str, object]], key: str, base: str) -> float:
    return statistics.median(float(r[key]) / float(r[base]) for r in rows)  # type: ignore[arg-type]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated stack names")
    args = ap.parse_args()
    cases = [("debian", p) for p in C.DEBIAN] + [("data", s) for s in C.data_stacks()]
    if args.only:
        keep = set(args.only.split(","))
        cases = [c for c in cases if c[1] in keep]
    rows: list[dict[str, object]] = []
    head = f"{'stack':<20} {'patches':>7}  {'tree':<9} {'GNU loop':>9} {'dryboot':>9} {'ratio':>6} {'floor':>6}"
    print(head + f" {'CPU ratio':>9} {'floor':>6}")
    for kind, name in cases:
        with tempfile.TemporaryDirectory() as d:
            r = bench(kind, name, args.repeat, Path(d))
        rows.append(r)
        g, m, f, gc, mc, fc = (float(r[k]) for k in ("gnu", "mine", "floor", "gnu_cpu", "mine_cpu", "floor_cpu"))  # type: ignore[arg-type]
        print(
            f"{name:<20} {r['n']:>7}  {'identical' if r['same'] else 'DIFFERENT':<9} {g:>8.3f}s {m:>8.3f}s"
            f" {m / g:>6.2f} {f / g:>6.2f} {mc / gc:>9.2f} {fc / gc:>6.2f}",
            flush=True,
        )
    for label, lo, hi in ((">= 20", 20, 10**9), ("1-5", 1, 5)):
        sel = [r for r in rows if lo <= int(r["n"]) <= hi]  # type: ignore[call-overload]
        if sel:
            print(
                f"median ratio, stacks of {label} patches ({len(sel)}): wall {_med(sel, 'mine', 'gnu'):.2f}"
                f" (floor {_med(sel, 'floor', 'gnu'):.2f}), CPU {_med(sel, 'mine_cpu', 'gnu_cpu'):.2f}"
                f" (floor {_med(sel, 'floor_cpu', 'gnu_cpu'):.2f})"
            )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not all(r["same"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
