"""Placing and applying the hunks of one file: dryboot's own engine, written from a behaviour spec.

Every rule below is GNU patch 2.7.6 behaviour, observed from outside (its output bytes, its
messages and its exit status) and pinned by differential tests against the installed ``patch``
binary; ``docs/hunk-placement.md`` states the rules in prose. Nothing here is derived from any
patch tool's source.

Vocabulary:

- the **old side** of a hunk is its context and removed lines; the **new side** its context and
  added lines; **lead** and **trail** are the context lines before the first change and after the
  last one;
- the **start** is the old-side line number from the ``@@`` header, plus one when the old side is
  empty (an empty side names the line *before* the change);
- per file three numbers carry from hunk to hunk: the **running offset** (where the previous
  search landed minus where its header said), the **consumed line** (the last input line that an
  applied hunk changed or passed) and the **growth** (lines added minus lines removed so far,
  used only for the line numbers in messages);
- the **expected line** of a hunk is its start plus the running offset;
- at **fuzz level** f a hunk is compared with **trimmed context**: some lead lines (``top``) and
  some trail lines (``bottom``) are ignored; a negative number means "none ignored, but the hunk
  is anchored to that end of the file".

Entry point: :func:`run_hunks` (the lines of a file, its hunks, a maximum fuzz level) returns a
:class:`FileRun`: the output bytes and one :class:`HunkResult` per hunk.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from io import BytesIO
from itertools import accumulate

from dryboot.patching._record import field, record
from dryboot.patching.parse import MINUS, PLUS, Hunk

TYPE_CHECKING = False
if TYPE_CHECKING:  # collections.abc imports collections: start-up time
    from collections.abc import Iterator, Sequence

CONTEXT, REMOVED, ADDED = " ", "-", "+"


def split_keep(data: bytes) -> list[bytes]:
    """The lines of ``data`` split at LF only, each keeping its LF; the last one lacks it when the
    data does not end with LF. A CR is ordinary content (GNU patch 2.7.6 behaviour, observed:
    CRLF lines only match CRLF lines)."""
    return BytesIO(data).readlines()  # binary readlines splits at LF only, keeping it


@record(frozen=True)
class HunkSides:
    """One hunk as the engine sees it, in the direction being applied.

    ``body`` is the hunk's lines in order as ``(kind, line)`` with kind ``" "``, ``"-"`` or ``"+"``
    and the line's bytes as they must appear in a file (with LF unless the patch marks
    ``\\ No newline at end of file``). ``first`` is the header's old-side start (after any
    reversal) and ``other_first`` the other range's start; ``old``/``new`` are the two sides,
    ``lead``/``trail`` the context at either end.
    """

    __slots__ = ("body", "first", "lead", "new", "number", "old", "other_first", "trail")

    number: int
    first: int
    body: tuple[tuple[str, bytes], ...]
    old: tuple[bytes, ...]
    new: tuple[bytes, ...]
    lead: int
    trail: int
    other_first: int

    @property
    def start(self) -> int:
        """The line the old side starts at: the header's number, or the next line when the old
        side is empty (``@@ -5,0 +6,2 @@`` inserts before line 6)."""
        return self.first if self.old else self.first + 1

    def swapped(self) -> HunkSides:
        """The same hunk read the other way round: removed and added lines exchanged, the two
        header starts exchanged (what GNU patch tries when it looks for a reversed patch)."""
        flip = {REMOVED: ADDED, ADDED: REMOVED, CONTEXT: CONTEXT}
        return make_sides(self.number, self.other_first, [(flip[k], ln) for k, ln in self.body], self.first)


def make_sides(number: int, first: int, body: Sequence[tuple[str, bytes]], other_first: int | None = None) -> HunkSides:
    """Build a :class:`HunkSides` from its body: the sides, the lead (context lines before the
    first change) and the trail (context lines after the last change)."""
    body_t = tuple(body)
    old = tuple([line for kind, line in body_t if kind != ADDED])
    new = tuple([line for kind, line in body_t if kind != REMOVED])
    lead = 0
    while lead < len(body_t) and body_t[lead][0] == CONTEXT:
        lead += 1
    trail = 0
    while trail < len(body_t) - lead and body_t[len(body_t) - 1 - trail][0] == CONTEXT:
        trail += 1
    other = first if other_first is None else other_first
    return HunkSides(number, first, body_t, old, new, lead, trail, other)


def _runs(body: Sequence[tuple[str, bytes]]) -> tuple[tuple[str, int, tuple[bytes, ...]], ...]:
    """``body`` as runs of lines of one kind: ``(kind, count, lines)`` (how :func:`apply_one`
    walks a hunk a run at a time)."""
    return _kind_runs("".join([kind for kind, _ in body]), [ln for _, ln in body])


def _kind_runs(kinds: str, lines: Sequence[bytes]) -> tuple[tuple[str, int, tuple[bytes, ...]], ...]:
    import re  # at call: only for hunks placed with fuzz or over consumed lines

    out: list[tuple[str, int, tuple[bytes, ...]]] = []
    for m in re.finditer(r" +|-+|\++", kinds):
        a, b = m.span()
        kind = kinds[a]
        out.append((kind, b - a, tuple(lines[a:b]) if kind == ADDED else ()))
    return tuple(out)


_FLIP = str.maketrans("+-", "-+")
_KINDS = {MINUS: REMOVED, PLUS: ADDED}
_KINDS_R = {MINUS: ADDED, PLUS: REMOVED}
for _k in range(256):
    if _k not in (MINUS, PLUS):
        _KINDS[_k] = _KINDS_R[_k] = CONTEXT


def sides(h: Hunk, reverse: bool = False) -> HunkSides:
    """The engine's view of a parsed hunk; ``reverse`` (``-R``) swaps the removed and added lines
    and the two header ranges before anything else happens (GNU patch 2.7.6 behaviour,
    observed)."""
    first, other = (h.new_start, h.old_start) if reverse else (h.old_start, h.new_start)
    plain = h.plain_lines()
    split = h.plain_sides()
    if plain is not None and split is not None:
        return _plain_sides(h.number, first, other, plain[0], plain[1], split, reverse)
    kinds = _KINDS_R if reverse else _KINDS
    body = [(kinds[bl.kind], bl.text + b"\n" if bl.newline else bl.text) for bl in h.lines]
    return make_sides(h.number, first, body, other)


def _plain_sides(
    number: int,
    first: int,
    other: int,
    lines: list[bytes],
    ks: str,
    split: tuple[tuple[bytes, ...], tuple[bytes, ...], int, int],
    reverse: bool,
) -> HunkSides:
    """:func:`make_sides` for a hunk whose body lines (``lines``, with their LF; ``ks`` their
    kinds; ``split`` its sides, see :meth:`~dryboot.patching.parse.Hunk.plain_sides`) all end
    with LF, built without a Python step per line (a hunk of a large generated file may have
    tens of thousands)."""
    old, new, lead, trail = split
    if reverse:
        ks = ks.translate(_FLIP)
        old, new = new, old
    return HunkSides(number, first, tuple(zip(ks, lines, strict=True)), old, new, lead, trail, other)


@record
class HunkResult:
    """What happened to one hunk.

    :param status: ``exact``, ``offset`` (placed away from the line its header names), ``fuzz``
        (placed with trimmed context) or ``failed``.
    :param offset: the running offset after this hunk (position minus start); 0 for a failure
        that found no position.
    :param line: the line GNU patch's message names: for a placed hunk its position in the
        output file, for a failure the start plus the growth so far (a misordered failure names
        the position it found plus the growth).
    :param fuzz: the fuzz level used (0 when exact or failed).
    :param needs_fuzz: for a failure, the lowest fuzz level above the allowed one that would have
        placed it (measured only when asked), else None.
    :param evidence: for a failure, the first differing line at the nearest candidate, quoted.
    :param tie: when the hunk also matches at the position just as far on the other side of its
        expected line (GNU patch takes the later one), that other input line.
    :param misordered: GNU patch's "misordered hunks! output would be garbled".
    :param endings_differ: GNU patch adds "(different line endings)" to the failure message.
    """

    number: int
    status: str
    offset: int = 0
    line: int = 0
    fuzz: int = 0
    needs_fuzz: int | None = None
    tie: int | None = None
    evidence: str = ""
    misordered: bool = False
    endings_differ: bool = False

    def message(self) -> str | None:
        """The line GNU patch prints for this hunk, or None when it prints nothing (placed at its
        expected line without fuzz). ``(offset 1 line)`` is singular only for +1; -1 reads
        ``(offset -1 lines)`` (GNU patch 2.7.6 behaviour, observed)."""
        if self.status == "failed":
            tail = " (different line endings)" if self.endings_differ else ""
            return f"Hunk #{self.number} FAILED at {self.line}{tail}."
        if not self.fuzz and not self.offset:
            return None
        text = f"Hunk #{self.number} succeeded at {self.line}"
        if self.fuzz:
            text += f" with fuzz {self.fuzz}"
        if self.offset:
            text += f" (offset {self.offset} line{'' if self.offset == 1 else 's'})"
        return text + "."


@record
class FileRun:
    """The result of :func:`run_hunks`: the output bytes (failed hunks left out, as GNU patch
    writes a partially patched file), one result per hunk, and whether GNU patch (without
    ``-f``) would have said "Reversed (or previously applied) patch detected!"."""

    data: bytes
    results: list[HunkResult] = field(default_factory=list)
    reversed: bool = False
    lines: list[bytes] | None = field(default=None, repr=False, compare=False)
    pieces: Pieces | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return all(r.status != "failed" for r in self.results)

    def messages(self) -> list[str]:
        """GNU patch's per-hunk output lines for this file, in order."""
        out: list[str] = []
        for r in self.results:
            if r.misordered:
                out.append("misordered hunks! output would be garbled")
            m = r.message()
            if m is not None:
                out.append(m)
        return out


# --- rules of placement -------------------------------------------------------------------------


def fuzz_levels(h: HunkSides, max_fuzz: int) -> range:
    """Fuzz levels tried, in order: 0, 1, ... up to the allowed maximum, but never more than the
    larger of lead and trail (more would trim nothing new). GNU patch 2.7.6 behaviour,
    observed."""
    return range(min(max_fuzz, max(h.lead, h.trail)) + 1)


def trimmed_context(lead: int, trail: int, level: int) -> tuple[int, int]:
    """Context ignored at each end at fuzz ``level``: with m = max(lead, trail), the top loses
    ``level - (m - lead)`` lines and the bottom ``level - (m - trail)``. A negative number trims
    nothing and anchors that end (see :func:`anchoring`). GNU patch 2.7.6 behaviour, observed."""
    m = max(lead, trail)
    return level - (m - lead), level - (m - trail)


def anchoring(h: HunkSides, top: int, bottom: int) -> str:
    """``"top"``, ``"bottom"`` or ``""``: a negative bottom number anchors the hunk to the end of
    the file; a negative top number anchors it to line 1, but only when its header says it starts
    at line 1 or 0 (a hunk with short lead context elsewhere is searched like any other). GNU
    patch 2.7.6 behaviour, observed."""
    if bottom < 0:
        return "bottom"
    if top < 0 and h.first <= 1:
        return "top"
    return ""


def last_candidate(n_lines: int, old_len: int, bottom: int) -> int:
    """The last position at which the trimmed old side still ends inside the file: trimmed
    trailing context may hang past the end of the file. GNU patch 2.7.6 behaviour, observed."""
    return n_lines - old_len + max(bottom, 0) + 1


def search_order(expected: int, consumed: int, last: int) -> Iterator[int]:
    """Positions to try, best first (GNU patch 2.7.6 behaviour, observed).

    When the expected line e lies after the consumed line c: e, e+1, e-1, e+2, e-2, ... (of two
    positions equally far, the later first); forward up to ``last``, backward only while still
    after c (and never past ``last``). When e is at or before c: nothing at all if e is past
    ``last``; else first 2e-c-1, then c+1, then every position from 2e-c up to ``last`` in
    ascending order (matches at or before c then end in "misordered hunks")."""
    room_back = expected - consumed - 1
    if room_back >= 0:
        d = max(0, expected - last)  # nearer distances reach no position that fits
        while d <= max(last - expected, room_back):
            if expected + d <= last:
                yield expected + d
            if 0 < d <= room_back and expected - d <= last:
                yield expected - d
            d += 1
    elif expected <= last:
        low = expected + room_back
        yield low
        yield consumed + 1
        yield from range(low + 1, last + 1)


def order_rank(p: int, expected: int, consumed: int, last: int) -> int | None:
    """The index of position ``p`` in :func:`search_order` (None when it is not tried), computed
    directly so that candidates from a line index can be ranked without walking the order."""
    if p > last:
        return None
    room_back = expected - consumed - 1
    if room_back >= 0:
        if p >= expected:
            return 2 * (p - expected)
        d = expected - p
        return 2 * d + 1 if d <= room_back else None
    if expected > last:
        return None
    low = expected + room_back
    if p == low:
        return 0
    if p == consumed + 1:
        return 1
    if p > low:
        return p - low + 1
    return None


def is_misordered(p: int, lead: int, consumed: int) -> bool:
    """A position found is refused as "misordered hunks! output would be garbled" when the hunk's
    first change would fall at or before the consumed line, i.e. inside what an earlier hunk
    already wrote (its leading context may overlap). GNU patch 2.7.6 behaviour, observed."""
    return p + lead <= consumed


# --- the file being patched ---------------------------------------------------------------------


class FileView:
    """The input lines (1-based), and on first need the whole text with each line's offset in
    it, so that a hunk far from its expected line is found by a byte search (in C) for its
    rarest line instead of comparing at every position or indexing every line."""

    __slots__ = ("_data", "_starts", "lines", "n")

    def __init__(self, lines: Sequence[bytes]) -> None:
        self.lines = lines if isinstance(lines, list) else list(lines)
        self.n = len(self.lines)
        self._data: bytes | None = None
        self._starts: list[int] = []

    def line(self, k: int) -> bytes | None:
        """Input line ``k`` (1-based), or None outside the file."""
        return self.lines[k - 1] if 1 <= k <= self.n else None

    def _text(self) -> bytes:
        """An LF, then every line: so each line starts right after an LF (built once)."""
        if self._data is None:
            self._data = b"\n" + b"".join(self.lines)
            self._starts = list(accumulate(map(len, self.lines), initial=1))
        return self._data

    def count_of(self, text: bytes) -> int:
        """About how many lines hold ``text`` (a line starting with it, when ``text`` has no LF):
        a ranking of rarity, counted in C."""
        return self._text().count(b"\n" + text)

    def positions_of(self, text: bytes) -> list[int]:
        """Every 1-based line number holding exactly ``text``, ascending."""
        data = self._text()
        needle = b"\n" + text
        whole = text.endswith(b"\n")
        out: list[int] = []
        find = data.find
        pos = find(needle)
        while pos >= 0:
            if whole or pos + len(needle) == len(data):
                out.append(bisect_left(self._starts, pos + 1) + 1)
            pos = find(needle, pos + len(needle) - 1 if whole else pos + 1)
        return out

    def matches(self, old: Sequence[bytes], p: int, lo: int, hi: int) -> bool:
        """Whether old-side lines ``lo`` to ``hi - 1`` equal the input lines from ``p + lo``, byte
        for byte (line endings included), and the trimmed old side ends inside the file. Lines
        before line 1 never match. GNU patch 2.7.6 behaviour, observed."""
        if p + hi - 1 > self.n:
            return False
        if lo < hi and p + lo < 1:
            return False
        if lo >= hi:
            return True
        base = p - 1
        lines = self.lines
        if lines[base + lo] != old[lo]:
            return False
        return lines[base + lo : base + hi] == list(old[lo:hi])


_NEAR = 8  # positions tried one by one before the line index is consulted


def find_position(view: FileView, h: HunkSides, expected: int, consumed: int, top: int, bottom: int) -> int | None:
    """The first position in search order at which the old side, trimmed by ``top``/``bottom``,
    equals the input (GNU patch 2.7.6 behaviour, observed).

    Anchored to the top: only line 1, and only if the hunk's first change would fall after the
    consumed line. Anchored to the bottom: only the position where the old side's last line is
    the file's last line, and only if it lies after the consumed line. Otherwise
    :func:`search_order`; an old side trimmed to nothing matches at the first position tried."""
    old = h.old
    size = len(old)
    kind = anchoring(h, top, bottom)
    lo = max(top, 0)
    hi = size - max(bottom, 0)
    if kind == "top":
        if is_misordered(1, h.lead, consumed):
            return None
        return 1 if view.matches(old, 1, 0, hi) else None
    if kind == "bottom":
        at = view.n - size + 1
        if at <= consumed:
            return None
        return at if view.matches(old, at, lo, size) else None
    last = last_candidate(view.n, size, bottom)
    order = search_order(expected, consumed, last)
    if lo >= hi:
        return next(order, None)
    for _, p in zip(range(_NEAR), order, strict=False):
        if view.matches(old, p, lo, hi):
            return p
    # the rest of the order: rank the positions where the rarest compared line occurs
    # (counting is a scan of the file: the longest lines first, which are the rarest, mostly;
    # at most 8, and none after one that occurs at most 4 times)
    key, fewest = lo, -1
    for i in sorted(range(lo, hi), key=lambda i: -len(old[i]))[:8]:
        c = view.count_of(old[i])
        if fewest < 0 or c < fewest:
            key, fewest = i, c
        if c <= 4:
            break
    ranked: list[tuple[int, int]] = []
    for q in view.positions_of(old[key]):
        p = q - key
        r = order_rank(p, expected, consumed, last)
        if r is not None and r >= _NEAR:
            ranked.append((r, p))
    ranked.sort()
    for _, p in ranked:
        if view.matches(old, p, lo, hi):
            return p
    return None


def tie_position(
    view: FileView, h: HunkSides, expected: int, consumed: int, top: int, bottom: int, p: int
) -> int | None:
    """When ``p`` lies d lines after the expected line and the hunk matches just as well d lines
    before it (and that position was a candidate), that earlier position: GNU patch takes the
    later one silently; dryboot reports the ambiguity."""
    d = p - expected
    if d <= 0 or anchoring(h, top, bottom) or d > expected - consumed - 1:
        return None
    other = expected - d
    lo, hi = max(top, 0), len(h.old) - max(bottom, 0)
    if lo < hi and view.matches(h.old, other, lo, hi):
        return other
    return None


# --- applying -----------------------------------------------------------------------------------


class Pieces:
    """Where the bytes of a file's lines live, so that a patched file is assembled by copying a
    few large byte ranges instead of joining every line again: ``items`` are runs of lines
    ``(source, offsets, lo, hi)`` -- lines ``lo`` to ``hi - 1`` of an immutable ``source`` whose
    line ``k`` starts at byte ``offsets[k]`` -- in file order; ``starts`` the file line (0-based)
    each run begins at, ``n`` the number of lines."""

    __slots__ = ("items", "n", "starts")

    def __init__(self, items: list[tuple[bytes, list[int], int, int]]) -> None:
        self.items = items
        self.starts = [0, *accumulate([hi - lo for _, _, lo, hi in items])]
        self.n = self.starts.pop()

    @classmethod
    def of(cls, data: bytes, lines: Sequence[bytes]) -> Pieces:
        """``data``, split into ``lines`` (see :func:`split_keep`), as one run."""
        return cls([(data, [0, *accumulate(map(len, lines))], 0, len(lines))])

    def take(self, a: int, b: int, into: list[tuple[bytes, list[int], int, int]]) -> None:
        """Append the runs holding lines ``a`` to ``b - 1`` (0-based) to ``into``."""
        k = bisect_right(self.starts, a) - 1
        while a < b:
            src, offs, lo, hi = self.items[k]
            first = lo + a - self.starts[k]
            last = min(hi, first + b - a)
            into.append((src, offs, first, last))
            a += last - first
            k += 1

    def data(self) -> bytes:
        parts = []
        for src, offs, lo, hi in self.items:
            x, y = offs[lo], offs[hi]
            parts.append(src if x == 0 and y == len(src) else memoryview(src)[x:y])
        return b"".join(parts)


class Output:
    """Output lines being assembled, with GNU patch's rule for a line that lacks its LF: before
    another line is written an LF is added to it, except while applying a hunk whose old side
    (untrimmed) runs past the end of the file, where the next line is written straight after it
    (GNU patch 2.7.6 behaviour, observed).

    Given the input's :class:`Pieces` (``source``), the output's pieces are kept alongside its
    lines while every line written is whole (the common case), and :meth:`data` copies a few
    byte ranges; after anything else they are dropped and :meth:`data` joins the lines."""

    __slots__ = ("glue", "glued", "parts", "pieces", "source")

    def __init__(self, source: Pieces | None = None) -> None:
        self.parts: list[bytes] = []
        self.glue = False
        self.glued = False  # a line was written straight after one lacking its LF
        self.source = source
        self.pieces: list[tuple[bytes, list[int], int, int]] | None = None if source is None else []

    def _open_end(self) -> None:
        if self.parts and not self.parts[-1].endswith(b"\n"):
            self.pieces = None  # a line is completed or glued: the pieces no longer hold it
            if self.glue:
                self.glued = True
            else:
                self.parts[-1] += b"\n"

    def write(self, line: bytes) -> None:
        self._open_end()
        self.parts.append(line)
        if self.pieces is not None:
            self.pieces.append((line, [0, len(line)], 0, 1))

    def copy(self, lines: Sequence[bytes], first: int, last: int) -> None:
        """Input lines ``first`` to ``last`` (1-based, inclusive; clipped to the file); ``lines``
        are the input's lines (those the ``source`` pieces hold)."""
        first = max(first, 1)
        last = min(last, len(lines))
        if first > last:
            return
        self._open_end()
        self.parts.extend(lines[first - 1 : last])
        if self.pieces is not None:
            assert self.source is not None
            self.source.take(first - 1, last, self.pieces)

    def write_run(self, lines: Sequence[bytes]) -> None:
        """Lines of which only the last may lack its LF (a hunk's run of added lines: a
        ``\\ No newline`` marker is valid only after the last line of its side)."""
        if lines:
            self._open_end()
            self.parts.extend(lines)
            if self.pieces is not None:
                self.pieces.append((b"".join(lines), [0, *accumulate(map(len, lines))], 0, len(lines)))

    def data(self) -> bytes:
        if self.pieces is not None:
            return Pieces(self.pieces).data()
        return b"".join(self.parts)

    def lines(self) -> list[bytes] | None:
        """The output as :func:`split_keep` would split :meth:`data`, when the parts are
        exactly those lines (nothing glued), else None."""
        if self.glued or (self.parts and not self.parts[-1]):
            return None
        return self.parts

    def result_pieces(self) -> Pieces | None:
        """The output's pieces, when kept and :meth:`lines` is not None."""
        if self.pieces is None or self.lines() is None:
            return None
        return Pieces(self.pieces)


def apply_one(out: Output, view: FileView, h: HunkSides, p: int, consumed: int, exact: bool = False) -> int:
    """Apply ``h`` at position ``p`` and return the new consumed line (GNU patch 2.7.6 behaviour,
    observed).

    Input lines after the consumed line and before ``p`` are copied; then the hunk is walked up to
    its last change: a context line writes the *file's* line (so lines skipped by fuzz keep the
    file's text; lines already consumed by the previous hunk are not written again), a removed
    line is skipped, an added line is written from the patch. Trailing context is left in the
    input, so the next hunk may use it; the consumed line becomes the line before the trailing
    context.

    ``exact``: the whole old side (no context trimmed by fuzz) equals the input at ``p``. When
    it also lies after the consumed line and inside the file, the file's context lines are the
    hunk's own, and the output is the new side without its trailing context, written at once."""
    end = p - 1 + len(h.old)
    if exact and p > consumed and end <= view.n:
        out.copy(view.lines, consumed + 1, p - 1)
        out.write_run(h.new[: len(h.new) - h.trail])
        return end - h.trail
    out.glue = bool(h.old) and end > view.n
    out.copy(view.lines, consumed + 1, p - 1)
    q = p
    for kind, count, added in _runs(h.body[: len(h.body) - h.trail]):
        if kind == CONTEXT:
            # the file's lines, except those already consumed and those past its end
            out.copy(view.lines, max(q, consumed + 1), q + count - 1)
            q += count
        elif kind == REMOVED:
            q += count
        else:
            out.write_run(added)
    out.glue = False
    return p - 1 + len(h.old) - h.trail


# --- the per-file run ---------------------------------------------------------------------------


def endings_differ(view: FileView, line_no: int, h: HunkSides) -> bool:
    """GNU patch's "(different line endings)" on a failure: the input line the message names
    (the last line when past the end; none when the number is below 1 or the file is empty)
    ends in CRLF and the hunk's first old-side line does not, or the other way round. GNU patch
    2.7.6 behaviour, observed."""
    if line_no < 1 or view.n == 0:
        return False
    file_crlf = view.lines[min(line_no, view.n) - 1].endswith(b"\r\n")
    hunk_crlf = bool(h.old) and h.old[0].endswith(b"\r\n")
    return file_crlf != hunk_crlf


@record
class _State:
    offset: int = 0
    consumed: int = 0
    growth: int = 0


@record
class _Found:
    position: int | None
    level: int
    top: int
    bottom: int
    expected: int


def locate(view: FileView, h: HunkSides, state: _State, levels: range) -> _Found:
    """Try ``levels`` in order with :func:`find_position`. Any position found moves the running
    offset to it (position minus start), even position 0, which counts as "not found" and makes
    the next level search from an expected line of 0; the first level finding a position other
    than 0 wins. An empty old side is placed at its expected line without any check (an
    expected line of 0 fails). GNU patch 2.7.6 behaviour, observed."""
    start = h.start
    if not h.old:
        e = start + state.offset
        return _Found(e if e != 0 else None, 0, 0, 0, e)
    e = start + state.offset
    for level in levels:
        top, bottom = trimmed_context(h.lead, h.trail, level)
        e = start + state.offset
        p = find_position(view, h, e, state.consumed, top, bottom)
        if p is None:
            continue
        state.offset = p - start
        if p != 0:
            return _Found(p, level, top, bottom, e)
    return _Found(None, 0, 0, 0, e)


def _quote(line: bytes) -> str:
    text = line[:-1] if line.endswith(b"\n") else line
    return repr(text.decode("utf-8", "backslashreplace"))


def evidence_at(view: FileView, h: HunkSides, state: _State) -> str:
    """Why the hunk does not fit, in words: the first hunk line that differs from the input at the
    nearest candidate at fuzz 0 (the anchored position when the hunk is anchored, else the
    expected line moved into the range of positions where the old side fits)."""
    size = len(h.old)
    expected = h.start + state.offset
    if not size:
        return f"an insertion expected at line {expected}, where GNU patch does not place it"
    lowest = max(1, state.consumed + 1)
    highest = view.n - size + 1
    if highest < lowest:
        return (
            f"the hunk's {size} old lines do not fit in the {max(view.n - lowest + 1, 0)} lines after line {lowest - 1}"
        )
    top, bottom = trimmed_context(h.lead, h.trail, 0)
    kind = anchoring(h, top, bottom)
    p = 1 if kind == "top" else highest if kind == "bottom" else min(max(expected, lowest), highest)
    k = 0
    for i, (kind, line) in enumerate(h.body):
        if kind == ADDED:
            continue
        got = view.line(p + k)
        if got != line:
            what = "context" if kind == CONTEXT else "removed"
            return (
                f"{what} line {i + 1} of the hunk ({_quote(line)}) does not match line {p + k} ({_quote(got or b'')})"
            )
        k += 1
    return f"the old side matches at line {p}, but GNU patch does not place it there"


def run_hunks(
    lines: Sequence[bytes],
    hunks: Sequence[HunkSides],
    max_fuzz: int = 0,
    measure: bool = True,
    pieces: Pieces | None = None,
    detect_reversed: bool | None = None,
) -> FileRun:
    """Place and apply ``hunks`` on ``lines`` (see :func:`split_keep`) as GNU patch 2.7.6 does
    with ``-f --fuzz max_fuzz``: byte-identical output, per-hunk outcome, offsets and fuzz.

    A failed hunk changes nothing and later hunks are still tried; ``data`` is then the partial
    result GNU patch would write. With ``measure`` a failure also gets the fuzz level that would
    have placed it and evidence, and ``reversed`` reports GNU patch's reversed-patch detection
    (see :func:`reversed_fits`): reported, never taken (``detect_reversed`` False skips that
    detection, which costs a second search of the first hunk; default: as ``measure``). ``pieces``: where the bytes of
    ``lines`` live (see :class:`Pieces`; the output's are then in ``FileRun.pieces``).
    """
    view = FileView(lines)
    out = Output(pieces if pieces is not None and pieces.n == view.n else None)
    state = _State()
    results: list[HunkResult] = []
    reversed_seen = False
    for idx, h in enumerate(hunks):
        levels = fuzz_levels(h, max_fuzz)
        if idx == 0 and (measure if detect_reversed is None else detect_reversed) and h.old:
            reversed_seen = reversed_fits(view, h, levels)
        before = _State(state.offset, state.consumed, state.growth)
        found = locate(view, h, state, levels)
        p = found.position
        start = h.start
        if p is not None and not is_misordered(p, h.lead, state.consumed):
            tie = tie_position(view, h, found.expected, state.consumed, found.top, found.bottom, p)
            line_no = p + state.growth
            state.consumed = apply_one(out, view, h, p, state.consumed, exact=found.level == 0)
            state.growth += len(h.new) - len(h.old)
            offset = p - start
            status = "fuzz" if found.level else ("offset" if offset else "exact")
            # every field in order: the record's quick path (no keyword handling)
            results.append(HunkResult(h.number, status, offset, line_no, found.level, None, tie, "", False, False))
            continue
        misordered = p is not None
        line_no = (p if p is not None else start) + state.growth
        r = HunkResult(
            h.number,
            "failed",
            state.offset if misordered else 0,
            line_no,
            misordered=misordered,
            endings_differ=endings_differ(view, line_no, h),
        )
        if measure:
            r.needs_fuzz = _needed_fuzz(view, h, before, max_fuzz)
            r.evidence = (
                f"misordered: it matches at line {p}, where an earlier hunk already changed the file"
                if misordered
                else evidence_at(view, h, before)
            )
        results.append(r)
    out.glue = False
    out.copy(view.lines, state.consumed + 1, view.n)
    return FileRun(out.data(), results, reversed_seen, out.lines(), out.result_pieces())


def _needed_fuzz(view: FileView, h: HunkSides, state: _State, max_fuzz: int) -> int | None:
    """The fuzz level at which GNU patch would place a hunk that failed at ``max_fuzz``, when
    allowed any level (None when no level places it); ``state`` is left untouched."""
    trial = _State(state.offset, state.consumed, state.growth)
    found = locate(view, h, trial, range(max(h.lead, h.trail) + 1))
    p = found.position
    if p is None or is_misordered(p, h.lead, trial.consumed) or found.level <= max_fuzz:
        return None
    return found.level


def reversed_fits(view: FileView, h: HunkSides, levels: range) -> bool:
    """GNU patch's reversed-patch detection for a file's first hunk: at each fuzz level where the
    hunk finds no position, its reversed form is tried at that same level; a fit before the
    forward hunk is placed means "Reversed (or previously applied) patch detected!" (so it can be
    reported for a hunk that would fit with more fuzz). GNU patch 2.7.6 behaviour, observed."""
    back: HunkSides | None = None  # built only when the forward hunk finds no position
    forward = _State()
    for level in levels:
        top, bottom = trimmed_context(h.lead, h.trail, level)
        p = find_position(view, h, h.start + forward.offset, 0, top, bottom)
        if p is not None:
            forward.offset = p - h.start
            if p != 0:
                return False
        if back is None:
            back = h.swapped()
        btop, bbottom = trimmed_context(back.lead, back.trail, level)
        q = find_position(view, back, back.start + forward.offset, 0, btop, bbottom)
        if q is not None and q != 0:
            return True
    return False
