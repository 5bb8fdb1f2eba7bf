"""A target that is turned against its owner (issue 20, items 2-4): a crafted or damaged journal,
symlinked parents, a planted temporary file, concurrent runs, a full disk, files that cannot be
written. Every case: one line, exit 2 (or the run succeeds correctly), nothing written outside
the target, nothing lost inside it."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dryboot.patching import transaction
from dryboot.patching.paths import JOURNAL_DIR

from .helpers import run_cli, snapshot

GOOD = b"--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"


def _setup(tmp: Path) -> tuple[Path, Path, Path]:
    """A stack, a target and a directory outside the target holding a file worth stealing."""
    s, t, out = tmp / "stack", tmp / "target", tmp / "outside"
    for d in (s, t, out):
        d.mkdir()
    (t / "f.py").write_bytes(b"a\nb\nc\n")
    (s / "0001-good.patch").write_bytes(GOOD)
    (s / "series").write_text("0001-good.patch\n")
    (out / "secret").write_bytes(b"do not touch\n")
    return s, t, out


def _journal(t: Path, entries: object, backups: dict[str, bytes] | None = None) -> None:
    j = t / JOURNAL_DIR
    j.mkdir()
    for name, data in (backups or {}).items():
        (j / name).write_bytes(data)
    (j / "journal.json").write_text(json.dumps(entries))


def _refused(tmp: Path, s: Path, t: Path, needle: str) -> None:
    """apply and status both refuse in one line, exit 2, and nothing at all changes."""
    before = snapshot(tmp)
    for args in (("series", "apply", str(s), "--to", str(t)), ("series", "status", str(s), "--on", str(t))):
        r = run_cli(*args)
        assert r.exit_code == 2, (args, r.output)
        assert len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr, r.stderr
        assert "Traceback" not in r.output
        assert snapshot(tmp) == before


# -- crafted journals -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../outside/secret", "dotdot"),
        ("ABS", "absolute"),
        ("link/secret", "symlinked parent"),
        (f"{JOURNAL_DIR}/journal.json", "inside the journal"),
        ("./f.py", "not normalised"),
    ],
)
def test_journal_path_outside_the_target_is_refused(tmp_path: Path, path: str, why: str) -> None:
    s, t, out = _setup(tmp_path)
    (t / "link").symlink_to(out)
    if path == "ABS":
        path = str(out / "secret")
    # restoring would overwrite the outside file (a backup) or delete it (a created file)
    _journal(t, [{"path": path, "backup": "b0", "mode": 0o644}], {"b0": b"owned\n"})
    _refused(tmp_path, s, t, "is not inside the target")
    _journal_path_deleting = [{"path": path, "backup": None, "mode": None}]
    (t / JOURNAL_DIR / "journal.json").write_text(json.dumps(_journal_path_deleting))
    _refused(tmp_path, s, t, "is not inside the target")
    assert (out / "secret").read_bytes() == b"do not touch\n"


def test_journal_backup_outside_the_journal_is_refused(tmp_path: Path) -> None:
    s, t, _out = _setup(tmp_path)
    _journal(t, [{"path": "f.py", "backup": "../../outside/secret", "mode": 0o644}])
    _refused(tmp_path, s, t, "is not a journal file name")


def test_journal_backup_symlink_is_refused(tmp_path: Path) -> None:
    """A backup that is a symlink would copy a file from outside into the target."""
    s, t, out = _setup(tmp_path)
    _journal(t, [{"path": "f.py", "backup": "b0", "mode": 0o644}])
    (t / JOURNAL_DIR / "b0").symlink_to(out / "secret")
    _refused(tmp_path, s, t, "is not a regular file")


def test_journal_directory_symlinked_outside_is_refused(tmp_path: Path) -> None:
    """Dropping the journal directory would delete the files of the directory it points to."""
    s, t, out = _setup(tmp_path)
    (out / "journal.json").write_text(json.dumps([{"path": "f.py", "backup": None, "mode": None}]))
    (t / JOURNAL_DIR).symlink_to(out)
    _refused(tmp_path, s, t, "not a directory (a symlink or a file")


def test_journal_symlink_file_is_refused(tmp_path: Path) -> None:
    s, t, out = _setup(tmp_path)
    (t / JOURNAL_DIR).mkdir()
    (out / "j").write_text(json.dumps([{"path": "f.py", "backup": None, "mode": None}]))
    (t / JOURNAL_DIR / "journal.json").symlink_to(out / "j")
    _refused(tmp_path, s, t, "cannot read it")


@pytest.mark.parametrize(
    ("entries", "needle"),
    [
        ({"path": "f.py"}, "not a list of entries"),
        ([["f.py", "b0", 420]], "entry 1 is not {path, backup, mode}"),
        ([{"path": "f.py", "backup": "b0", "mode": 420}], "entry 1: backup b0 is missing"),
        ([{"path": "f.py", "backup": "b0", "mode": "rw"}], "entry 1: mode 'rw' is not permission bits"),
        ([{"path": 7, "backup": None, "mode": None}], "entry 1: path 7 is not inside the target"),
        ([{"path": "f.py", "backup": None, "mode": 420}], "entry 1: a mode without a backup"),
        ([{"path": "f.py", "backup": None, "mode": None}] * 2, "entry 2: path 'f.py' listed twice"),
    ],
    ids=["not-a-list", "not-a-dict", "missing-backup", "mode-type", "path-type", "mode-alone", "twice"],
)
def test_damaged_journal_is_one_line_and_touches_nothing(tmp_path: Path, entries: object, needle: str) -> None:
    s, t, _ = _setup(tmp_path)
    _journal(t, entries)
    _refused(tmp_path, s, t, needle)


def test_unparseable_journal(tmp_path: Path) -> None:
    s, t, _ = _setup(tmp_path)
    (t / JOURNAL_DIR).mkdir()
    (t / JOURNAL_DIR / "journal.json").write_bytes(b'[{"path": "f.py", ')
    _refused(tmp_path, s, t, "damaged journal of an interrupted transaction (unreadable")


def test_valid_journal_still_rolls_back(tmp_path: Path) -> None:
    s, t, _ = _setup(tmp_path)
    (t / "f.py").write_bytes(b"half-written\n")
    (t / "new.py").write_bytes(b"created by the interrupted run\n")
    _journal(
        t,
        [{"path": "f.py", "backup": "b0", "mode": 0o644}, {"path": "new.py", "backup": None, "mode": None}],
        {"b0": b"a\nb\nc\n"},
    )
    st = run_cli("series", "status", str(s), "--on", str(t))
    assert st.exit_code == 0 and "interrupted transaction pending" in st.stdout
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert "rolled back an interrupted transaction" in r.stdout
    assert snapshot(t) == {"f.py": b"a\nB\nc\n"}


# -- symlinked parents, planted files -------------------------------------------------------


def test_planted_temp_file_symlink_is_not_written_through(tmp_path: Path) -> None:
    s, t, out = _setup(tmp_path)
    (t / ".f.py.dryboot-tmp").symlink_to(out / "secret")
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert (out / "secret").read_bytes() == b"do not touch\n"
    assert (t / "f.py").read_bytes() == b"a\nB\nc\n"


def test_patch_through_symlinked_parent_is_refused(tmp_path: Path) -> None:
    s, t, out = _setup(tmp_path)
    (t / "sub").symlink_to(out)
    (s / "0001-good.patch").write_bytes(GOOD.replace(b"f.py", b"sub/secret"))
    before = snapshot(tmp_path)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 2 and "resolves through the symlink sub" in r.stderr
    assert snapshot(tmp_path) == before


# -- 4. a file where a directory is, or under a file ------------------------------------------

CREATE = b"--- /dev/null\n+++ b/%s\n@@ -0,0 +1 @@\n+new\n"


@pytest.mark.parametrize("where", ["a directory", "under a file"])
def test_create_in_the_way_leaves_no_journal(tmp_path: Path, where: str) -> None:
    s, t, _ = _setup(tmp_path)
    if where == "a directory":
        (t / "d").mkdir()
        (t / "d" / "keep").write_bytes(b"k\n")
        name = b"d"
    else:
        name = b"f.py/x"
    (s / "0002-create.patch").write_bytes(CREATE % name)
    (s / "series").write_text("0001-good.patch\n0002-create.patch\n")
    before = snapshot(tmp_path)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code in (1, 2) and "Traceback" not in r.output, r.output
    assert snapshot(tmp_path) == before
    assert not (t / JOURNAL_DIR).exists()
    # every later run works (status, apply)
    assert run_cli("series", "status", str(s), "--on", str(t)).exit_code in (0, 1)
    (s / "series").write_text("0001-good.patch\n")
    assert run_cli("series", "apply", str(s), "--to", str(t)).exit_code == 0


# -- 3. concurrent runs ---------------------------------------------------------------------

ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def _two_series(tmp: Path) -> tuple[Path, Path, Path]:
    t = tmp / "target"
    t.mkdir()
    (t / "f.py").write_bytes(b"".join(b"l%d\n" % k for k in range(1, 41)))
    stacks = []
    for name, line in (("s1", 5), ("s2", 30)):
        s = tmp / name
        s.mkdir()
        (s / "0001.patch").write_bytes(
            b"--- a/f.py\n+++ b/f.py\n@@ -%d,3 +%d,3 @@\n l%d\n-l%d\n+%s\n l%d\n"
            % (line - 1, line - 1, line - 1, line, name.encode(), line + 1)
        )
        (s / "series").write_text("0001.patch\n")
        stacks.append(s)
    return stacks[0], stacks[1], t


def test_two_concurrent_applies_lose_nothing(tmp_path: Path) -> None:
    s1, s2, t = _two_series(tmp_path)
    for _ in range(4):
        (t / "f.py").write_bytes(b"".join(b"l%d\n" % k for k in range(1, 41)))
        ps = [
            subprocess.Popen([sys.executable, "-m", "dryboot", "series", "apply", str(s), "--to", str(t)], env=ENV)
            for s in (s1, s2)
        ]
        assert [p.wait() for p in ps] == [0, 0]
        data = (t / "f.py").read_bytes()
        assert b"\ns1\n" in data and b"\ns2\n" in data, data


def test_second_run_waits_for_the_lock_and_says_so(tmp_path: Path) -> None:
    s1, _s2, t = _two_series(tmp_path)
    fd = os.open(t, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        p = subprocess.Popen(
            [sys.executable, "-m", "dryboot", "series", "apply", str(s1), "--to", str(t)],
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert p.stderr is not None
        line = p.stderr.readline()
        assert b"waiting for another dryboot run on" in line
        time.sleep(0.2)
        assert p.poll() is None and b"s1" not in (t / "f.py").read_bytes()
    finally:
        os.close(fd)
    assert p.wait(timeout=60) == 0
    assert b"\ns1\n" in (t / "f.py").read_bytes()


# -- full disk, files that cannot be written ------------------------------------------------


def test_full_disk_simulated_restores_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s, t, _ = _setup(tmp_path)
    (t / "g.py").write_bytes(b"a\nb\nc\n")
    (s / "0002-g.patch").write_bytes(GOOD.replace(b"f.py", b"g.py"))
    (s / "series").write_text("0001-good.patch\n0002-g.patch\n")
    real = os.write
    calls = {"n": 0}

    def write(fd: int, data: object) -> int:
        calls["n"] += 1
        if calls["n"] == 2:  # the second file's content
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)  # type: ignore[arg-type]

    monkeypatch.setattr(transaction.os, "write", write)
    before = snapshot(tmp_path)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 2 and "No space left on device" in r.stderr and "every touched file was restored" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert snapshot(tmp_path) == before


def test_full_disk_on_a_tiny_tmpfs(tmp_path: Path) -> None:
    mnt = tmp_path / "small"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if p.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (the simulated ENOSPC test covers this)")
    try:
        t = mnt / "target"
        t.mkdir()
        (t / "big.txt").write_bytes(b"x\n" * 12000)  # 24 KiB: a second copy of it and more does not fit
        (t / "f.py").write_bytes(b"a\nb\nc\n")
        s = tmp_path / "stack"
        s.mkdir()
        grow = b"--- a/big.txt\n+++ b/big.txt\n@@ -1,2 +1,3 @@\n x\n+" + b"y" * 60000 + b"\n x\n"
        (s / "0001-f.patch").write_bytes(GOOD)
        (s / "0002-big.patch").write_bytes(grow)
        (s / "series").write_text("0001-f.patch\n0002-big.patch\n")
        before = snapshot(t)
        r = run_cli("series", "apply", str(s), "--to", str(t))
        assert r.exit_code == 2 and "every touched file was restored" in r.stderr, r.output
        assert snapshot(t) == before
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_read_only_file_is_patched_and_keeps_its_mode(tmp_path: Path) -> None:
    s, t, _ = _setup(tmp_path)
    os.chmod(t / "f.py", 0o444)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert (t / "f.py").read_bytes() == b"a\nB\nc\n"
    assert os.stat(t / "f.py").st_mode & 0o777 == 0o444


def test_unwritable_directory_restores_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As root, chmod cannot make a directory unwritable: the refusal is simulated where the
    temporary file of the second file is created."""
    s, t, _ = _setup(tmp_path)
    (t / "sub").mkdir()
    (t / "sub" / "g.py").write_bytes(b"a\nb\nc\n")
    (s / "0002-g.patch").write_bytes(GOOD.replace(b"f.py", b"sub/g.py"))
    (s / "series").write_text("0001-good.patch\n0002-g.patch\n")
    real = os.open

    def fake_open(path: str, flags: int, mode: int = 0o777, **kw: object) -> int:
        if str(path).endswith(".g.py.dryboot-tmp"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, flags, mode, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(transaction.os, "open", fake_open)
    before = snapshot(tmp_path)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 2 and "Permission denied" in r.stderr
    assert snapshot(tmp_path) == before
