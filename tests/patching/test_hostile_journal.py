"""Every value dryboot reads from a journal found in the target, turned hostile (issue 28): the
mode (a setuid/setgid roll-back), the backup's name, size, type and permission bits, the
journal's own type and size, the path's encoding and length, the types of every field. Each is
refused in one line (exit 2, nothing touched) or masked as a patch's mode is."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dryboot.patching import transaction
from dryboot.patching.paths import JOURNAL_DIR

from .helpers import run_cli, snapshot
from .test_hostile_target import _journal, _refused, _setup

REPO = Path(__file__).resolve().parents[2]


def _rolls_back(s: Path, t: Path) -> None:
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert "rolled back an interrupted transaction" in r.stdout


@pytest.mark.parametrize(("mode", "backup_mode", "want"), [(3565, 0o755, 0o755), (0o104755, None, None)])
def test_journal_mode_never_sets_setuid_setgid_or_sticky(
    tmp_path: Path, mode: int, backup_mode: int | None, want: int | None
) -> None:
    """3565 is 0o6755: before the fix the roll-back left f.py mode 6755 (setuid + setgid).
    Above 0o7777 (a git mode, 104755) is not permission bits: refused."""
    s, t, _ = _setup(tmp_path)
    _journal(t, [{"path": "f.py", "backup": "b0", "mode": mode}], {"b0": b"a\nb\nc\n"})
    if want is None:
        _refused(tmp_path, s, t, "is not permission bits")
        return
    assert backup_mode is not None
    os.chmod(t / JOURNAL_DIR / "b0", backup_mode)
    _rolls_back(s, t)
    got = stat.S_IMODE(os.stat(t / "f.py").st_mode)
    assert got == want, oct(got)
    assert (t / "f.py").read_bytes() == b"a\nB\nc\n"


def test_journal_mode_is_never_wider_than_the_backup(tmp_path: Path) -> None:
    """A backup hard-linked to a private file outside, journalled 0644: restored no wider than
    the file it is (0600)."""
    s, t, out = _setup(tmp_path)
    (out / "private").write_bytes(b"a\nb\nc\n")
    os.chmod(out / "private", 0o600)
    _journal(t, [{"path": "f.py", "backup": "b0", "mode": 0o644}])
    os.link(out / "private", t / JOURNAL_DIR / "b0")
    _rolls_back(s, t)
    assert stat.S_IMODE(os.stat(t / "f.py").st_mode) == 0o600


def test_status_predicts_the_masked_mode(tmp_path: Path) -> None:
    _s, t, _ = _setup(tmp_path)
    _journal(t, [{"path": "f.py", "backup": "b0", "mode": 0o6755}], {"b0": b"a\nb\nc\n"})
    os.chmod(t / JOURNAL_DIR / "b0", 0o755)
    entries = transaction.pending(str(t))
    assert entries == [{"path": "f.py", "backup": "b0", "mode": 0o755}]
    _changes, modes = transaction.rolled_back(str(t), entries)
    assert modes == {"f.py": 0o755}


@pytest.mark.parametrize(
    ("entries", "needle"),
    [
        ([{"path": "f.py", "backup": "b0", "mode": -1}], "mode -1 is not permission bits"),
        ([{"path": "f.py", "backup": "b0", "mode": True}], "mode True is not permission bits"),
        ([{"path": "f.py", "backup": "b0", "mode": 420.0}], "mode 420.0 is not permission bits"),
        ([{"path": "f.py", "backup": "b0", "mode": None}], "mode None is not permission bits"),
        ([{"path": "f.py", "backup": "b1", "mode": 420}], "backup 'b1' is not this entry's (b0)"),
        ([{"path": "f.py", "backup": "b00", "mode": 420}], "backup 'b00' is not this entry's (b0)"),
        ([{"path": "f.py", "backup": "b٠", "mode": 420}], "is not a journal file name"),
        ([{"path": "f.py", "backup": 0, "mode": 420}], "backup 0 is not a journal file name"),
        (
            [{"path": "f.py", "backup": "b0", "mode": 420}, {"path": "g.py", "backup": "b0", "mode": 420}],
            "entry 2: backup 'b0' is not this entry's (b1)",
        ),
        ([{"path": "f\ud800.py", "backup": None, "mode": None}], "is not inside the target"),
        ([{"path": "d/" + "x" * 5000, "backup": None, "mode": None}], "is not inside the target"),
        ([{"path": "x" * 300 + "/f.py", "backup": None, "mode": None}], "is not inside the target"),
        ([{"path": None, "backup": None, "mode": None}], "path None is not inside the target"),
        ([{"path": "f.py", "backup": None, "mode": None, "extra": 1}], "is not {path, backup, mode}"),
        ([None], "entry 1 is not {path, backup, mode}"),
        ("f.py", "not a list of entries"),
    ],
    ids=[
        "mode-negative",
        "mode-bool",
        "mode-float",
        "mode-null-with-backup",
        "backup-other-entry",
        "backup-leading-zero",
        "backup-unicode-digit",
        "backup-int",
        "backup-shared",
        "path-lone-surrogate",
        "path-too-long",
        "path-component-too-long",
        "path-null",
        "extra-field",
        "entry-null",
        "not-a-list",
    ],
)
def test_hostile_journal_field_is_refused(tmp_path: Path, entries: object, needle: str) -> None:
    s, t, _ = _setup(tmp_path)
    _journal(t, entries, {"b0": b"a\nb\nc\n", "b1": b"x\n"})
    _refused(tmp_path, s, t, needle)


def _refused_unread(s: Path, t: Path, needle: str) -> None:
    """:func:`_refused` without its snapshots (they would read the huge sparse file)."""
    for args in (("series", "apply", str(s), "--to", str(t)), ("series", "status", str(s), "--on", str(t))):
        r = run_cli(*args)
        assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr, r.stderr
    assert (t / "f.py").read_bytes() == b"a\nb\nc\n"


def test_huge_backup_is_refused_unread(tmp_path: Path) -> None:
    s, t, _ = _setup(tmp_path)
    _journal(t, [{"path": "f.py", "backup": "b0", "mode": 0o644}])
    with open(t / JOURNAL_DIR / "b0", "wb") as fh:  # sparse: no disk used
        fh.truncate(transaction.MAX_BACKUP + 1)
    _refused_unread(s, t, f"backup b0 is {transaction.MAX_BACKUP + 1} bytes, above")


def test_huge_journal_is_refused_unread(tmp_path: Path) -> None:
    s, t, _ = _setup(tmp_path)
    (t / JOURNAL_DIR).mkdir()
    with open(t / JOURNAL_DIR / "journal.json", "wb") as fh:
        fh.truncate(transaction.MAX_JOURNAL + 1)
    _refused_unread(s, t, f"cannot read it: {transaction.MAX_JOURNAL + 1} bytes, above")


def test_deeply_nested_journal_is_refused(tmp_path: Path) -> None:
    s, t, _ = _setup(tmp_path)
    (t / JOURNAL_DIR).mkdir()
    (t / JOURNAL_DIR / "journal.json").write_text("[" * 100_000 + "]" * 100_000)
    _refused(tmp_path, s, t, "damaged journal")


def test_non_utf8_journal_is_refused(tmp_path: Path) -> None:
    s, t, _ = _setup(tmp_path)
    (t / JOURNAL_DIR).mkdir()
    (t / JOURNAL_DIR / "journal.json").write_bytes(b'[{"path": "f\xff.py", "backup": null, "mode": null}]')
    _refused(tmp_path, s, t, "unreadable")


def _cli_no_hang(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    try:
        return subprocess.run(
            [sys.executable, "-m", "dryboot", *args], cwd=tmp, capture_output=True, text=True, env=env, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"dryboot {' '.join(args)} hung")


@pytest.mark.parametrize("which", ["journal", "backup"])
def test_fifo_in_the_journal_does_not_hang(tmp_path: Path, which: str) -> None:
    s, t, _ = _setup(tmp_path)
    j = t / JOURNAL_DIR
    j.mkdir()
    if which == "journal":
        os.mkfifo(j / "journal.json")
        needle = "cannot read it: not a regular file"
    else:
        (j / "journal.json").write_text(json.dumps([{"path": "f.py", "backup": "b0", "mode": 420}]))
        os.mkfifo(j / "b0")
        needle = "backup b0 is not a regular file"
    for args in (("series", "apply", str(s), "--to", str(t)), ("series", "status", str(s), "--on", str(t))):
        r = _cli_no_hang(tmp_path, *args)
        assert r.returncode == 2 and needle in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert (t / "f.py").read_bytes() == b"a\nb\nc\n"


def test_interrupted_mode_change_rolls_back_after_a_kill(tmp_path: Path) -> None:
    """A mode-only change's backup is a copy (a hard link's mode would change with the file):
    the journal left by a killed run restores the old mode."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "x.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(root / "x.sh", 0o755)
    real_unlink = os.unlink

    def die_at_commit_point(path: str | os.PathLike[str], *a: object, **k: object) -> None:
        if str(path).endswith("journal.json"):
            raise SystemExit("killed")  # the journal stays, as after kill -9
        real_unlink(path)

    mp = pytest.MonkeyPatch()
    mp.setattr(transaction.os, "unlink", die_at_commit_point)
    mp.setattr(transaction, "_restore", lambda root, entries: None)  # no in-process roll-back
    try:
        with pytest.raises(SystemExit):
            transaction.commit(str(root), {}, {"x.sh": 0o644})
    finally:
        mp.undo()
    assert stat.S_IMODE(os.stat(root / "x.sh").st_mode) == 0o644
    assert transaction.recover(str(root)) is not None
    assert stat.S_IMODE(os.stat(root / "x.sh").st_mode) == 0o755
    assert snapshot(root) == {"x.sh": b"#!/bin/sh\n"}
