"""Benchmark on real stacks: ``series apply``, a second (no-op) apply and ``series status`` vs a
shell loop of GNU patch over the same series.

Stacks (fetched with ``pip download --no-deps``, cached in $TMPDIR/dryboot-test-cache/pypi):

- ``35-patch``: pybind11 2.11.1 -> 2.12.0 -> 2.13.1 (C++ headers, Python, CMake), ``diff -ruN``
  between releases cut into one patch per file; the first 35 of them.
- ``big-file``: emoji 1.7.0 -> 2.0.0 -> 2.1.0, whose ``emoji/unicode_codes/data_dict.py`` has
  42,648 lines (45,188 in 2.1.0): one patch per hunk of that file (each header rewritten to the
  position in the tree the earlier patches leave, as if each had been made on top of the last),
  one per file elsewhere; the first 35 of them (all on that file).

Run: ``python bench/stack_speed.py [--repeat 5] [--profile]``. This is the script that reports
issue 9's speed figures (``bench/series_speed.py`` is a synthetic stack on the standard library).
Each repeat runs the GNU loop, ``series apply``, ``series status`` and the second ``series apply``
one after the other (so a busy machine weighs on all alike); it prints the median wall time of
each, the ratios (dryboot / GNU loop; status / apply), the median CPU time (user + system, the
processes' own; steadier than wall time on a loaded machine) with the same ratios, the load
average, and checks that dryboot's tree is byte-identical to GNU patch's. ``--profile`` adds the
share of ``series apply`` spent in the hunk engine (``dryboot.patching.place.run_hunks``) and in
the proof of the applied prefix.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

CACHE = Path(tempfile.gettempdir()) / "dryboot-test-cache" / "pypi"


def fetch(package: str, version: str, sdist: bool) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)

    def find() -> Path | None:
        norm = re.sub(r"[-_.]+", "_", package).lower()
        for p in CACHE.iterdir():
            low = p.name.lower()
            if low.startswith((f"{norm}-{version}", f"{package}-{version}")) and low.endswith((".whl", ".tar.gz")):
                return p
        return None

    found = find()
    if found is None:
        binary = ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                *binary,
                "-q",
                f"{package}=={version}",
                "-d",
                str(CACHE),
            ],
            check=True,
        )
        found = find()
    assert found is not None
    return found


def unpack(archive: Path, dest: Path) -> Path:
    tmp = dest.with_name(dest.name + ".x")
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(tmp)
        shutil.move(tmp, dest)
    else:
        with tarfile.open(archive) as t:
            t.extractall(tmp, filter="data")
        (root,) = list(tmp.iterdir())
        shutil.move(root, dest)
        shutil.rmtree(tmp)
    for meta in [*dest.glob("*.dist-info"), *dest.glob("*.egg-info"), *dest.glob("*/*.egg-info")]:
        shutil.rmtree(meta)
    for p in list(dest.rglob("*")):
        if p.is_file() and (p.name == "PKG-INFO" or b"\0" in p.read_bytes()):
            p.unlink()
    return dest


HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


def per_hunk(part: bytes) -> list[bytes]:
    """One file's ``diff -ruN`` part cut into one patch per hunk, each header rewritten to
    where the hunk sits once the earlier hunks are applied."""
    lines = part.split(b"\n")
    k = next(i for i, ln in enumerate(lines) if ln.startswith(b"@@"))
    head = lines[:k]
    out: list[list[bytes]] = []
    for ln in lines[k:]:
        if ln.startswith(b"@@"):
            m = HUNK.match(ln)
            assert m
            oc = int(m.group(2) or 1)
            ns, nc = int(m.group(3)), int(m.group(4) or 1)
            os_ = ns - 1 if oc == 0 else (ns + 1 if nc == 0 else ns)
            out.append([*head, b"@@ -%d,%d +%d,%d @@%s" % (os_, oc, ns, nc, m.group(5))])
        elif ln or out:
            out[-1].append(ln)
    return [b"\n".join(x).rstrip(b"\n") + b"\n" for x in out]


def build(work: Path, which: str) -> tuple[Path, list[Path]]:
    if which == "35-patch":
        package, versions, sdist, big = "pybind11", ["2.11.1", "2.12.0", "2.13.1"], True, None
    else:
        package, versions, sdist, big = "emoji", ["1.7.0", "2.0.0", "2.1.0"], True, b"emoji/unicode_codes/data_dict.py"
    trees = [unpack(fetch(package, v, sdist), work / f"r{k}") for k, v in enumerate(versions)]
    stack = work / "stack"
    stack.mkdir()
    names: list[Path] = []
    for k in range(len(trees) - 1):
        d = subprocess.run(["diff", "-ruN", f"r{k}", f"r{k + 1}"], cwd=work, capture_output=True).stdout
        for part in re.split(rb"(?m)^(?=diff -ruN )", d):
            if not part.startswith(b"diff -ruN "):
                continue
            pieces = per_hunk(part) if big is not None and big in part.split(b"\n", 1)[0] else [part]
            for piece in pieces:
                p = stack / f"{len(names) + 1:04d}.patch"
                p.write_bytes(piece)
                names.append(p)
    for p in names[35:]:  # both stacks: the first 35 patches
        p.unlink()
    names = names[:35]
    (stack / "series").write_text("".join(p.name + "\n" for p in names))
    return trees[0], names


# dryboot runs as an installed package does: from compiled bytecode (a PYTHONDONTWRITEBYTECODE
# environment would otherwise make every run recompile every module it imports)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(cmd: list[str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system of the process and the children it waited for)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=ENV)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"failed ({status}): {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime


def profile(stack: Path, tree: Path) -> str:
    import cProfile
    import pstats

    from dryboot.patching.apply import Tree
    from dryboot.patching.series import load_series
    from dryboot.patching.state import run_series

    patches = load_series(str(stack))
    pr = cProfile.Profile()
    pr.enable()
    run_series(patches, Tree.open(str(tree)))
    pr.disable()
    st = pstats.Stats(pr)
    total = max(v[3] for v in st.stats.values())  # type: ignore[attr-defined]
    loc = sum(v[3] for k, v in st.stats.items() if k[0].endswith("place.py") and k[2] == "run_hunks")  # type: ignore[attr-defined]
    pre = sum(v[3] for k, v in st.stats.items() if k[0].endswith("state.py") and k[2] == "applied_prefix")  # type: ignore[attr-defined]
    return (
        f"profile of series apply (in-process, {total:.3f} s): hunk locator run_hunks "
        f"{100 * loc / total:.0f}%, proof of the applied prefix {100 * pre / total:.0f}%"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--stacks", default="35-patch,big-file")
    args = ap.parse_args()
    for which in args.stacks.split(","):
        with tempfile.TemporaryDirectory(prefix="dryboot-bench-") as w:
            work = Path(w)
            pristine, names = build(work, which)
            stack = work / "stack"
            big = max((p for p in pristine.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
            nlines = big.read_bytes().count(b"\n")
            loop = "for p in " + " ".join(str(p) for p in names)
            loop += '; do patch -s -f --fuzz 0 -p1 -d "$1" -i "$p" || exit 1; done'
            subprocess.run(
                [sys.executable, "-m", "dryboot", "series", "status", str(stack), "--on", str(pristine)],
                env=ENV,
                check=True,
                stdout=subprocess.DEVNULL,
            )  # warm-up: bytecode written
            gnu_t: list[tuple[float, float]] = []
            app_t: list[tuple[float, float]] = []
            again_t: list[tuple[float, float]] = []
            st_t: list[tuple[float, float]] = []
            for _ in range(args.repeat):
                g, m = work / "gnu", work / "mine"
                for d in (g, m):
                    if d.exists():
                        shutil.rmtree(d)
                    shutil.copytree(pristine, d)
                gnu_t.append(run(["sh", "-c", loop, "sh", str(g)]))
                dry = [sys.executable, "-m", "dryboot", "series"]
                app_t.append(run([*dry, "apply", str(stack), "--to", str(m)]))
                st_t.append(run([*dry, "status", str(stack), "--on", str(m)]))
                again_t.append(run([*dry, "apply", str(stack), "--to", str(m)]))
                same = subprocess.run(["diff", "-r", "-q", str(g), str(m)], capture_output=True)
                if same.returncode != 0:
                    sys.exit("results differ:\n" + same.stdout.decode())
            load = os.getloadavg()
            print(
                f"== {which}: {len(names)} patches; largest file {big.relative_to(pristine)} ({nlines:,} lines); "
                f"median of {args.repeat}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
                f"on {os.cpu_count()} CPUs"
            )
            for k, what in ((0, "wall"), (1, "CPU")):
                gm, am, sm, rm = (statistics.median(x[k] for x in v) for v in (gnu_t, app_t, st_t, again_t))
                print(f"  {what} time")
                print(f"  GNU patch shell loop:        {gm:.3f} s")
                print(f"  dryboot series apply:        {am:.3f} s   ratio vs GNU loop {am / gm:.2f}")
                print(f"  dryboot series apply again:  {rm:.3f} s   (no-op) ratio vs GNU loop {rm / gm:.2f}")
                print(f"  dryboot series status:       {sm:.3f} s   ratio vs apply {sm / am:.2f}")
            print("results byte-identical: yes")
            if args.profile:
                shutil.rmtree(work / "mine")
                shutil.copytree(pristine, work / "mine")
                print(profile(stack, work / "mine"))


if __name__ == "__main__":
    main()
