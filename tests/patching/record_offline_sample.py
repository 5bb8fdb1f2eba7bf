"""Record the offline sample of the network corpus (issue 38): a real Debian stack and a real
maintainers' refresh, cut down to the files their patches touch, so that the default (offline) run
keeps ``series apply``/``status`` against GNU patch and ``series port`` against the maintainers'
refresh on real inputs. Needs the network (or the stack cache) once:

    PYTHONPATH=src python3 -m tests.patching.record_offline_sample

writes ``tests/data/offline-sample/<package>-<suite>[-<suite>]/`` (``SOURCE`` says which packages).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from . import corpus as C
from . import port_corpus as P

OUT = Path(__file__).resolve().parent.parent / "data" / "offline-sample"
#: (package, older suite, newer suite): one refreshed patch ported (jansson 2.14 -> 2.14.1's refresh)
PORT = ("jansson", "bookworm", "trixie")
#: (package, suite): a stack of several patches applied to one release's pristine files
STACK = ("less", "bookworm")


def _series_dir(stack: C.Stack, names: list[str], dest: Path) -> Path:
    return P.sub_series(stack, names, dest)


def record_port(work: Path) -> Path:
    package, old_suite, new_suite = PORT
    pr = P.pair(package, work / "port", (old_suite, new_suite))
    names = P.portable(pr, work / "port")
    dest = OUT / f"{package}-{old_suite}-{new_suite}"
    shutil.rmtree(dest, ignore_errors=True)
    old_series = _series_dir(pr.old, names, dest / "old-series")
    truth_series = _series_dir(pr.new, [n for n, _ in pr.new.entries if n in set(names)], dest / "truth-series")
    files = P.touched(old_series, truth_series)
    P.subset(pr.old.tree, files, dest / "old")
    P.subset(pr.new.tree, files, dest / "new")
    (dest / "SOURCE").write_text(
        f"old: {pr.old.origin}\nnew: {pr.new.origin}\n"
        f"old-series: the patches of OLD's debian/patches both releases carry, refreshed by the maintainers\n"
        f"truth-series: NEW's refreshed copies of them\nold/, new/: the pristine files those patches touch\n"
        "fetched with apt-get source from deb.debian.org (tests/patching/port_corpus.py)\n"
    )
    return dest


def record_stack(work: Path) -> Path:
    package, suite = STACK
    st = P.stack_in(suite, package, work / "stack")
    dest = OUT / f"{package}-{suite}"
    shutil.rmtree(dest, ignore_errors=True)
    series = _series_dir(st, [n for n, _ in st.entries], dest / "series")
    P.subset(st.tree, P.touched(series), dest / "tree")
    (dest / "SOURCE").write_text(
        f"{st.origin}\nseries: its debian/patches as shipped\ntree/: the pristine files those patches touch\n"
        "fetched with apt-get source from deb.debian.org (tests/patching/port_corpus.py)\n"
    )
    return dest


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for path in (record_port(Path(d)), record_stack(Path(d))):
            size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
            print(f"{path.relative_to(OUT.parent.parent.parent)}: {size:,} bytes")


if __name__ == "__main__":
    main()
