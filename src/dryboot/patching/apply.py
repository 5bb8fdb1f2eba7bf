"""Applying patches to a target directory, in memory, with a per-hunk census.

A :class:`Tree` is the target directory seen through pending changes (nothing is written until
a :class:`~dryboot.patching.transaction.Transaction` commits it). :func:`apply_patch` applies one
parsed patch with GNU patch's semantics (``-pN``, ``-R``, ``--fuzz N``; never guessing a
reversed patch) and git's file operations (create, delete, rename, copy, mode change).
:func:`patch_status` tests every hunk both ways (old side present = applicable, new side
present = applied).
"""

from __future__ import annotations

import os
import stat

from dryboot.errors import InputError
from dryboot.inputs import file_kind
from dryboot.patching._record import field, record
from dryboot.patching.parse import MINUS, PLUS, SP, FileSection, Hunk, PatchFile
from dryboot.patching.paths import confine
from dryboot.patching.place import FileRun, HunkResult, Pieces, run_hunks, sides, split_keep

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (start-up time)
    from collections.abc import Iterable, Sequence
    from typing import Any


class Tree:
    """A directory (``root``) with pending changes layered on top.

    Paths are target-relative str with ``/``. ``read`` returns bytes, or None for an absent
    file. A child made with :meth:`child` sees its parent's changes; :meth:`merge_into_parent`
    keeps the child's. Contents are read lazily from disk and cached.
    """

    def __init__(self, root: str, parent: Tree | None = None) -> None:
        self.root = root
        self.parent = parent
        self.changes: dict[str, bytes | None] = {}
        self.modes: dict[str, int] = {}
        self._disk: dict[str, bytes | None] = {} if parent is None else parent._disk
        self._split: dict[str, tuple[bytes, list[bytes], Pieces | None]] = {} if parent is None else parent._split
        self._confined: dict[str, str] = {} if parent is None else parent._confined
        self._disk_modes: dict[str, int | None] = {} if parent is None else parent._disk_modes
        self._linesets: dict[str, set[bytes] | int] = {} if parent is None else parent._linesets

    @classmethod
    def open(cls, root: str, source: str = "--to") -> Tree:
        """A tree over directory ``root``; :class:`InputError` if it is not a directory."""
        if not os.path.isdir(root):
            raise InputError(source, None, f"{root}: not a directory")
        return cls(os.path.realpath(root))

    def confine(self, rel: str, source: str, where: str | None = None) -> str:
        """:func:`~dryboot.patching.paths.confine` under ``root``, remembered per name (the
        directory is not written while a tree is in use, so a name checked once stays so)."""
        got = self._confined.get(rel)
        if got is None:
            got = self._confined[rel] = confine(self.root, rel, source, where)
        return got

    def child(self) -> Tree:
        return Tree(self.root, self)

    def merge_into_parent(self) -> None:
        assert self.parent is not None
        self.parent.changes.update(self.changes)
        self.parent.modes.update(self.modes)

    def all_changes(self) -> tuple[dict[str, bytes | None], dict[str, int]]:
        """Every pending change of this tree and its ancestors (content, modes)."""
        chain: list[Tree] = []
        t: Tree | None = self
        while t is not None:
            chain.append(t)
            t = t.parent
        ch: dict[str, bytes | None] = {}
        md: dict[str, int] = {}
        for t in reversed(chain):
            ch.update(t.changes)
            md.update(t.modes)
        return ch, md

    def read(self, rel: str) -> bytes | None:
        t: Tree | None = self
        while t is not None:
            if rel in t.changes:
                return t.changes[rel]
            t = t.parent
        if rel not in self._disk:
            path = os.path.join(self.root, rel)
            try:
                st = os.lstat(path)
                if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                    # a FIFO would block the read, a device never end: refused, named (issue 28)
                    raise InputError(path, None, f"is {file_kind(st.st_mode)}, not a regular file")
                self._disk[rel] = _read_file(path, st.st_size) if stat.S_ISREG(st.st_mode) else None
            except FileNotFoundError:
                self._disk[rel] = None
            except NotADirectoryError:
                self._disk[rel] = None
        return self._disk[rel]

    def blocked(self, rel: str) -> str | None:
        """Why a file cannot be created at ``rel`` (absent from the tree), else None: a directory
        where it goes, or a file (on disk or pending in the layers) where one of its parent
        directories must be. The same refusal as the commit's (see
        :func:`~dryboot.patching.transaction.commit`), made while judging, so that ``series
        status`` says what ``series apply`` will do (issue 28); GNU patch fails such a file too."""
        parts = rel.split("/")
        for k in range(1, len(parts)):
            q = "/".join(parts[:k])
            if self.read(q) is not None:
                return f"{rel}: {q} is a file, not a directory"
        try:
            st = os.lstat(os.path.join(self.root, rel))
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            return f"{rel}: a directory is where the patch creates a file"
        under = rel + "/"
        changes, _ = self.all_changes()
        if any(data is not None and p.startswith(under) for p, data in changes.items()):
            return f"{rel}: an earlier patch creates files under it (a directory) where the patch creates a file"
        return None

    def mode(self, rel: str) -> int | None:
        """Permission bits of ``rel`` (pending or on disk), None when absent."""
        t: Tree | None = self
        while t is not None:
            if rel in t.modes:
                return t.modes[rel]
            t = t.parent
        if rel not in self._disk_modes:  # read once, like the contents
            try:
                self._disk_modes[rel] = stat.S_IMODE(os.lstat(os.path.join(self.root, rel)).st_mode)
            except OSError:
                self._disk_modes[rel] = None
        return self._disk_modes[rel]

    def split(self, rel: str, data: bytes) -> list[bytes]:
        """``data`` (the content of ``rel`` in some layer) split into lines that keep their LF;
        the last split of each path is remembered (the list is shared: do not change it)."""
        got = self._split.get(rel)
        if got is None or got[0] is not data:
            got = self._split[rel] = (data, split_keep(data), None)
        return got[1]

    def pieces(self, rel: str, data: bytes) -> Pieces | None:
        """Where the bytes of :meth:`split`'s lines of ``data`` live (see
        :class:`~dryboot.patching.place.Pieces`), remembered as :meth:`split` is; None for a
        file under 64 KiB (joining its lines costs less than tracking them)."""
        if len(data) < 1 << 16:
            return None
        lines = self.split(rel, data)
        got = self._split[rel]
        if got[2] is None:
            got = self._split[rel] = (data, lines, Pieces.of(data, lines))
        assert got[2] is not None
        return got[2]

    def disk_lineset(self, rel: str, data: bytes) -> set[bytes] | None:
        """The set of the lines of ``data`` when it is ``rel`` as read from disk, is large (256 KiB
        or more) and has been asked for before (a file searched again and again, as the proof of the applied prefix
        searches the target for each patch's new side); else None."""
        if len(data) < 1 << 18 or data is not self._disk.get(rel):
            return None  # small: one search costs less than the set
        got = self._linesets.get(rel, 0)
        if isinstance(got, int):
            if got < 1:
                self._linesets[rel] = got + 1
                return None
            got = self._linesets[rel] = set(self.split(rel, data))
        return got

    def remember_split(self, rel: str, data: bytes, lines: list[bytes], pieces: Pieces | None = None) -> None:
        """Record that ``lines`` is ``data`` split (see :meth:`split`), and ``pieces`` where their
        bytes live, e.g. as the hunk engine assembled them."""
        self._split[rel] = (data, lines, pieces)

    def forget(self, rels: Iterable[str]) -> None:
        """Drop what is cached about the files ``rels`` (contents read from disk, their lines,
        line sets): memory the run no longer needs once no later patch reads them (a file's
        pending changes are kept; a later read of a forgotten file reads the disk again,
        unchanged)."""
        for rel in rels:
            if rel:
                self._split.pop(rel, None)
                self._disk.pop(rel, None)
                self._linesets.pop(rel, None)

    def write(self, rel: str, data: bytes, mode: int | None = None) -> None:
        self.changes[rel] = data
        if mode is not None:
            self.modes[rel] = mode

    def delete(self, rel: str) -> None:
        self.changes[rel] = None


def _read_file(path: str, size: int) -> bytes:
    """The bytes of the file at ``path`` (``size`` as last seen; read to the end whatever it is)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        parts = [os.read(fd, size + 1)]
        while parts[-1]:
            parts.append(os.read(fd, 1 << 20))
    finally:
        os.close(fd)
    return parts[0] if len(parts) == 2 else b"".join(parts)


@record
class FileOutcome:
    """One file section's result: ``op`` is ``modify``, ``create``, ``delete``, ``rename``,
    ``copy`` or ``mode``; ``path`` the target-relative file (``new_path`` for rename/copy);
    ``results`` the per-hunk census; ``error`` a file-level failure (empty when fine)."""

    path: str
    op: str
    results: list[HunkResult] = field(default_factory=list)
    error: str = ""
    new_path: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and all(r.status != "failed" for r in self.results)


@record
class PatchOutcome:
    """Result of applying one patch: per-file outcomes and the ``tree`` layer holding the
    patched contents (merge it into its parent to keep them)."""

    files: list[FileOutcome]
    tree: Tree

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.files)

    def hunks(self) -> list[HunkResult]:
        return [r for f in self.files for r in f.results]

    def offset_hunks(self) -> int:
        """Hunks GNU patch reports "(offset N lines)" for."""
        return sum(1 for r in self.hunks() if r.offset and r.status != "failed")

    def fuzz_hunks(self) -> int:
        return sum(1 for r in self.hunks() if r.status == "fuzz")


def _best_name(tree: Tree, names: list[str]) -> str:
    """GNU patch's choice among existing candidate names: fewest components, then shortest
    basename, then shortest name; the first name when none exists."""
    existing = [n for n in names if tree.read(n) is not None]
    if not existing:
        return names[0]
    return min(existing, key=lambda n: (n.count("/"), len(n.rsplit("/", 1)[-1]), len(n)))


def _strip(sec: FileSection, which: str, strip: int, source: str) -> str | None:
    nm = sec.old if which == "old" else sec.new
    if nm is None:
        return None
    out = nm.stripped(strip)
    if out is None:
        raise InputError(
            source, f"line {sec.lineno}", f"cannot strip {strip} leading components from {os.fsdecode(nm.raw)!r}"
        )
    return out


def _apply_section(
    tree: Tree,
    sec: FileSection,
    patch: PatchFile,
    strip: int,
    reverse: bool,
    fuzz: int,
    measure: bool,
    check_modes: bool = False,
    prefilter: bool = False,
    quick: bool = False,
) -> FileOutcome:
    src = patch.source
    where = f"line {sec.lineno}"
    old_absent, new_absent = sec.old_absent, sec.new_absent
    old_mode, new_mode = sec.old_mode, sec.new_mode
    old_name = None if old_absent and sec.old and sec.old.raw == b"/dev/null" else _strip(sec, "old", strip, src)
    new_name = None if new_absent and sec.new and sec.new.raw == b"/dev/null" else _strip(sec, "new", strip, src)
    if reverse:
        old_absent, new_absent = new_absent, old_absent
        old_mode, new_mode = new_mode, old_mode
        old_name, new_name = new_name, old_name
    if old_absent and new_absent:
        raise InputError(src, where, "both sides of this file section are /dev/null")
    if old_absent:
        op, path = "create", new_name
    elif new_absent:
        op, path = "delete", old_name
    elif sec.rename or sec.copy:
        op, path = ("rename" if sec.rename else "copy"), old_name
    elif sec.git:
        op, path = "modify", new_name or old_name
    else:
        cands = [n for n in (old_name, new_name) if n]
        path = _best_name(tree, [tree.confine(n, src, where) for n in cands])
        op = "modify"
    assert path is not None
    path = tree.confine(path, src, where)
    out = FileOutcome(path, op, [], "", "")  # every field given: the record's quick path
    target = path
    if op in ("rename", "copy"):
        assert new_name is not None
        target = tree.confine(new_name, src, where)
        out.new_path = target
    if op == "modify" and not sec.hunks and old_mode != new_mode:
        out.op = "mode"

    def fail_all(reason: str) -> FileOutcome:
        out.error = reason
        out.results = [HunkResult(h.number, "failed", 0, _first(h, reverse), evidence=reason) for h in sec.hunks]
        return out

    cur = tree.read(path)
    if op == "create":
        if cur is not None and cur != b"":
            return fail_all(f"{path}: the patch creates this file but it already exists")
        why = tree.blocked(path) if cur is None else None
        if why is not None:
            return fail_all(why)
        cur = b""
    elif cur is None:
        if sec.git or not sec.hunks or any(_side_lines(h, (SP, PLUS) if reverse else (SP, MINUS)) for h in sec.hunks):
            return fail_all(f"{path}: file to patch does not exist")
        # GNU patch: a plain (non-git) diff whose hunks have empty old sides
        # ("@@ -0,0 +1,N @@") creates the missing file, even without /dev/null
        op = out.op = "create"
        cur = b""
    if op in ("rename", "copy") and target != path and tree.read(target) is not None:
        return fail_all(f"{target}: the {op} target already exists")
    if op in ("rename", "copy") and target != path:
        why = tree.blocked(target)
        if why is not None:
            return fail_all(why)

    if check_modes and old_mode is not None and new_mode is not None and old_mode != new_mode:
        have = tree.mode(path)
        if have is not None and bool(have & 0o111) != bool(old_mode & 0o111):
            return fail_all(
                f"{path}: mode is {have:04o}; the patch changes it from "
                f"{old_mode & 0o777:04o} to {new_mode & 0o777:04o}"
            )
    if prefilter:
        run = _prefiltered(tree, path, cur, patch, sec, reverse, fuzz, measure, quick)
    else:
        run = _Ran.of(
            run_hunks(tree.split(path, cur), _sides(patch, sec, reverse), fuzz, measure, tree.pieces(path, cur), False)
        )
    out.results = run.results
    if not run.ok:
        return out
    data = run.data
    if run.lines is not None and data is not cur:
        tree.remember_split(target, data, run.lines, run.pieces)  # the next patch on this file needs no split
    cur_mode = tree.mode(path)
    if op == "delete":
        if data:
            out.error = f"{path}: not deleting: content remains after removing the patch's lines"
            return out
        tree.delete(path)
        return out
    mode = None
    if op == "create":
        if new_mode is not None:
            mode = 0o755 if new_mode & 0o111 else 0o644
    elif new_mode is not None and old_mode is not None and old_mode != new_mode and cur_mode is not None:
        # git mode changes: the file gets exactly the patch's permission bits (0755 / 0644),
        # whatever it had, as git apply and GNU patch 2.7.6 both do
        mode = new_mode & 0o777
        if mode == cur_mode:
            mode = None
    if op in ("rename", "copy"):
        tree.write(target, data, mode if mode is not None else cur_mode)
        if op == "rename" and target != path:
            tree.delete(path)
    elif data != cur or mode is not None or op == "create":
        tree.write(path, data, mode)
    return out


def apply_patch(
    tree: Tree,
    patch: PatchFile,
    strip: int = 1,
    reverse: bool = False,
    fuzz: int = 0,
    measure: bool = True,
    check_modes: bool = False,
    prefilter: bool = False,
    quick: bool = False,
) -> PatchOutcome:
    """Apply ``patch`` to ``tree`` in a new child layer (``outcome.tree``), GNU patch style.

    With ``reverse`` the file sections are undone last first (``outcome.files`` stays in patch
    order): a patch holding several commits that touch the same lines (an mbox of ``git
    format-patch`` output) then gets back to where it started, as ``git apply -R`` does.

    :param strip: strip level (``-pN``). :param reverse: ``-R``.
    :param fuzz: maximum fuzz accepted (GNU ``--fuzz``; 0 = refuse any fuzz).
    :param measure: measure the fuzz a failed hunk would need and collect evidence.
    :param check_modes: a git mode change fails when the file's executable bit is not the
        one the patch changes it from (used to tell applied from applicable).
    :param prefilter: fail at once, without searching, every hunk whose changed lines do not
        occur in the file (the outcome is the same; only faster when most hunks do not fit).
    :param quick: the caller needs only ``ok``: with ``prefilter``, stop at the first hunk that
        cannot fit (the later hunks and sections are reported failed, "not tried").
    :raises InputError: invalid patch (counts, stray lines), unsafe paths, unstrippable names.
    """
    patch.require_valid()
    layer = tree.child()
    order = list(enumerate(patch.sections))
    if reverse:
        order.reverse()
    done: dict[int, FileOutcome] = {}
    for k, sec in order:
        if quick and any(not f.ok for f in done.values()):
            done[k] = FileOutcome("", "modify", error="not tried")
            continue
        done[k] = _apply_section(layer, sec, patch, strip, reverse, fuzz, measure, check_modes, prefilter, quick)
    return PatchOutcome([done[k] for k in range(len(patch.sections))], layer)


def _has_block(data: bytes, block: list[bytes], needle: bytes | None = None) -> bool:
    """Whether ``block`` (lines with their LF; ``needle`` their concatenation, when known)
    occurs in ``data`` starting at a line start."""
    if not block:
        return True
    if needle is None:
        needle = b"".join(block)
    if not needle.endswith(b"\n"):
        return data.endswith(needle) and (len(data) == len(needle) or data[-len(needle) - 1] == 0x0A)
    pos = data.find(needle)
    while pos > 0 and data[pos - 1] != 0x0A:
        pos = data.find(needle, pos + 1)
    return pos >= 0


def _side_lines(h: Hunk, kinds: tuple[int, int]) -> list[bytes]:
    return [bl.text + (b"\n" if bl.newline else b"") for bl in h.lines if bl.kind in kinds]


def _core(h: Hunk, reverse: bool, fuzz: int) -> list[bytes]:
    """The lines of a hunk's sought side that every placement at fuzz <= ``fuzz`` must match
    contiguously: that side without the context lines fuzz may drop at either end."""
    lines = _side_lines(h, (SP, PLUS) if reverse else (SP, MINUS))
    lead = next((k for k, bl in enumerate(h.lines) if bl.kind != SP), len(h.lines))
    trail = next((k for k, bl in enumerate(reversed(h.lines)) if bl.kind != SP), len(h.lines))
    a, b = min(fuzz, lead), min(fuzz, trail)
    return lines[a : len(lines) - b]


@record
class _Ran:
    """A file's hunks run (by the locator, or rejected beforehand): output and census. Only the
    locator's public results are used, so the locator's own types may change freely."""

    data: bytes
    results: list[HunkResult]
    lines: list[bytes] | None = None
    pieces: Pieces | None = None

    @classmethod
    def of(cls, run: FileRun) -> _Ran:
        return cls(run.data, list(run.results), run.lines, run.pieces)

    @property
    def ok(self) -> bool:
        return all(r.status != "failed" for r in self.results)


def _first(h: Hunk, reverse: bool) -> int:
    """The line a hunk's sought side starts at per its header (the line after, when empty)."""
    start, count = (h.new_start, h.new_count) if reverse else (h.old_start, h.old_count)
    return start + 1 if count == 0 else start


class _Core:
    """One hunk's prefilter data in one direction: ``lines``, the sought side without the
    context fuzz may drop (see :func:`_core`); ``made``, the lines its applied side produces;
    :meth:`needle`, the lines joined (made on first need)."""

    __slots__ = ("_needle", "lines", "made")

    def __init__(self, lines: list[bytes], made: Sequence[bytes]) -> None:
        self.lines = lines
        self.made = made
        self._needle: bytes | None = None

    def needle(self) -> bytes:
        if self._needle is None:
            self._needle = b"".join(self.lines)
        return self._needle


def _cores(patch: PatchFile, sec: FileSection, reverse: bool, fuzz: int) -> list[_Core]:
    """Per hunk of ``sec``, its :class:`_Core`; computed once per patch, direction and fuzz
    (from the hunk's own lines when it is plain, else from its forward sides)."""
    key = ("core", id(sec), reverse, fuzz)
    got = patch.cache.get(key)
    if got is None:
        got = []
        for h in sec.hunks:
            plain = h.plain_sides()
            if plain is not None:
                old, new, lead, trail = plain
                if lead and not trail and lead == len(old) == len(new):
                    trail = lead  # all context (as _core counts it)
            else:
                hs = sides(h)
                old, new, lead = hs.old, hs.new, hs.lead
                trail = len(hs.body) if hs.lead == len(hs.body) else hs.trail
            sought, made = (new, old) if reverse else (old, new)
            # the sought side without the context lines fuzz may drop at either end (as _core)
            a, b = min(fuzz, lead), min(fuzz, trail)
            got.append(_Core(list(sought[a : len(sought) - b]), made))
        patch.cache[key] = got
    return got


def _sides(patch: PatchFile, sec: FileSection, reverse: bool) -> list[Any]:
    """The locator's form of ``sec``'s hunks, computed once per patch and direction."""
    key = (id(sec), reverse)
    got = patch.cache.get(key)
    if got is None:
        got = patch.cache[key] = [sides(h, reverse) for h in sec.hunks]
    return list(got)


def _probe(h: Hunk, reverse: bool) -> bytes | None:
    """One line the hunk's sought side holds at every fuzz level, as a file holds it (text and
    LF): its first removed line, or first added line when ``reverse``; None when the body is not
    plain (see :meth:`~dryboot.patching.parse.Hunk.plain_body`) or has no such line. Fuzz trims
    only context, so when this line is nowhere in a file the sought side is not there either:
    one ``in`` test on the file's bytes instead of building the hunk's sides (a hunk of a large
    generated file may have tens of thousands of lines)."""
    body = h.plain_body()
    if body is None:
        return None
    rows, kinds = body
    k = kinds.find(PLUS if reverse else MINUS)
    return None if k < 0 else rows[k][1:] + b"\n"


def _prefiltered(
    tree: Tree,
    path: str,
    data: bytes,
    patch: PatchFile,
    sec: FileSection,
    reverse: bool,
    fuzz: int,
    measure: bool,
    quick: bool = False,
) -> _Ran:
    """:func:`run_hunks` for the hunks that can fit; the others fail without a search. A hunk
    is rejected only when its core is absent and no earlier hunk's new side could supply it."""
    parsed = sec.hunks
    if quick and parsed:
        probe = _probe(parsed[0], reverse)
        if probe is not None and probe not in data:
            # the first hunk's sought side is absent (and no earlier hunk supplies anything):
            # rejected without building any hunk's sides, as the search below would reject it
            first = parsed[0]
            return _Ran(
                data,
                [HunkResult(first.number, "failed", 0, _first(first, reverse))]
                + [HunkResult(x.number, "failed", evidence="not tried") for x in parsed[1:]],
            )
    rejected: dict[int, HunkResult] = {}
    made: list[Sequence[bytes]] = []  # what the hunks so far produce (a set made on first need)
    produced: set[bytes] | None = None
    lineset = tree.disk_lineset(path, data)  # a line missing from the file: the block is too
    for h, c in zip(parsed, _cores(patch, sec, reverse, fuzz), strict=True):
        core = c.lines
        absent = core and (
            (lineset is not None and not lineset.issuperset(core)) or not _has_block(data, core, c.needle())
        )
        if absent and produced is None:
            produced = set().union(*made)
        if absent and produced is not None and not produced.intersection(core):
            rejected[h.number] = HunkResult(h.number, "failed", 0, _first(h, reverse))
            if quick:
                return _Ran(
                    data,
                    [rejected.get(x.number) or HunkResult(x.number, "failed", evidence="not tried") for x in parsed],
                )
        made.append(c.made)
        if produced is not None:
            produced.update(c.made)
    hunks = _sides(patch, sec, reverse)
    if not rejected:
        return _Ran.of(run_hunks(tree.split(path, data), hunks, fuzz, measure, tree.pieces(path, data), False))
    keep = [s for h, s in zip(parsed, hunks, strict=True) if h.number not in rejected]
    if not keep:
        return _Ran(data, [rejected[h.number] for h in parsed])
    run = _Ran.of(run_hunks(tree.split(path, data), keep, fuzz, measure, tree.pieces(path, data), False))
    got = {r.number: r for r in run.results}
    results = [rejected[h.number] if h.number in rejected else got[h.number] for h in parsed]
    return _Ran(run.data, results, run.lines, run.pieces)


@record
class HunkStatus:
    """One hunk's state in a target: ``applicable`` (old side found), ``applied`` (new side
    found), ``conflict`` (neither); ``forward``/``backward`` are the census of each direction."""

    file: str
    number: int
    state: str
    forward: HunkResult
    backward: HunkResult | None


@record
class PatchStatus:
    """A patch's state: ``applicable``, ``applied``, ``partial`` or ``conflict``, with the
    per-hunk evidence and the forward outcome (its layer holds the applied result); ``note``
    says why when the state needed a decision (both directions fit, applied out of order)."""

    state: str
    hunks: list[HunkStatus]
    forward: PatchOutcome
    backward: PatchOutcome | None
    note: str = ""


def patch_status(
    tree: Tree, patch: PatchFile, strip: int = 1, reverse: bool = False, fuzz: int = 0, both: bool = True
) -> PatchStatus:
    """Test ``patch`` forward and backward on ``tree`` (nothing is changed).

    A patch is *applicable* when every hunk's old side is present (GNU patch would apply it),
    *applied* when every hunk's new side is present, *partial* when each hunk is one or the
    other, *conflict* otherwise. With ``both=False`` the backward test runs only when the
    forward one fails.
    """
    fwd = apply_patch(tree, patch, strip, reverse, fuzz)
    bwd: PatchOutcome | None = None
    if both or not fwd.ok:
        bwd = apply_patch(tree, patch, strip, not reverse, 0, measure=False)
    hs: list[HunkStatus] = []
    for k, ff in enumerate(fwd.files):
        bf = bwd.files[k] if bwd is not None else None
        frs = ff.results or [HunkResult(0, "failed" if ff.error else "exact", 0, 0, evidence=ff.error)]
        brs = (
            (bf.results or [HunkResult(0, "failed" if bf.error else "exact", 0, 0, evidence=bf.error)])
            if bf is not None
            else []
        )
        for j, fr in enumerate(frs):
            br = brs[j] if j < len(brs) else None
            f_ok = fr.status != "failed" and not ff.error
            b_ok = br is not None and br.status != "failed" and bf is not None and not bf.error
            state = "applicable" if f_ok else ("applied" if b_ok else "conflict")
            hs.append(HunkStatus(ff.new_path or ff.path, fr.number, state, fr, br))
    states = {h.state for h in hs}
    if fwd.ok:
        st = "applicable"
    elif bwd is not None and bwd.ok:
        st = "applied"
    elif "conflict" not in states:
        st = "partial"
    else:
        st = "conflict"
    return PatchStatus(st, hs, fwd, bwd)
