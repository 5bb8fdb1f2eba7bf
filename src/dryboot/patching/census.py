"""Human-readable and JSON forms of the per-hunk census.

Vocabulary is GNU patch's: a hunk lands *exact*, at an *offset* of N lines (GNU's running
offset, as in "Hunk #2 succeeded at 48 (offset 3 lines)"), with *fuzz* F, or *FAILED*.
"""

from __future__ import annotations

from dryboot.patching.apply import FileOutcome, HunkStatus, PatchOutcome
from dryboot.patching.place import HunkResult

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (start-up time)
    from typing import Any


def hunk_words(r: HunkResult) -> str:
    """``exact``, ``offset +3``, ``fuzz 1``, or ``FAILED ...`` with evidence."""
    if r.status == "failed":
        parts = ["FAILED"]
        if r.needs_fuzz is not None:
            parts.append(f"(would need fuzz {r.needs_fuzz}: refused)")
        if r.evidence:
            parts.append("- " + r.evidence)
        return " ".join(parts)
    words = []
    if r.fuzz:
        words.append(f"fuzz {r.fuzz}")
    if r.offset:
        words.append(f"offset {r.offset:+d}")
    if not words:
        words.append("exact")
    s = ", ".join(words) + f" (at line {r.line})"
    if r.tie is not None:
        s += f"; tie: the old side also matches at line {r.tie}, equally near"
    return s


def outcome_lines(out: PatchOutcome, only_notable: bool = True) -> list[str]:
    """Indented detail lines for a patch outcome (offset, fuzz, ties, failures)."""
    lines: list[str] = []
    for f in out.files:
        name = _fname(f)
        if f.error and not f.results:
            lines.append(f"   {name}: FAILED - {f.error}")
        for r in f.results:
            notable = r.status != "exact" or r.offset or r.tie is not None
            if notable or not only_notable:
                lines.append(f"   {name}: hunk {r.number}: {hunk_words(r)}")
        if f.error and f.results and all(r.status != "failed" for r in f.results):
            lines.append(f"   {name}: FAILED - {f.error}")
    return lines


def _fname(f: FileOutcome) -> str:
    return f"{f.path} -> {f.new_path}" if f.new_path else f.path


def plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word}es" if word.endswith(("ch", "s", "x")) else f"{n} {word}s"


def hunk_json(h: HunkStatus) -> dict[str, Any]:
    """One hunk's status as a JSON-able dict."""
    d: dict[str, Any] = {"file": h.file, "hunk": h.number, "state": h.state}
    fr = h.forward
    if h.state == "applicable":
        d.update(placement=fr.status, offset=fr.offset, line=fr.line)
        if fr.tie is not None:
            d["tie"] = fr.tie
    elif h.state == "applied" and h.backward is not None:
        d.update(placement=h.backward.status, offset=h.backward.offset, line=h.backward.line)
        if h.backward.fuzz:
            d["fuzz"] = h.backward.fuzz
        if h.forward is not h.backward and h.forward.status != "failed":
            d["old_side_also_at"] = h.forward.line
    else:
        d.update(evidence=fr.evidence, needs_fuzz=fr.needs_fuzz)
    return d


def hunk_status_words(h: HunkStatus) -> str:
    """One status line's words for a hunk."""
    if h.state == "applicable":
        return f"applicable, {hunk_words(h.forward)}"
    if h.state == "applied" and h.backward is not None:
        b = h.backward
        where = (
            ", ".join(([f"fuzz {b.fuzz}"] if b.fuzz else []) + ([f"offset {b.offset:+d}"] if b.offset else []))
            or "exact"
        )
        s = f"applied (new side present, {where})"
        f = h.forward
        if f is not b and f.status != "failed":
            s += f"; the old side also fits at line {f.line}" + (f" (offset {f.offset:+d})" if f.offset else "")
        return s
    return f"conflict: {hunk_words(h.forward)}"


def refresh_hint(fuzz: int, flag: str = "--fuzz") -> str:
    """How to act on a hunk that would need ``fuzz``: accept it, or refresh the patch."""
    return (
        f"hint: {flag} {fuzz} accepts it; better, refresh the patch: apply it with {flag} "
        f"{fuzz} to a clean copy of the tree it targets, then regenerate it with `diff -u` "
        "(or `git diff`, `quilt refresh`) so that its context matches again"
    )
