"""GNU patch's hunk locator and applier, on lists of byte lines.

A file is a list of lines, each ``bytes`` ending with LF except possibly the last. A hunk is a
:class:`Sides` (old side = context and ``-`` lines, new side = context and ``+`` lines). The
search follows GNU patch 2.7.6 ``locate_hunk``: the first guess is the old start plus the running
offset of earlier hunks of the file; offsets are tried outward, ``+k`` before ``-k`` (so of two
equally near matches GNU patch takes the later one -- reported here as a tie); a hunk with less
leading than trailing context may only match at the start of the file (when its old start is
line 1), one with less trailing context only at the end; fuzz ``F`` ignores up to ``F`` context
lines at each end. Application follows GNU ``apply_hunk``/``copy_till``, including the missing
final newline handling, so results are byte-identical to GNU patch's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dryboot.patching.parse import MINUS, PLUS, SP, Hunk

SAMPLE_LIMIT = 4_000_000  # line comparisons allowed when searching for a nearest candidate


@dataclass
class Sides:
    """One hunk in GNU patch's internal form.

    ``old``/``new`` are the two sides' lines (bytes with their LF, the last possibly without);
    ``old_kinds``/``new_kinds`` the body kind of each (``' '``/``'-'`` and ``' '``/``'+'`` as
    ints); ``first`` is GNU's ``pch_first`` (old start, +1 when the old side is empty);
    ``prefix``/``suffix`` the leading/trailing context line counts.
    """

    number: int
    old: list[bytes]
    new: list[bytes]
    old_kinds: list[int]
    new_kinds: list[int]
    first: int
    newfirst: int
    prefix: int
    suffix: int


def sides(h: Hunk, reverse: bool = False) -> Sides:
    """Convert a parsed hunk to :class:`Sides` (swapped for ``-R``)."""
    old: list[bytes] = []
    new: list[bytes] = []
    ok: list[int] = []
    nk: list[int] = []
    minus, plus = (PLUS, MINUS) if reverse else (MINUS, PLUS)
    for ln in h.lines:
        text = ln.text + b"\n" if ln.newline else ln.text
        if ln.kind != plus:
            old.append(text)
            ok.append(SP if ln.kind == SP else MINUS)
        if ln.kind != minus:
            new.append(text)
            nk.append(SP if ln.kind == SP else PLUS)
    kinds = [ln.kind for ln in h.lines]
    changed = [k for k, c in enumerate(kinds) if c != SP]
    prefix = changed[0] if changed else len(kinds)
    suffix = len(kinds) - 1 - changed[-1] if changed else 0
    ostart, ocount, nstart, ncount = h.old_start, h.old_count, h.new_start, h.new_count
    if reverse:
        ostart, ocount, nstart, ncount = nstart, ncount, ostart, ocount
    first = ostart + (1 if ocount == 0 else 0)
    newfirst = nstart + (1 if ncount == 0 else 0)
    return Sides(h.number, old, new, ok, nk, first, newfirst, prefix, suffix)


@dataclass
class HunkResult:
    """What happened to one hunk (GNU patch's census, plus evidence).

    ``status``: ``exact``, ``offset``, ``fuzz`` (accepted), ``failed``.
    ``offset``: GNU patch's reported offset (its running ``in_offset``; 0 when none).
    ``line``: where the new side landed (GNU's "succeeded at L"), or was expected.
    ``fuzz``: fuzz used; ``needs_fuzz``: for a failed hunk, the fuzz that would have placed it
    (refused by policy), else None. ``tie``: the other, equally near, matching line, or None.
    ``evidence``: for a failed hunk, the first old-side line that does not match and the
    nearest candidate position.
    """

    number: int
    status: str
    offset: int = 0
    line: int = 0
    fuzz: int = 0
    needs_fuzz: int | None = None
    tie: int | None = None
    evidence: str = ""


@dataclass
class FileRun:
    """Result of applying a list of hunks to one file: output ``data`` and per-hunk census."""

    data: bytes
    results: list[HunkResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.status != "failed" for r in self.results)


class _Run:
    def __init__(self, lines: list[bytes]) -> None:
        self.inp = lines
        self.n = len(lines)
        self.in_offset = 0
        self.out_offset = 0
        self.last_frozen = 0
        self.out: list[bytes] = []
        self.after_newline = True

    # GNU patch_match: compare pattern lines [1+prefix_fuzz .. pat_lines-suffix_fuzz]
    def match(self, pat: list[bytes], base: int, prefix_fuzz: int, suffix_fuzz: int) -> bool:
        lo = base + prefix_fuzz  # 1-based input line of pattern line 1+prefix_fuzz
        plo, phi = prefix_fuzz, len(pat) - suffix_fuzz
        cnt = phi - plo
        if cnt <= 0:
            return True
        if lo >= 1 and lo - 1 + cnt <= self.n:
            inp = self.inp
            if inp[lo - 1] != pat[plo]:
                return False
            return inp[lo - 1 : lo - 1 + cnt] == pat[plo:phi]
        for k in range(cnt):
            il = lo + k
            got = self.inp[il - 1] if 1 <= il <= self.n else b""
            if got != pat[plo + k]:
                return False
        return True

    def locate(self, s: Sides, fuzz: int) -> tuple[int, int, int | None]:
        """GNU locate_hunk. Returns (where, new in_offset, tie line) -- where 0 = not found."""
        pat = s.old
        first_guess = s.first + self.in_offset
        pat_lines = len(pat)
        context = max(s.prefix, s.suffix)
        prefix_fuzz = fuzz + s.prefix - context
        suffix_fuzz = fuzz + s.suffix - context
        max_where = self.n - (pat_lines - suffix_fuzz) + 1
        min_where = self.last_frozen + 1
        max_pos_offset = max_where - first_guess
        max_neg_offset = first_guess - min_where
        max_offset = max(max_pos_offset, max_neg_offset)
        if not pat_lines:
            return first_guess, self.in_offset, None
        if first_guess <= max_neg_offset:
            max_neg_offset = first_guess - 1
        if prefix_fuzz < 0 and s.first <= 1:
            if suffix_fuzz < 0 and (pat_lines != self.n or s.prefix < self.last_frozen):
                return 0, self.in_offset, None
            offset = 1 - first_guess
            if (
                self.last_frozen <= s.prefix
                and offset <= max_pos_offset
                and self.match(pat, first_guess + offset, 0, suffix_fuzz)
            ):
                return first_guess + offset, self.in_offset + offset, None
            return 0, self.in_offset, None
        if prefix_fuzz < 0:
            prefix_fuzz = 0
        if suffix_fuzz < 0:
            offset = first_guess - (self.n - pat_lines + 1)
            if offset <= max_neg_offset and self.match(pat, first_guess - offset, prefix_fuzz, 0):
                return first_guess - offset, self.in_offset - offset, None
            return 0, self.in_offset, None
        if max_pos_offset < 0:
            min_offset = first_guess - max_where
        elif max_neg_offset < 0:
            min_offset = first_guess - min_where
        else:
            min_offset = 0
        for offset in range(min_offset, max_offset + 1):
            if offset <= max_pos_offset and self.match(pat, first_guess + offset, prefix_fuzz,
                                                       suffix_fuzz):
                tie = None
                if (
                    offset > 0
                    and offset <= max_neg_offset
                    and self.match(pat, first_guess - offset, prefix_fuzz, suffix_fuzz)
                ):
                    tie = first_guess - offset
                return first_guess + offset, self.in_offset + offset, tie
            if offset <= max_neg_offset and self.match(pat, first_guess - offset, prefix_fuzz,
                                                       suffix_fuzz):
                return first_guess - offset, self.in_offset - offset, None
        return 0, self.in_offset, None

    def copy_till(self, lastline: int) -> bool:
        if self.last_frozen > lastline:
            return False
        hi = min(lastline, self.n)
        if hi > self.last_frozen:
            chunk = self.inp[self.last_frozen : hi]
            if not self.after_newline:
                self.out.append(b"\n")
            self.out.extend(chunk)
            self.after_newline = chunk[-1].endswith(b"\n")
        self.last_frozen = lastline
        return True

    def write(self, line: bytes) -> None:
        self.out.append(line)
        self.after_newline = line.endswith(b"\n")

    def apply(self, s: Sides, where: int) -> bool:
        """GNU apply_hunk for a unified hunk."""
        old, new = 0, 0
        lastline = len(s.old)
        pat_new = len(s.new)
        w = where - 1
        while old < lastline:
            if s.old_kinds[old] == MINUS:
                if not self.copy_till(w + old):
                    return False
                self.last_frozen += 1
                old += 1
            elif new >= pat_new:
                break
            elif s.new_kinds[new] == PLUS:
                if not self.copy_till(w + old):
                    return False
                self.write(s.new[new])
                new += 1
            else:
                old += 1
                new += 1
        if new < pat_new and s.new_kinds[new] == PLUS:
            if not self.copy_till(w + old):
                return False
            while new < pat_new and s.new_kinds[new] == PLUS:
                if not self.after_newline:
                    self.out.append(b"\n")
                self.write(s.new[new])
                new += 1
        self.out_offset += len(s.new) - len(s.old)
        return True

    def finish(self) -> bytes:
        self.copy_till(self.n)
        return b"".join(self.out)


def _split_keep(data: bytes) -> list[bytes]:
    if not data:
        return []
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def split_keep(data: bytes) -> list[bytes]:
    """Split file ``data`` into lines that keep their LF (split on LF only; CR is content)."""
    return _split_keep(data)


def _evidence(run: _Run, s: Sides, expected: int) -> str:
    """Describe why a hunk does not match: first mismatching old-side line at the expected
    position, and the nearest position where most old-side lines match."""
    pat = s.old
    if not pat:
        return ""
    inp, n = run.inp, run.n
    parts = []
    for k, p in enumerate(pat):
        il = expected + k
        got = inp[il - 1] if 1 <= il <= n else None
        if got != p:
            kind = "context" if s.old_kinds[k] == SP else "removed"
            if got is None:
                parts.append(f"{kind} line {k + 1} of the hunk ({_show(p)}) is past the end of "
                             f"the file (line {il})")
            else:
                parts.append(f"{kind} line {k + 1} of the hunk ({_show(p)}) does not match "
                             f"line {il} ({_show(got)})")
            break
    m = len(pat)
    best, best_score = 0, -1
    if n and (n * m <= SAMPLE_LIMIT):
        for pos in range(1, max(1, n - m + 1) + 1):
            score = sum(1 for k in range(m) if pos + k <= n and inp[pos + k - 1] == pat[k])
            if score > best_score or (
                score == best_score and abs(pos - expected) < abs(best - expected)
            ):
                best, best_score = pos, score
    elif n:
        idx = [i + 1 for i, x in enumerate(inp) if x == pat[0]]
        if idx:
            best = min(idx, key=lambda i: abs(i - expected))
            best_score = 1
    if s.prefix != s.suffix and s.prefix + s.suffix:
        end = "start" if s.prefix < s.suffix else "end"
        if end == "end" or s.first <= 1:
            parts.append(f"the hunk has {s.prefix} leading and {s.suffix} trailing context "
                         f"lines, so it may only match at the {end} of the file (GNU patch and "
                         "git agree)")
    if best_score > 0:
        parts.append(f"nearest candidate at line {best} ({best_score} of {m} old-side lines "
                     "match)")
    else:
        parts.append("no candidate position in the file")
    return "; ".join(parts)


def _show(b: bytes, width: int = 60) -> str:
    s = repr(b.rstrip(b"\n"))[2:-1]
    return "'" + (s if len(s) <= width else s[: width - 3] + "...") + "'"


def run_hunks(
    lines: list[bytes], hunks: list[Sides], max_fuzz: int = 0, measure: bool = True
) -> FileRun:
    """Apply ``hunks`` in order to ``lines`` like GNU patch ``--fuzz max_fuzz`` (``-f``: never
    guessing a reversed patch). Failed hunks leave the file unchanged there, as in GNU patch;
    later hunks are still tried. With ``measure``, a failed hunk records the fuzz that would
    have placed it (``needs_fuzz``) and evidence.

    :returns: a :class:`FileRun` with the output lines and one :class:`HunkResult` per hunk.
    """
    run = _Run(lines)
    results: list[HunkResult] = []
    for s in hunks:
        context = max(s.prefix, s.suffix)
        mymaxfuzz = min(max_fuzz, context)
        fuzz = 0
        where, new_off, tie = run.locate(s, 0)
        while not where and fuzz < mymaxfuzz:
            fuzz += 1
            where, new_off, tie = run.locate(s, fuzz)
        if where:
            run.in_offset = new_off
        newwhere = (where if where else s.first) + run.out_offset
        if where and run.apply(s, where):
            status = "fuzz" if fuzz else ("offset" if run.in_offset else "exact")
            results.append(HunkResult(s.number, status, run.in_offset, newwhere, fuzz, None,
                                      tie))
            continue
        res = HunkResult(s.number, "failed", 0, newwhere)
        if measure:
            for f in range(mymaxfuzz + 1, context + 1):
                w, _, _ = run.locate(s, f)
                if w:
                    res.needs_fuzz = f
                    break
            res.evidence = _evidence(run, s, s.first + run.in_offset)
        results.append(res)
    return FileRun(run.finish(), results)
