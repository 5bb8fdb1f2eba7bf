"""``series status`` and ``series apply`` agree (issue 28: status said "applicable" for a
patch that apply refused: a file created where a directory is, or under an existing file).

A differential property: on random small trees (files, directories, files where directories
would go) and random series of creations, deletions and modifications over the same few names,
status's verdict (the first patch neither applied nor applicable) is exactly where apply stops,
a refusal (InputError) by one is a refusal by the other, and when apply writes, the tree it
leaves is the one status computed."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.patching.stack import apply_series, series_state

from .helpers import run_cli, snapshot

NAMES = ["a", "b", "a/x", "b/y", "a/x/z"]
CONTENT = st.sampled_from([b"1\n", b"2\n", b"1\n2\n"])


def _tree_strategy() -> st.SearchStrategy[dict[str, bytes | None]]:
    """name -> bytes (a file) or None (a directory); names absent are absent."""
    return st.dictionaries(st.sampled_from(NAMES), st.one_of(st.none(), CONTENT), max_size=4)


def _materialise(root: Path, spec: dict[str, bytes | None]) -> None:
    root.mkdir()
    for name in sorted(spec, key=lambda n: n.count("/")):
        p = root / name
        parent_ok = all((root / q).is_dir() or not (root / q).exists() for q in _parents(name))
        if not parent_ok or p.exists():
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        data = spec[name]
        if data is None:
            p.mkdir()
        else:
            p.write_bytes(data)


def _parents(name: str) -> list[str]:
    parts = name.split("/")
    return ["/".join(parts[:k]) for k in range(1, len(parts))]


def _patch(op: str, name: str, old: bytes, new: bytes) -> bytes:
    def body(sign: bytes, data: bytes) -> bytes:
        return b"".join(sign + ln + b"\n" for ln in data.split(b"\n")[:-1])

    n_old, n_new = old.count(b"\n"), new.count(b"\n")
    if op == "create":
        return b"--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n%s" % (name.encode(), n_new, body(b"+", new))
    if op == "delete":
        return b"--- a/%s\n+++ /dev/null\n@@ -1,%d +0,0 @@\n%s" % (name.encode(), n_old, body(b"-", old))
    return b"--- a/%s\n+++ b/%s\n@@ -1,%d +1,%d @@\n%s%s" % (
        name.encode(),
        name.encode(),
        n_old,
        n_new,
        body(b"-", old),
        body(b"+", new),
    )


PATCHES = st.lists(
    st.tuples(st.sampled_from(["create", "delete", "modify"]), st.sampled_from(NAMES), CONTENT, CONTENT).filter(
        lambda t: t[2] != t[3] or t[0] != "modify"
    ),
    min_size=1,
    max_size=3,
)


def _verdict(fn: object, *args: str) -> tuple[str, object]:
    try:
        return "ok", fn(*args)  # type: ignore[operator]
    except InputError as exc:
        return "refused", exc.line()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_tree_strategy(), patches=PATCHES)
# found by this test in CI's run: a deleted file's name becomes a directory (apply refused it)
@example(tree={"a": b"1\n"}, patches=[("delete", "a", b"1\n", b"1\n"), ("create", "a/x", b"1\n", b"1\n")])
@example(tree={"a/x": b"1\n"}, patches=[("delete", "a/x", b"1\n", b"1\n"), ("create", "a", b"2\n", b"2\n")])
def test_status_verdict_is_what_apply_does(
    tree: dict[str, bytes | None], patches: list[tuple[str, str, bytes, bytes]]
) -> None:
    with tempfile.TemporaryDirectory() as d:
        base = Path(d)
        s = base / "s"
        s.mkdir()
        names = []
        for k, (op, name, old, new) in enumerate(patches):
            (s / f"{k}.patch").write_bytes(_patch(op, name, old, new))
            names.append(f"{k}.patch")
        (s / "series").write_text("\n".join(names) + "\n")
        _materialise(base / "t1", tree)
        shutil.copytree(base / "t1", base / "t2", symlinks=True)
        before = snapshot(base / "t2")

        kind_s, status = _verdict(series_state, str(s), str(base / "t1"))
        kind_a, applied = _verdict(apply_series, str(s), str(base / "t2"))
        assert kind_s == kind_a, (status, applied)
        if kind_s == "refused":
            assert snapshot(base / "t2") == before
            return
        stopped = status.state.stopped  # type: ignore[attr-defined]
        assert applied.ok == (stopped is None), (status, applied)  # type: ignore[attr-defined]
        if stopped is not None:
            assert len(applied.run.steps) == stopped + 1  # type: ignore[attr-defined]
            assert snapshot(base / "t2") == before
        else:
            want = dict(before)
            view = status.state.tree  # type: ignore[attr-defined]
            changes, _modes = view.all_changes()
            for rel, data in changes.items():
                if data is None:
                    want.pop(rel, None)
                else:
                    want[rel] = data
            got = {k: v for k, v in snapshot(base / "t2").items() if not k.endswith("/")}
            assert got == {k: v for k, v in want.items() if not k.endswith("/")}


def test_created_in_the_way_status_and_apply_agree(tmp_path: Path) -> None:
    """The two cases of the issue, through the CLI: status exits 1 naming the obstacle, as apply does."""
    for k, (name, setup) in enumerate([("d", "dir"), ("f/x", "file")]):
        s, t = tmp_path / f"s{k}", tmp_path / f"t{k}"
        s.mkdir()
        t.mkdir()
        if setup == "dir":
            (t / "d").mkdir()
        else:
            (t / "f").write_bytes(b"f\n")
        (s / "1.patch").write_bytes(b"--- /dev/null\n+++ b/%s\n@@ -0,0 +1 @@\n+new\n" % name.encode())
        (s / "series").write_text("1.patch\n")
        st_ = run_cli("series", "status", str(s), "--on", str(t))
        ap = run_cli("series", "apply", str(s), "--to", str(t))
        assert st_.exit_code == ap.exit_code == 1, (st_.output, ap.output)
        why = "a directory is where the patch creates a file" if setup == "dir" else "f is a file, not a directory"
        assert why in st_.stdout and why in ap.stdout
        assert not os.path.exists(t / name) or setup == "dir"
