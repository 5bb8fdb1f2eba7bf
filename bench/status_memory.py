"""Peak memory of ``series status`` vs ``series apply`` vs a GNU patch loop on one generated
stack: 200 patches (``diff -u`` between successive random edits, each changing 1-4 places) over
one file of 50,000 lines (issue 28: status peaked at 460 MB there, apply at 37 MB).

Run: ``python bench/status_memory.py [--patches 200] [--lines 50000] [--seed 1]``. Prints the
peak resident set (``ru_maxrss`` of the child process) of: ``dryboot series status`` on the
pristine tree (every patch applicable), ``series apply``, ``series status`` on the applied tree
(every patch applied: the prefix proof), a second (no-op) ``series apply``, and the largest of
the ``patch -p1`` processes of a GNU loop over the same series, and ``series status`` on a tree
with the first half applied; the ratios to apply and to the GNU
loop; and whether dryboot's tree is byte-identical to GNU patch's.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def build(work: Path, n_patches: int, n_lines: int, seed: int) -> tuple[Path, Path]:
    """``work/tree/big.py`` (``n_lines`` lines) and ``work/stack`` (``n_patches`` patches and a
    series), each patch ``diff -u`` between successive versions of the file."""
    rng = random.Random(seed)
    lines = [f"value_{k} = {rng.randrange(10**6)}  # line {k}\n" for k in range(n_lines)]
    tree, stack = work / "tree", work / "stack"
    tree.mkdir()
    stack.mkdir()
    (tree / "big.py").write_text("".join(lines))
    a, b = work / "a", work / "b"
    a.mkdir()
    b.mkdir()
    names = []
    for i in range(n_patches):
        (a / "big.py").write_text("".join(lines))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(lines))
            kind = rng.random()
            if kind < 0.4:
                lines[at] = f"changed_{i}_{at} = {rng.randrange(10**6)}\n"
            elif kind < 0.7:
                lines[at:at] = [f"added_{i}_{at}_{j} = {j}\n" for j in range(rng.randint(1, 5))]
            elif len(lines) > 10:
                del lines[at : at + rng.randint(1, 3)]
        (b / "big.py").write_text("".join(lines))
        d = subprocess.run(["diff", "-u", "a/big.py", "b/big.py"], cwd=work, capture_output=True)
        name = f"{i + 1:04d}-edit.patch"
        (stack / name).write_bytes(d.stdout)
        names.append(name)
    (stack / "series").write_text("\n".join(names) + "\n")
    return tree, stack


def peak_kib(cmd: list[str], cwd: Path | None = None) -> tuple[int, int, float]:
    """(exit code, peak RSS in KiB, wall seconds) of ``cmd`` run in a fresh helper process (so that
    ``RUSAGE_CHILDREN`` holds that one command alone)."""
    code = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "t = time.perf_counter() - t\n"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, t)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-c", code, *cmd], cwd=cwd, capture_output=True, text=True, env=env)
    rc, kib, wall = out.stdout.split()
    return int(rc), int(kib), float(wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--patches", type=int, default=200)
    ap.add_argument("--lines", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        tree, stack = build(work, args.patches, args.lines, args.seed)
        gnu = work / "gnu"
        shutil.copytree(tree, gnu)
        shutil.copytree(tree, work / "tree0")
        dry = [sys.executable, "-m", "dryboot"]
        res: dict[str, tuple[int, int, float]] = {}
        res["status (pristine)"] = peak_kib([*dry, "series", "status", str(stack), "--on", str(tree)])
        res["apply"] = peak_kib([*dry, "series", "apply", str(stack), "--to", str(tree)])
        res["status (applied)"] = peak_kib([*dry, "series", "status", str(stack), "--on", str(tree)])
        res["apply again (no-op)"] = peak_kib([*dry, "series", "apply", str(stack), "--to", str(tree)])
        gnu_peak = 0
        for name in (stack / "series").read_text().split():
            rc, kib, _ = peak_kib(["patch", "-p1", "-s", "-f", "--fuzz", "0", "-i", str(stack / name)], cwd=gnu)
            assert rc == 0, name
            gnu_peak = max(gnu_peak, kib)
        half = work / "half"  # the first half applied by GNU patch: status proves a prefix of n/2
        shutil.copytree(work / "tree0", half)
        names = (stack / "series").read_text().split()
        for name in names[: len(names) // 2]:
            subprocess.run(["patch", "-p1", "-s", "-f", "-i", str(stack / name)], cwd=half, check=True)
        res["status (half applied)"] = peak_kib([*dry, "series", "status", str(stack), "--on", str(half)])
        same = (tree / "big.py").read_bytes() == (gnu / "big.py").read_bytes()
        base = dict(res)["apply"][1]
        print(f"stack: {args.patches} patches over one file of {args.lines:,} lines (seed {args.seed})")
        for k, (rc, kib, wall) in res.items():
            print(
                f"  {k:22s} exit {rc}  peak {kib / 1024:7.1f} MiB  ({kib / base:4.2f} x apply, "
                f"{kib / gnu_peak:5.1f} x GNU)  {wall:5.2f} s"
            )
        print(f"  {'GNU patch loop':22s}         peak {gnu_peak / 1024:7.1f} MiB  (largest single patch process)")
        print(f"  trees identical: {same}")
        print(f"  this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
