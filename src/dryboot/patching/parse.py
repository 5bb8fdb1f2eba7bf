"""Tolerant, byte-exact parser of unified-diff patch files.

A patch file is read as bytes and split on LF only (a CR is content). It may start with free
prose; file sections start at ``diff --git``, ``Index:``, or a ``--- ``/``+++ ``/``@@ -`` triple.
git extended headers (modes, renames, copies, ``index``) are understood; binary patches, ed
scripts, context and normal diffs are rejected with :class:`~dryboot.errors.InputError`.

Hunk bodies are delimited by structure, not by the ``@@`` counts, so that a patch whose counts
are wrong still parses: each :class:`Hunk` then carries :class:`Problem` records saying which hunk
is wrong and by how much (see :mod:`dryboot.patching.recount`). Appliers call
:meth:`PatchFile.require_valid` first.
"""

from __future__ import annotations

import os
from io import BytesIO
from itertools import compress, repeat
from operator import itemgetter, methodcaller, ne

from dryboot.errors import InputError
from dryboot.inputs import read_regular
from dryboot.patching._record import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (start-up time)
    from typing import Any

SP, MINUS, PLUS, BSL = 0x20, 0x2D, 0x2B, 0x5C

# ``re`` (with the enum, functools and collections it imports) is left out of the start of
# ``series apply``: the hot syntax (``@@`` headers, "Binary files ... differ", hunk bodies) is
# read by hand below, the rest compiles its pattern on first use.
_TS_PATTERN = rb"^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.\d+)?\s*(?:([+-])(\d\d):?(\d\d))?\s*$"
_ED_PATTERN = rb"^\d+(?:,\d+)?[acd]$"


def _digits(s: bytes, i: int) -> int:
    """The index after the ASCII digits of ``s`` from ``i`` on."""
    n = len(s)
    while i < n and 48 <= s[i] <= 57:
        i += 1
    return i


def _hunk_header(line: bytes) -> tuple[int, int | None, int, int | None, bytes] | None:
    """``@@ -a[,b] +c[,d] @@section`` read as the pattern ``^@@ -(\\d+)(?:,(\\d+))?
    \\+(\\d+)(?:,(\\d+))? @@(.*)$`` (dot matching all) would: (a, b, c, d, section), b and d None
    when absent; None when the line is not one."""
    if not line.startswith(b"@@ -"):
        return None
    nums: list[int | None] = []
    i = 4
    for lead in (b"", b" +"):
        if not line.startswith(lead, i):
            return None
        i += len(lead)
        j = _digits(line, i)
        if j == i:
            return None
        nums.append(int(line[i:j]))
        i = j
        if line.startswith(b",", i):
            j = _digits(line, i + 1)
            if j == i + 1:
                return None
            nums.append(int(line[i + 1 : j]))
            i = j
        else:
            nums.append(None)
    if not line.startswith(b" @@", i):
        return None
    a, b, c, d = nums
    assert a is not None and c is not None
    return a, b, c, d, line[i + 3 :]


def _is_binary_notice(line: bytes) -> bool:
    """``Binary files ... differ`` (the pattern ``^Binary files .* differ$``)."""
    return len(line) >= 20 and line.startswith(b"Binary files ") and line.endswith(b" differ")


_SIGNATURES = (b"-- ", b"-- \r")  # a mail signature separator (CRLF when the mail was saved so)
_MAX_COUNT = 10**9  # counts above this are reported as huge, never allocated
_TEXT = itemgetter(slice(1, None))  # a body row without its kind byte
_FIRST_BYTE = itemgetter(0)  # a row's kind, as an int
_PAD = methodcaller("ljust", 1)  # a blank row reads as context

GIT_HEADERS = (
    b"old mode ",
    b"new mode ",
    b"deleted file mode ",
    b"new file mode ",
    b"similarity index ",
    b"dissimilarity index ",
    b"rename from ",
    b"rename to ",
    b"copy from ",
    b"copy to ",
    b"index ",
)


@record
class Problem:
    """One defect found in a patch file.

    :param lineno: 1-based line number in the patch file.
    :param kind: ``count`` (declared count differs from the body), ``stray`` (a line after a
        complete hunk), ``noop`` (a hunk with no ``-``/``+`` line), ``marker`` (a misplaced
        ``\\ No newline`` line), ``extra`` (context lines past the counts before the next file:
        GNU patch and git skip them, so appliers do; ``hunks fix`` counts them),
        ``unterminated`` (the patch ends inside a hunk line: no final LF, no marker),
        ``chopped`` (the patch file ends 1-3 blank context lines short of the last hunk's counts:
        GNU patch reads them as blank context, so appliers do; git apply refuses it).
    :param message: the reason, phrased for the user.
    """

    lineno: int
    kind: str
    message: str


@record
class BodyLine:
    """One hunk body line: ``kind`` is ``ord(' ')``, ``ord('-')`` or ``ord('+')``; ``text`` has
    neither the kind byte nor the LF; ``newline`` is False when a ``\\ No newline at end of file``
    marker follows; ``lineno`` is the 1-based line in the patch file."""

    __slots__ = ("kind", "lineno", "newline", "text")

    kind: int
    text: bytes
    newline: bool
    lineno: int


class Hunk:
    """A unified hunk ``@@ -old_start,old_count +new_start,new_count @@section``.

    Counts are as declared in the header (an omitted count is 1 and ``*_given`` is False);
    ``lines`` is the body as delimited by structure; ``counted_old``/``counted_new`` are the
    line counts of that body. (A plain class rather than a dataclass: the body of a well-formed
    hunk is kept as the patch's own lines and made into :class:`BodyLine` objects only when
    ``lines`` is first read; the hunk engine reads :meth:`plain_body` instead.)
    """

    _FIELDS = (
        "number",
        "lineno",
        "old_start",
        "old_count",
        "new_start",
        "new_count",
        "old_count_given",
        "new_count_given",
        "section",
        "lines",
        "problems",
    )

    def __init__(
        self,
        number: int,
        lineno: int,
        old_start: int,
        old_count: int,
        new_start: int,
        new_count: int,
        old_count_given: bool,
        new_count_given: bool,
        section: bytes,
        lines: list[BodyLine] | None = None,
        problems: list[Problem] | None = None,
    ) -> None:
        self.number = number
        self.lineno = lineno
        self.old_start = old_start
        self.old_count = old_count
        self.new_start = new_start
        self.new_count = new_count
        self.old_count_given = old_count_given
        self.new_count_given = new_count_given
        self.section = section
        self._lines: list[BodyLine] | None = [] if lines is None else lines
        self._plain: tuple[list[bytes], bytes, int] | None = None
        self._texts: tuple[list[bytes], str] | None = None
        self._sides: tuple[tuple[bytes, ...], tuple[bytes, ...], int, int] | None = None
        self.problems: list[Problem] = [] if problems is None else problems
        self.extra: list[BodyLine] = []  # context lines past the counts that appliers skip (see Problem "extra")

    @property
    def lines(self) -> list[BodyLine]:
        if self._lines is None:
            assert self._plain is not None
            rows, kinds, first = self._plain
            self._lines = list(map(BodyLine, kinds, map(_TEXT, rows), repeat(True), range(first, first + len(rows))))
        return self._lines

    @lines.setter
    def lines(self, value: list[BodyLine]) -> None:
        self._lines = value
        self._plain = self._texts = self._sides = None

    def set_plain(self, rows: list[bytes], kinds: bytes, first: int) -> None:
        """The body is ``rows`` (patch lines: kind byte, text, no LF; each ending with LF in the
        patch, none followed by a marker), ``kinds`` their first bytes (a blank row counts as
        context), the first at patch line ``first``."""
        self._plain = (rows, kinds, first)
        self._texts = self._sides = None
        self._lines = None

    def plain_body(self) -> tuple[list[bytes], bytes] | None:
        """``(rows, kinds)`` when the body was recorded by :meth:`set_plain` (and not replaced
        since), else None."""
        return None if self._plain is None else self._plain[:2]

    def plain_lines(self) -> tuple[list[bytes], str] | None:
        """For a body recorded by :meth:`set_plain`: its lines as a file holds them (text and
        LF) and their kinds as a str of ``' '``, ``'-'``, ``'+'``; else None. Computed once."""
        if self._plain is None:
            return None
        if self._texts is None:
            rows, kinds, _ = self._plain
            # each row is its kind byte and its text; with the LF back, the text and the LF
            if len(rows) < 64:
                lines = [r[1:] + b"\n" for r in rows]
            else:  # no Python step per line
                lines = list(map(_TEXT, BytesIO(b"\n".join(rows)).readlines()))
                lines[-1] += b"\n"  # the last row's LF (joining added none after it)
            self._texts = (lines, kinds.decode("latin-1"))
        return self._texts

    def plain_sides(self) -> tuple[tuple[bytes, ...], tuple[bytes, ...], int, int] | None:
        """For a body recorded by :meth:`set_plain`: its old side (context and removed lines,
        as a file holds them), its new side (context and added lines), and the number of context
        lines before the first change and after the last (0 after, when all are context); else
        None. Computed once."""
        plain = self.plain_lines()
        if plain is None:
            return None
        if self._sides is None:
            lines, ks = plain
            old = tuple(compress(lines, map(ne, ks, repeat("+"))))
            new = tuple(compress(lines, map(ne, ks, repeat("-"))))
            n = len(ks)
            lead = n - len(ks.lstrip(" "))
            self._sides = (old, new, lead, 0 if lead == n else n - len(ks.rstrip(" ")))
        return self._sides

    def __repr__(self) -> str:
        return "Hunk(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self._FIELDS) + ")"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]

    @property
    def counted_old(self) -> int:
        plain = self.plain_body()
        if plain is not None:
            return len(plain[1]) - plain[1].count(b"+")
        return sum(1 for ln in self.lines if ln.kind != PLUS)

    @property
    def counted_new(self) -> int:
        plain = self.plain_body()
        if plain is not None:
            return len(plain[1]) - plain[1].count(b"-")
        return sum(1 for ln in self.lines if ln.kind != MINUS)

    def changes_nothing(self) -> bool:
        """True when the body has no ``-`` and no ``+`` line (GNU patch calls it malformed)."""
        plain = self.plain_body()
        if plain is not None:
            return plain[1].count(b" ") == len(plain[1])
        return all(ln.kind == SP for ln in self.lines)


@record
class Name:
    """A file name from a patch header: ``raw`` as written (unquoted), ``prefixless`` True for
    git's ``rename from``/``copy to`` names, which carry no ``a/``/``b/`` prefix."""

    raw: bytes
    prefixless: bool = False

    def stripped(self, strip: int) -> str | None:
        """The name with ``strip`` leading components removed (GNU patch ``-pN``), as a str
        (file-system encoding, surrogateescape); None when it has too few components."""
        n = max(0, strip - 1) if self.prefixless else strip
        s = self.raw
        for _ in range(n):
            k = s.find(b"/")
            if k < 0:
                return None
            s = s[k + 1 :].lstrip(b"/")
        if not s:
            return None
        return os.fsdecode(s)


@record
class FileSection:
    """The changes of one file: names, git extended headers, hunks.

    ``old_absent``/``new_absent`` say that side does not exist (``/dev/null``, a
    ``new file mode``/``deleted file mode`` header, or diff -N's epoch timestamp).
    Modes are integers (``0o100644``) or None.
    """

    lineno: int
    git: bool
    old: Name | None = None
    new: Name | None = None
    old_absent: bool = False
    new_absent: bool = False
    rename: bool = False
    copy: bool = False
    old_mode: int | None = None
    new_mode: int | None = None
    hunks: list[Hunk] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def display_name(self) -> str:
        """The name to show the user (the new name, else the old, with ``a/``/``b/`` kept)."""
        for nm in (self.new, self.old):
            if nm is not None and nm.raw != b"/dev/null":
                return os.fsdecode(nm.raw)
        return "?"


@record
class PatchFile:
    """A parsed patch file: its ``source`` (shown in messages), raw ``lines`` (LF removed),
    whether the data ended with LF, the file ``sections`` and file-level ``problems``."""

    source: str
    lines: list[bytes]
    final_newline: bool
    sections: list[FileSection]
    problems: list[Problem] = field(default_factory=list)
    cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)
    #: lines whose trailing CR was stripped (file sections with CRLF headers, as GNU patch does)
    crlf_stripped: int = 0

    def all_problems(self) -> list[Problem]:
        """Every problem (file-level and per hunk), ordered by line."""
        out = list(self.problems)
        for s in self.sections:
            for h in s.hunks:
                out.extend(h.problems)
        return sorted(out, key=lambda p: p.lineno)

    def notes(self) -> list[str]:
        """Warnings about this patch that do not stop it (a file name GNU patch reads short, CRs
        stripped)."""
        out = [n for s in self.sections for n in s.notes]
        if self.crlf_stripped:
            out.insert(
                0,
                f"{self.source}: CRLF line endings in the patch headers: the trailing CR of {self.crlf_stripped} "
                "line(s) of those file sections stripped, as GNU patch does ('Stripping trailing CRs from "
                "patch'); their lines then match LF files only",
            )
        return out

    def require_valid(self) -> None:
        """Raise :class:`InputError` for the first problem, if any (used before applying); an
        ``extra`` problem (context past a hunk's counts, which GNU patch and git skip) or a
        ``chopped`` one (blank context lines missing at the end of the file, which GNU patch
        supplies) is not one an applier stops at."""
        probs = [p for p in self.all_problems() if p.kind not in ("extra", "chopped")]
        if probs:
            p = probs[0]
            raise InputError(self.source, f"line {p.lineno}", p.message)


def split_lines(data: bytes) -> tuple[list[bytes], bool]:
    """Split ``data`` on LF only. Returns (lines without LF, whether data ended with LF)."""
    if not data:
        return [], True
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
        return lines, True
    return lines, False


def _unquote(s: bytes) -> tuple[bytes, bytes]:
    """Parse a C-quoted name at the start of ``s`` (git/GNU style). Returns (name, rest)."""
    out = bytearray()
    i = 1
    esc = {
        ord("n"): 10,
        ord("t"): 9,
        ord('"'): 34,
        ord("\\"): 92,
        ord("a"): 7,
        ord("b"): 8,
        ord("f"): 12,
        ord("r"): 13,
        ord("v"): 11,
    }
    while i < len(s):
        c = s[i]
        if c == 34:
            return bytes(out), s[i + 1 :]
        if c == 92 and i + 1 < len(s):
            d = s[i + 1]
            if 0x30 <= d <= 0x37:
                j = i + 1
                while j < len(s) and j < i + 4 and 0x30 <= s[j] <= 0x37:
                    j += 1
                out.append(int(s[i + 1 : j], 8) & 0xFF)
                i = j
                continue
            out.append(esc.get(d, d))
            i += 2
            continue
        out.append(c)
        i += 1
    return bytes(out), b""


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days from 1970-01-01 to year ``y``, month ``m``, day ``d`` of the proleptic Gregorian
    calendar (what ``calendar.timegm`` counts; a day past the month's end runs on)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


_SPACE = b" \t\n\r\f\v"  # what \\s matches in a bytes pattern


def _timestamp(ts: bytes) -> tuple[int, int, int, int, int, int, bytes, int, int] | None:
    """A header timestamp read as ``_TS_PATTERN`` would: year, month, day, hour, minute,
    second, then the zone's sign (empty when there is no zone), hours and minutes."""
    n = len(ts)
    if n < 19 or ts[4:5] != b"-" or ts[7:8] != b"-" or ts[10:11] not in (b" ", b"T"):
        return None
    if ts[13:14] != b":" or ts[16:17] != b":":
        return None
    fields = (ts[0:4], ts[5:7], ts[8:10], ts[11:13], ts[14:16], ts[17:19])
    if not all(f.isdigit() and f.isascii() for f in fields):
        return None
    i = 19
    if ts.startswith(b".", i):
        j = _digits(ts, i + 1)
        if j == i + 1:
            return None
        i = j
    while i < n and ts[i] in _SPACE:
        i += 1
    sign, oh, om = b"", 0, 0
    if i < n and ts[i] in b"+-":
        hh = ts[i + 1 : i + 3]
        k = i + 3 + (1 if ts.startswith(b":", i + 3) else 0)
        mm = ts[k : k + 2]
        if len(hh) != 2 or len(mm) != 2 or not (hh + mm).isdigit():
            return None
        sign, oh, om = ts[i : i + 1], int(hh), int(mm)
        i = k + 2
    while i < n and ts[i] in _SPACE:
        i += 1
    if i != n:
        return None
    y, mo, d, h, mi, se = (int(f) for f in fields)
    return y, mo, d, h, mi, se, sign, oh, om


def _is_epoch(ts: bytes) -> bool:
    got = _timestamp(ts)
    if got is None:
        return False
    y, mo, d, hh, mm, ss, sign, oh, om = got
    if not 1 <= mo <= 12:
        return False
    t = ((_days_from_civil(y, mo, d) * 24 + hh) * 60 + mm) * 60 + ss
    if sign:
        off = oh * 3600 + om * 60
        t -= off if sign == b"+" else -off
    return t == 0


def _header_name(rest: bytes) -> tuple[bytes, bytes, bytes | None]:
    """Split the text after ``--- ``/``+++ `` into (name, timestamp, meant) as GNU patch 2.7.6
    reads it: a quoted name is unquoted; else the name ends at a tab, or, without a tab, at the
    first space (so ``b/Core and Builtins/x.rst`` names ``b/Core``). ``meant`` is the whole
    unquoted text when that cut a name with spaces (not a timestamp) short, else None."""
    if rest.startswith(b'"'):
        name, after = _unquote(rest)
        return name, after.strip(), None
    if b"\t" in rest:
        name, ts = rest.split(b"\t", 1)
        return name, ts, None
    whole = rest.rstrip(b" \r")
    k = whole.find(b" ")
    if k < 0:
        return whole, b"", None
    name, ts = whole[:k], whole[k + 1 :].lstrip(b" ")
    return name, ts, (None if _timestamp(ts) is not None else whole)


def _git_names(rest: bytes) -> tuple[bytes, bytes] | None:
    """Names from ``diff --git A B`` (quoted or not)."""
    if rest.startswith(b'"'):
        a, after = _unquote(rest)
        after = after.lstrip(b" ")
        b = _unquote(after)[0] if after.startswith(b'"') else after
        return a, b
    if rest.endswith(b'"'):
        k = rest.rfind(b' "')
        if k < 0:
            return None
        return rest[:k], _unquote(rest[k + 1 :])[0]
    n = len(rest)
    if n % 2 == 1 and rest[n // 2] == 0x20:
        a, b = rest[: n // 2], rest[n // 2 + 1 :]
        if a.split(b"/", 1)[-1] == b.split(b"/", 1)[-1]:
            return a, b
    k = rest.rfind(b" b/")
    if k < 0:
        k = rest.find(b" ")
        if k < 0:
            return None
    return rest[:k], rest[k + 1 :]


def _mode(value: bytes) -> int | None:
    try:
        return int(value.strip(), 8)
    except ValueError:
        return None


def strip_crlf_sections(lines: list[bytes]) -> int:
    """Strip, in place, the trailing CR of every line of each file section whose header ends in
    CR, as GNU patch 2.7.6 does ("Stripping trailing CRs from patch; use --binary to disable.");
    returns how many lines lost one. A section here runs from a ``diff``/``Index:`` line or a
    ``--- ``/``+++ `` pair to the next one; it is stripped when that line (or the ``+++ `` line
    of the pair) ends in CR. A section with LF headers keeps its CRs: they are content (a CRLF
    file's diff), as GNU patch keeps them. GNU patch 2.7.6 behaviour, observed."""
    n = len(lines)
    strip = False
    count = 0
    for i in range(n):
        ln = lines[i]
        if ln.startswith((b"diff ", b"Index: ")):
            strip = ln.endswith(b"\r")
        elif ln.startswith(b"--- ") and i + 1 < n and lines[i + 1].startswith(b"+++ "):
            strip = ln.endswith(b"\r") or lines[i + 1].endswith(b"\r")
        if strip and ln.endswith(b"\r"):
            lines[i] = ln[:-1]
            count += 1
    return count


class _Parser:
    def __init__(self, data: bytes, source: str) -> None:
        self.source = source
        self.lines, self.final_newline = split_lines(data)
        self.crlf_stripped = strip_crlf_sections(self.lines) if b"\r" in data else 0
        self.has_nul = b"\x00" in data
        self.n = len(self.lines)
        self.sections: list[FileSection] = []
        self.problems: list[Problem] = []

    def err(self, i: int, reason: str) -> InputError:
        return InputError(self.source, f"line {i + 1}", reason)

    # -- structure predicates ------------------------------------------------------------
    def is_triple(self, i: int) -> bool:
        ls = self.lines
        return (
            i + 2 < self.n
            and ls[i].startswith(b"--- ")
            and ls[i + 1].startswith(b"+++ ")
            and ls[i + 2].startswith(b"@@ -")
        )

    def is_pair(self, i: int) -> bool:
        return i + 1 < self.n and self.lines[i].startswith(b"--- ") and self.lines[i + 1].startswith(b"+++ ")

    def index_section(self, i: int) -> bool:
        j = i + 1
        while j < self.n and self.lines[j].startswith(b"===="):
            j += 1
        return self.is_pair(j)

    def section_start(self, i: int) -> bool:
        ln = self.lines[i]
        if ln.startswith(b"diff --git "):
            return True
        if ln.startswith(b"Index: "):
            return self.index_section(i)
        if ln.startswith(b"diff "):
            return True
        return self.is_triple(i)

    def text_until_section(self, i: int) -> int | None:
        """When the lines from ``i`` on are free text up to the next file section (or the end of
        the patch) -- a blank line, a ``git log -p`` commit header, an ``Index:``/``====`` block
        before ``diff --git``, a trailer -- the index of that section (or the end); None when a
        ``@@`` hunk header comes first (a hunk without a file header: GNU patch would drop it)."""
        lines = self.lines
        for k in range(i, self.n):
            ln = lines[k]
            if ln.startswith(b"@@ -"):
                return None
            if ln.startswith((b"diff ", b"Index: ", b"--- ")) and self.section_start(k):
                return k
        return self.n

    def check_crlf(self, i: int) -> None:
        if self.lines[i].endswith(b"\r"):
            raise self.err(
                i,
                "CRLF line endings in the patch headers (convert the patch file to LF line "
                "endings; a CR inside content lines is kept as content)",
            )

    # -- top level -----------------------------------------------------------------------
    def run(self) -> PatchFile:
        lines = self.lines
        i = 0
        expect_structure = False  # True right after a hunk: only structure may follow
        while i < self.n:
            ln = lines[i]
            if ln.startswith(b"diff --git "):
                self.check_crlf(i)
                i = self.git_section(i)
                expect_structure = True
            elif ln.startswith(b"Index: ") and self.index_section(i):
                i += 1
                while lines[i].startswith(b"===="):
                    i += 1
                i = self.plain_section(i, i - 1)
                expect_structure = True
            elif ln.startswith(b"diff ") and not ln.startswith(b"diff --git"):
                i = self.diff_line(i)
                expect_structure = True
            elif self.is_triple(i):
                i = self.plain_section(i, i)
                expect_structure = True
            elif expect_structure and ln in _SIGNATURES:
                expect_structure = False  # mail signature: the rest is a trailer
                i += 1
            elif expect_structure and ln.strip(b" \t\r") == b"" and all(not x.strip(b" \t\r") for x in lines[i:]):
                break  # blank lines at the end of the file
            elif expect_structure:
                if _is_binary_notice(ln):
                    raise self.err(
                        i, f"binary patch ({ln.decode('utf-8', 'replace')}): binary patches are not supported"
                    )
                after = self.text_until_section(i)
                if after is not None:  # text between file sections (a commit's header, Index:)
                    i = after
                    expect_structure = False
                    continue
                self.problems.append(
                    Problem(
                        i + 1,
                        "stray",
                        "stray line after a complete hunk (only @@, diff, Index:, a ---/+++ "
                        "pair, a '-- ' signature or the end of the file may follow)",
                    )
                )
                expect_structure = False
                i += 1
            else:
                if ln.startswith(b"@@ -") and self.sections:
                    pass  # prose mentioning @@ after a signature: ignored like other prose
                i += 1
        if not self.sections:
            self.no_sections()
        pf = PatchFile(self.source, lines, self.final_newline, self.sections, self.problems)
        pf.crlf_stripped = self.crlf_stripped
        return pf

    def no_sections(self) -> None:
        import re  # at call: an error path only (see _ED_PATTERN); `re` stays out of every start

        lines = self.lines
        for k, ln in enumerate(lines):
            if re.match(_ED_PATTERN, ln) and (k + 1 >= self.n or lines[k + 1] != b""):
                if k + 1 < self.n and (lines[k + 1].startswith((b"< ", b"> "))):
                    raise self.err(k, "normal (non-unified) diff: not supported; regenerate it with diff -u")
                raise self.err(k, "ed script: refused (dryboot never runs ed scripts)")
            if ln.startswith(b"*** ") and k + 1 < self.n and lines[k + 1].startswith(b"--- "):
                raise self.err(k, "context diff: not supported; regenerate it with diff -u")
            if _is_binary_notice(ln) or ln == b"GIT binary patch":
                raise self.err(k, "binary patch: binary patches are not supported")
        raise InputError(self.source, None, "no unified diff found (no ---/+++/@@ section)")

    def diff_line(self, i: int) -> int:
        """A plain ``diff ...`` line (e.g. ``diff -ruN a/x b/x``): header garbage before a
        ``---``/``+++`` pair, or a binary notice."""
        self.check_crlf(i)
        j = i + 1
        while j < self.n:
            ln = self.lines[j]
            if _is_binary_notice(ln):
                raise self.err(j, f"binary patch ({ln.decode('utf-8', 'replace')}): binary patches are not supported")
            if self.is_pair(j):
                return self.plain_section(j, i)
            if ln.startswith((b"diff ", b"Index: ", b"@@")) or j - i > 20:
                break
            j += 1
        return i + 1

    # -- sections ------------------------------------------------------------------------
    def names_from_pair(self, sec: FileSection, i: int) -> None:
        self.check_crlf(i)
        self.check_crlf(i + 1)
        for k in (i, i + 1):
            if self.has_nul and b"\x00" in self.lines[k]:
                raise self.err(k, "NUL byte in a file name: refused")
        oname, ots, ometa = _header_name(self.lines[i][4:])
        nname, nts, nmeta = _header_name(self.lines[i + 1][4:])
        for k, name, meant in ((i, oname, ometa), (i + 1, nname, nmeta)):
            if meant is not None:
                sec.notes.append(
                    f"{self.source}: line {k + 1}: unquoted file name with spaces: GNU patch 2.7.6 "
                    f"reads {os.fsdecode(name)!r} (the name ends at the first space), and so does "
                    f"dryboot, to build the same tree; the header probably meant "
                    f"{os.fsdecode(meant)!r} (quote it, as git does, or end it with a tab)"
                )
        if oname == b"/dev/null" or (not sec.git and _is_epoch(ots)):
            sec.old_absent = True
        if nname == b"/dev/null" or (not sec.git and _is_epoch(nts)):
            sec.new_absent = True
        if sec.git and (sec.rename or sec.copy):
            return  # names come from rename/copy headers
        if sec.git:
            # git apply: the ---/+++ names must be the 'diff --git' line's names
            for k, (name, git_name, side, meant) in enumerate(
                ((oname, sec.old, "old", ometa), (nname, sec.new, "new", nmeta))
            ):
                if name == b"/dev/null" or git_name is None or meant is not None:
                    continue
                mine, theirs = Name(name), git_name
                if (mine.stripped(1) or mine.raw) != (theirs.stripped(1) or theirs.raw):
                    raise self.err(
                        i + k,
                        f"inconsistent {side} filename: {os.fsdecode(name)!r} is not the "
                        f"'diff --git' line's {os.fsdecode(theirs.raw)!r}",
                    )
        if oname != b"/dev/null" or sec.old is None:
            sec.old = Name(oname)
        if nname != b"/dev/null" or sec.new is None:
            sec.new = Name(nname)

    def plain_section(self, i: int, start: int) -> int:
        sec = FileSection(lineno=start + 1, git=False)
        self.names_from_pair(sec, i)
        self.sections.append(sec)
        j = i + 2
        if j >= self.n or not self.lines[j].startswith(b"@@"):
            raise self.err(j if j < self.n else i + 1, "no hunk after the ---/+++ header")
        return self.hunks(sec, j)

    def git_section(self, i: int) -> int:
        sec = FileSection(lineno=i + 1, git=True)
        names = _git_names(self.lines[i][len(b"diff --git ") :])
        if names is None:
            raise self.err(i, "cannot read the file names of this 'diff --git' line")
        sec.old, sec.new = Name(names[0]), Name(names[1])
        self.sections.append(sec)
        j = i + 1
        while j < self.n:
            ln = self.lines[j]
            if _is_binary_notice(ln) and not sec.new_absent and not sec.rename and not sec.copy:
                # a notice with no data (git diff without --binary): GNU patch 2.7.6 creates the
                # file empty (new file mode) or leaves it as it is, and exits 0 -- so a tree
                # dpkg-source builds has it so; dryboot builds the same tree, and says so
                what = "creates it empty" if sec.old_absent else "leaves it unchanged"
                sec.notes.append(
                    f"{self.source}: line {j + 1}: {sec.display_name()}: a binary file with no data in the "
                    f"patch ({ln.decode('utf-8', 'replace')}): GNU patch 2.7.6 {what}, and so does dryboot, "
                    "to build the same tree; its real content is not in this patch"
                )
                j += 1
                break
            if ln.startswith(b"GIT binary patch") or _is_binary_notice(ln):
                raise self.err(j, f"binary patch for {sec.display_name()}: binary patches are not supported")
            if ln.startswith(GIT_HEADERS):
                self.check_crlf(j)
                self.git_header(sec, ln, j)
                j += 1
                continue
            if self.is_pair(j):
                self.names_from_pair(sec, j)
                j += 2
                if j >= self.n or not self.lines[j].startswith(b"@@"):
                    raise self.err(j if j < self.n else j - 1, "no hunk after the ---/+++ header")
                return self.hunks(sec, j)
            break
        if sec.old_absent:
            sec.old_mode = None
        return j

    def git_header(self, sec: FileSection, ln: bytes, j: int) -> None:
        if ln.startswith(b"old mode "):
            sec.old_mode = _mode(ln[9:])
        elif ln.startswith(b"new mode "):
            sec.new_mode = _mode(ln[9:])
        elif ln.startswith(b"deleted file mode "):
            sec.new_absent = True
            sec.old_mode = _mode(ln[18:])
        elif ln.startswith(b"new file mode "):
            sec.old_absent = True
            sec.new_mode = _mode(ln[14:])
        elif ln.startswith(b"rename from "):
            sec.rename = True
            sec.old = Name(self.qname(ln[12:]), prefixless=True)
        elif ln.startswith(b"rename to "):
            sec.rename = True
            sec.new = Name(self.qname(ln[10:]), prefixless=True)
        elif ln.startswith(b"copy from "):
            sec.copy = True
            sec.old = Name(self.qname(ln[10:]), prefixless=True)
        elif ln.startswith(b"copy to "):
            sec.copy = True
            sec.new = Name(self.qname(ln[8:]), prefixless=True)
        elif ln.startswith(b"index "):
            parts = ln.split()
            if len(parts) >= 3 and sec.old_mode is None and sec.new_mode is None:
                m = _mode(parts[2])
                sec.old_mode = sec.new_mode = m

    @staticmethod
    def qname(s: bytes) -> bytes:
        return _unquote(s)[0] if s.startswith(b'"') else s

    # -- hunks ---------------------------------------------------------------------------
    def hunks(self, sec: FileSection, i: int) -> int:
        while i < self.n and self.lines[i].startswith(b"@@"):
            i = self.hunk(sec, i)
        return i

    def hunk(self, sec: FileSection, i: int) -> int:
        self.check_crlf(i)
        header = self.lines[i]
        m = _hunk_header(header)
        if m is None:
            raise self.err(i, "malformed hunk header (expected '@@ -a,b +c,d @@')")
        nums = list(m[:4])
        if any(x is not None and x > _MAX_COUNT for x in nums):
            raise self.err(i, "hunk header number too large")
        h = Hunk(
            number=len(sec.hunks) + 1,
            lineno=i + 1,
            old_start=nums[0] or 0,
            old_count=1 if nums[1] is None else nums[1],
            new_start=nums[2] or 0,
            new_count=1 if nums[3] is None else nums[3],
            old_count_given=nums[1] is not None,
            new_count_given=nums[3] is not None,
            section=m[4],
        )
        sec.hunks.append(h)
        return self.body(sec, h, i + 1)

    def plain_body(self, h: Hunk, start: int) -> int | None:
        """The common case at C speed: the rows from ``start`` on that are context, removed or
        added lines add up exactly to the declared counts, are followed by a line that is
        none of these and no marker, and none starts ``--- `` (which might open a file
        section). Then, as :meth:`body` would, the hunk's body is those rows (recorded with
        :meth:`Hunk.set_plain`); returns the index after it, or None (use :meth:`body`)."""
        dold, dnew = h.old_count, h.new_count
        window = self.lines[start : start + dold + dnew + 1]
        try:
            kinds = bytes(map(_FIRST_BYTE, window))
        except IndexError:  # a blank row, which reads as context
            kinds = bytes(map(_FIRST_BYTE, map(_PAD, window)))
        end = len(kinds) - len(kinds.lstrip(b" +-"))  # the run of context, removed, added rows
        if MINUS in kinds[:end]:
            # the run may go on into the next file's `--- a/x` / `+++ b/x` header (a quilt or
            # `diff -u` patch without `diff` lines): it ends there
            k = kinds.find(MINUS)
            while 0 <= k < end:
                nxt = start + k + 1
                if window[k].startswith(b"--- ") and nxt < self.n and self.lines[nxt].startswith(b"+++ "):
                    end = k
                    break
                k = kinds.find(MINUS, k + 1)
        if end == len(window) and start + end < self.n:
            return None  # no end in sight: the counts are wrong
        if end < len(window) and kinds[end] == BSL:
            return None  # a '\\ No newline' marker
        kinds = kinds[:end]
        if end - kinds.count(b"+") != dold or end - kinds.count(b"-") != dnew:
            return None
        rows = window[:end]
        if not end or (MINUS in kinds and (b"\n" + b"\n".join(rows)).find(b"\n--- ") >= 0):
            return None
        h.set_plain(rows, kinds, start + 1)
        return start + end

    def unterminated(self, sec: FileSection, h: Hunk) -> None:
        """The patch's last line is a body line of ``h`` with no LF and no ``\\ No newline``
        marker: GNU patch says "patch unexpectedly ends in middle of line" and fails (at fuzz 0;
        "malformed patch" for an added line), git apply calls it a corrupt patch. A problem, so
        the patch is refused (issue 28: it applied silently, as if the line ended)."""
        h.problems.append(
            Problem(
                self.n,
                "unterminated",
                f"hunk {h.number} of {sec.display_name()}: the patch ends in the middle of a line (no final "
                "newline and no '\\ No newline at end of file' marker; GNU patch: 'patch unexpectedly ends "
                "in middle of line', git apply: 'corrupt patch')",
            )
        )

    def chopped(self, sec: FileSection, h: Hunk, body: list[BodyLine], end: int) -> bool:
        """GNU patch's "assume blank lines got chopped": where the patch file ends (with a final
        newline) inside the last hunk, both sides short of their declared counts by the same
        1 to 3 lines, GNU patch (``another_hunk`` in pch.c: at end of file with at most 3 new
        lines left, it reads ``" \\n"``) takes each missing line as a blank context line, as a
        mailer or an editor that strips trailing blank lines leaves a hunk ending in one. The hunk
        is read so (``h.lines`` gets the blank lines, numbered as the file's last line), noted,
        and a ``chopped`` problem says it; git apply calls such a patch corrupt. False (nothing
        changed) for any other shortfall."""
        old = sum(1 for b in body if b.kind != PLUS)
        new = sum(1 for b in body if b.kind != MINUS)
        missing = h.new_count - new
        if end != self.n or not self.final_newline or not 1 <= missing <= 3 or h.old_count - old != missing:
            return False
        if body and not body[-1].newline:
            return False
        h.lines = body + [BodyLine(SP, b"", True, self.n) for _ in range(missing)]
        what = (
            f"hunk {h.number} of {sec.display_name()}: the patch file ends {missing} line"
            f"{'s' if missing != 1 else ''} short of its declared counts (-{h.old_count} +{h.new_count})"
        )
        sec.notes.append(
            f"{self.source}: line {self.n}: {what}; read as GNU patch reads it, the missing lines as blank "
            "context lines"
        )
        h.problems.append(
            Problem(
                h.lineno,
                "chopped",
                f"{what} (GNU patch takes them as blank context lines, 'assume blank lines got chopped'; "
                "git apply: 'corrupt patch')",
            )
        )
        return True

    def body(self, sec: FileSection, h: Hunk, start: int) -> int:
        fast = self.plain_body(h, start)
        if fast is not None and not self.final_newline and fast == self.n:
            self.unterminated(sec, h)
        if fast is not None:
            if h.changes_nothing():
                h.problems.append(
                    Problem(
                        h.lineno,
                        "noop",
                        f"hunk {h.number} of {sec.display_name()} changes nothing (no '-' or '+' line)",
                    )
                )
            return fast
        lines, n = self.lines, self.n
        dold, dnew = h.old_count, h.new_count
        old = new = 0
        met: int | None = None  # the first line at which the declared counts are complete
        k = -1  # the body lines from index k on come at or after line ``met``
        markers = False
        body: list[BodyLine] = []
        append = body.append
        i = start
        while i < n:
            ln = lines[i]
            kind = ln[0] if ln else SP
            if kind == BSL:
                markers = True
                if not body or not body[-1].newline:
                    h.problems.append(
                        Problem(i + 1, "marker", "'\\ No newline at end of file' marker that follows no hunk line")
                    )
                else:
                    body[-1].newline = False
                i += 1
                continue
            complete = old == dold and new == dnew
            if complete and met is None:
                met, k = i, len(body)
            if kind == MINUS:
                if (
                    ln.startswith(b"--- ")
                    and i + 2 < n
                    and lines[i + 1].startswith(b"+++ ")
                    and lines[i + 2].startswith(b"@@ -")
                ):
                    break  # the next file section
                if complete and (ln in _SIGNATURES or ln.rstrip(b" \t\r") == b"---"):
                    break  # the counts are complete: a mail signature or a '---' trailer, not a removed line
                if complete and ln.rstrip(b"\r") == b"--" and self.text_until_section(i + 1) is not None:
                    break  # a bare '--' (git format-patch's signature separator, a mail footer's) after
                    # the counts, with only prose up to the next file: GNU patch and git apply stop there
                old += 1
            elif kind == PLUS:
                new += 1
            elif kind == SP:
                old += 1
                new += 1
            else:
                break
            append(BodyLine(kind, ln[1:], True, i + 1))
            i += 1
        end = i
        if k < 0:
            k = len(body)
        # past the declared counts, lines that are empty or hold only white space (an empty
        # context line " " GNU diff never writes there) are what GNU patch ignores
        blank_extra = met is not None and all(not lines[b.lineno - 1].strip(b" \t") for b in body[k:])
        if old == dold and new == dnew:
            h.lines = body
        elif blank_extra and (end == n or self.text_until_section(end) is not None):
            h.lines = body[:k]  # blank lines at the end of the file, or before the next file's section
        elif (
            met is not None
            and all(b.kind == SP for b in body[k:])
            and (end == n or self.text_until_section(end) is not None)
        ):
            # context lines past the declared counts, then the next file's section: GNU patch and
            # git both read the hunk by its counts and skip them; so does dryboot, saying so
            h.lines, h.extra = body[:k], body[k:]
            extra = len(h.extra)
            what = (
                f"hunk {h.number} of {sec.display_name()}: {extra} context line{'s' if extra != 1 else ''} "
                f"after its declared counts (-{dold} +{dnew}) are complete"
            )
            sec.notes.append(f"{self.source}: line {met + 1}: {what}, ignored as GNU patch and git ignore them")
            h.problems.append(
                Problem(met + 1, "extra", f"{what} (GNU patch and git ignore them; `hunks fix` counts them)")
            )
        elif blank_extra:
            h.lines = body
            h.problems.append(
                Problem(
                    met + 1 if met is not None else h.lineno,
                    "stray",
                    f"stray blank line after hunk {h.number} of {sec.display_name()} (its "
                    f"declared counts -{dold} +{dnew} are complete at line {met}); later hunks "
                    "would be dropped or misread",
                )
            )
        elif self.chopped(sec, h, body, end):
            pass
        else:
            h.lines = body
            ended = "the patch file ends" if end == n else f"line {end + 1} ends the hunk"
            for side, decl, cnt in (("old", dold, old), ("new", dnew, new)):
                if decl != cnt:
                    h.problems.append(
                        Problem(
                            h.lineno,
                            "count",
                            f"hunk {h.number} of {sec.display_name()} declares {decl} {side} "
                            f"line{'s' if decl != 1 else ''}, body has {cnt} ({ended})",
                        )
                    )
        if h.lines and h.changes_nothing() and not h.problems:
            h.problems.append(
                Problem(
                    h.lineno, "noop", f"hunk {h.number} of {sec.display_name()} changes nothing (no '-' or '+' line)"
                )
            )
        if markers:
            self.check_markers(sec, h)
        if not self.final_newline and end == self.n and h.lines and h.lines[-1].lineno == self.n:
            self.unterminated(sec, h)
        return end

    def check_markers(self, sec: FileSection, h: Hunk) -> None:
        body = h.lines
        for k, bl in enumerate(body):
            if bl.newline:
                continue
            rest = body[k + 1 :]
            bad = (any(r.kind != PLUS for r in rest) if bl.kind in (SP, MINUS) else False) or (
                any(r.kind != MINUS for r in rest) if bl.kind in (SP, PLUS) else False
            )
            if bad:
                h.problems.append(
                    Problem(
                        bl.lineno + 1,
                        "marker",
                        "'\\ No newline at end of file' after a line that is not the last of its side",
                    )
                )


def parse_patch(data: bytes, source: str) -> PatchFile:
    """Parse patch ``data`` (bytes). ``source`` names it in messages.

    Count mismatches and stray lines are recorded as :class:`Problem` (see
    :meth:`PatchFile.all_problems`); a file section with CRLF headers has its lines' trailing
    CRs stripped (:func:`strip_crlf_sections`, noted in :meth:`PatchFile.notes`); structural
    failures raise :class:`InputError`: NUL bytes, binary patches, ed scripts, context/normal diffs, malformed
    ``@@`` lines, or no unified diff at all.
    """
    return _Parser(data, source).run()


def read_patch(path: str) -> PatchFile:
    """Read and parse the patch file at ``path``; :class:`InputError` if unreadable."""
    return parse_patch(read_regular(path), path)
