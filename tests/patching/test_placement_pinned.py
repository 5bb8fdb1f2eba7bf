"""Each placement behaviour of docs/hunk-placement.md, pinned against GNU patch 2.7.6 run live.

Every test builds a small tree and patch, runs ``patch -f -p1 --fuzz N`` on it, runs dryboot's
engine on the same input, and requires the same exit status, the same per-hunk lines (outcome,
line number, offset, fuzz, "misordered", "different line endings") and the same bytes in every
file. A second assertion checks that GNU patch really shows the behaviour the test is about; the
lines quoted in comments are what ``patch`` printed when the test was written (same command).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from dryboot.patching.parse import parse_patch
from dryboot.patching.place import run_hunks, sides, split_keep

from .helpers import GnuTreeRun, engine_tree, gnu_patch_tree


def lines(*xs: str) -> bytes:
    return "".join(x + "\n" for x in xs).encode()


def numbered(n: int, tag: str = "l") -> list[str]:
    return [f"{tag}{i}" for i in range(1, n + 1)]


def hunk(old_start: int, *body: str, new_start: int | None = None) -> str:
    """A hunk with counts from its body (``body`` items start with ' ', '-' or '+')."""
    old = sum(1 for b in body if b[0] != "+")
    new = sum(1 for b in body if b[0] != "-")
    return f"@@ -{old_start},{old} +{old_start if new_start is None else new_start},{new} @@\n" + "".join(
        b + "\n" for b in body
    )


def patch(*hunks: str, name: str = "f") -> bytes:
    return (f"--- a/{name}\n+++ b/{name}\n" + "".join(hunks)).encode()


def same(files: dict[str, bytes] | bytes, p: bytes, fuzz: int = 0, reverse: bool = False) -> GnuTreeRun:
    """Run GNU patch and the engine on the same input; require identical results; return GNU's."""
    tree = {"f": files} if isinstance(files, bytes) else files
    gnu = gnu_patch_tree(tree, p, fuzz=fuzz, reverse=reverse)
    mine = engine_tree(tree, p, fuzz, reverse)
    assert gnu.rc in (0, 1), gnu.output
    assert (gnu.rc == 0) == mine.ok, gnu.output
    assert {k: v for k, v in gnu.messages.items() if v} == {k: v for k, v in mine.messages.items() if v}
    assert gnu.files == mine.files
    return gnu


def msgs(run: GnuTreeRun, name: str = "f") -> list[str]:
    return run.messages.get(name, [])


# --- message line numbers -----------------------------------------------------------------------


def test_line_numbers_count_in_the_output_file() -> None:
    # two lines inserted at the top of the target; hunk 1 adds two lines, so hunk 2's line is in
    # output coordinates: position 22 + growth 2.
    # patch printed: "Hunk #1 succeeded at 5 (offset 2 lines)." / "Hunk #2 succeeded at 24 (offset 2 lines)."
    target = lines("x", "y", *numbered(30))
    p = patch(
        hunk(3, " l3", " l4", "-l5", "+L5", "+L5b", "+L5c", " l6", " l7"), hunk(19, " l19", "-l20", "+L20", " l21")
    )
    run = same(target, p)
    assert msgs(run) == ["Hunk #1 succeeded at 5 (offset 2 lines).", "Hunk #2 succeeded at 23 (offset 2 lines)."]


def test_failed_line_is_start_plus_growth_not_offset() -> None:
    # patch printed: "Hunk #1 succeeded at 4 (offset 2 lines)." / "Hunk #2 FAILED at 13."
    target = lines("h1", "h2", *numbered(20, "y"))
    p = patch(hunk(2, " y2", "-y3", "+Y3", "+extra", " y4"), hunk(12, " y12", "-nope", "+Y8", " y14", new_start=30))
    run = same(target, p)
    assert msgs(run)[-1] == "Hunk #2 FAILED at 13."


def test_with_fuzz_and_offset_in_one_message() -> None:
    base = numbered(20)
    base[2] = "CHANGED"
    p = patch(hunk(3, " l3", " l4", " l5", "-l6", "+L6", " l7", " l8", " l9"))
    run = same(lines("x", "x", *base), p, fuzz=2)
    assert msgs(run) == ["Hunk #1 succeeded at 5 with fuzz 1 (offset 2 lines)."]


@pytest.mark.parametrize(("shift", "word"), [(1, "line"), (-1, "lines"), (2, "lines")])
def test_offset_plural(shift: int, word: str) -> None:
    # "(offset 1 line)" but "(offset -1 lines)": only +1 is singular
    base = numbered(20)
    target = base[1:] if shift < 0 else ["x"] * shift + base
    run = same(lines(*target), patch(hunk(8, " l8", "-l9", "+L9", " l10")))
    assert msgs(run) == [f"Hunk #1 succeeded at {8 + shift} (offset {shift} {word})."]


# --- misordered and overlapping hunks -----------------------------------------------------------


def test_misordered_hunk_fails_with_garbled_warning() -> None:
    # patch printed: "Hunk #1 succeeded at 6 (offset -1 lines)." / "misordered hunks! output would be
    # garbled" / "Hunk #2 FAILED at 2."
    target = lines(*"abcdefghijkl")
    p = patch(hunk(7, " f", " g", "-h", "+H", " i", " j"), hunk(2, " b", " c", "-d", "+D", " e", " f"))
    run = same(target, p)
    assert "misordered hunks! output would be garbled" in msgs(run)


def test_misordered_line_number_and_offset_carry_on() -> None:
    # the misordered hunk names the position it found plus the growth (here 2 - 2 = 0), and the
    # running offset moves there: hunk 3 is then searched from its start plus that offset
    target = lines(*"abcdefghijklmnopqrstuvwxyz")
    p = patch(
        hunk(7, " g", " h", "-i", "-j", " k", " l"),
        hunk(4, " b", " c", "-d", "+D", " e", " f"),
        hunk(20, " t", "-u", "+U", " v"),
    )
    run = same(target, p)
    assert "Hunk #2 FAILED at 0." in msgs(run)


def test_overlapping_hunk_reuses_trailing_context() -> None:
    target = lines(*"abcdefghijkl")
    run = same(target, patch(hunk(1, " a", "-b", "+B", " c", " d"), hunk(3, " c", " d", "-e", "+E", " f", " g")))
    assert run.rc == 0 and run.files["f"] == lines("a", "B", "c", "d", "E", *"fghijkl")


def test_overlapping_hunk_may_use_lines_the_previous_hunk_changed_as_context() -> None:
    # hunk 2's context "b c" includes "c", which hunk 1 removed; its first change comes after
    target = lines(*"abcdefghijkl")
    run = same(target, patch(hunk(1, " a", " b", "-c", "+C", " d", " e"), hunk(2, " b", " c", "-d", "+D", " e", " f")))
    assert run.rc == 0 and run.files["f"] == lines("a", "b", "C", "D", *"efghijkl")


def test_overlapping_change_at_a_consumed_line_is_misordered() -> None:
    target = lines(*"abcdefghijkl")
    run = same(target, patch(hunk(2, " b", " c", "-d", "+D", " e", " f"), hunk(3, " c", "-d", "+D", " e")))
    assert "misordered hunks! output would be garbled" in msgs(run)


# --- search order -------------------------------------------------------------------------------


def test_tie_goes_to_the_later_position() -> None:
    body = ["x", "y", "z"]
    target = lines(*(["p"] * 3 + body + ["p"] * 5 + body + ["p"] * 3))
    run = same(target, patch(hunk(8, " x", "-y", "+Y", " z")))
    assert msgs(run) == ["Hunk #1 succeeded at 12 (offset 4 lines)."]


def test_tie_is_reported_by_the_engine() -> None:
    body = ["x", "y", "z"]
    data = lines(*(["p"] * 3 + body + ["p"] * 5 + body + ["p"] * 3))
    p = patch(hunk(8, " x", "-y", "+Y", " z"))
    run = run_hunks(split_keep(data), [sides(h) for h in parse_patch(p, "p").sections[0].hunks])
    gnu = gnu_patch_tree({"f": data}, p)
    assert run.data == gnu.files["f"]
    # GNU patch took the copy at line 12; the other copy (line 4) is just as near
    assert [(r.line, r.tie) for r in run.results] == [(12, 4)]


def test_expected_line_past_the_last_candidate_searches_downward() -> None:
    # a 12-line file, hunk header at 40: the nearest candidates are the last ones
    target = lines(*numbered(12))
    run = same(target, patch(hunk(40, " l8", "-l9", "+L9", " l10")))
    assert msgs(run) == ["Hunk #1 succeeded at 8 (offset -32 lines)."]


@pytest.mark.parametrize("where", [[12, 15], [13, 15], [7, 21], [10, 21], [10, 22], [19, 22], [13, 14], [8, 9]])
def test_expected_line_before_the_consumed_line(where: list[int]) -> None:
    # hunk 1 consumes line 20; hunk 2 (one line, no context) expects line 14: GNU patch tries
    # 2e-c-1 = 7 first, then 21 (c+1), then 8, 9, ... upward, so which copy of "M" wins, and
    # whether it is misordered, depends on that order, not on the distance
    base = numbered(40)
    for k in where:
        base[k - 1] = "M"
    run = same(lines(*base), patch(hunk(20, "-l20", "+X"), hunk(14, "-M", "+Y")))
    assert len(msgs(run)) >= 1


def test_expected_line_before_consumed_and_past_last_candidate_finds_nothing() -> None:
    # c = 25 = n, e = 25, a 2-line old side: its last candidate is 24 < e, so nothing is tried,
    # although "M N" sits at 23-24: a plain failure, not "misordered"
    base = numbered(25)
    base[22:24] = ["M", "N"]
    run = same(lines(*base), patch(hunk(25, "-l25", "+X"), hunk(25, "-M", "-N", "+Y")))
    assert msgs(run)[-1] == "Hunk #2 FAILED at 25."


def test_match_at_position_zero_is_not_taken_and_moves_the_offset() -> None:
    # fuzz 1 finds the hunk at position 0 (trimmed lead), which GNU patch treats as no match but
    # whose offset it keeps; at fuzz 2 the hunk (all context trimmed) lands at 2*0-10-1 = -11
    base = numbered(30)
    base[0:2] = ["B", "C"]
    run = same(lines(*base), patch(hunk(10, "-l10", "+W"), hunk(3, " A", " B", "+Y", " C", " D")), fuzz=2)
    assert msgs(run)[-1] == "Hunk #2 FAILED at -11."


# --- anchoring ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("match_at", "header"), [(1, 1), (1, 5), (2, 1), (2, 3), (5, 2), (5, 8)])
def test_top_anchor_only_when_the_header_says_line_1(match_at: int, header: int) -> None:
    # lead 1 < trail 3: at fuzz 0 only a hunk whose header starts at line 1 is held to line 1
    target = lines(*numbered(20))
    a = match_at
    run = same(target, patch(hunk(header, f" l{a}", "+X", f" l{a + 1}", f" l{a + 2}", f" l{a + 3}")))
    if header == 1 and match_at != 1:
        assert run.rc == 1
    else:
        assert run.rc == 0


@pytest.mark.parametrize(("match_at", "header"), [(14, 14), (14, 10), (17, 10), (17, 17), (17, 18)])
def test_bottom_anchor_always_at_the_end(match_at: int, header: int) -> None:
    # lead 3 > trail 1: at fuzz 0 the hunk must end at the file's last line, wherever its header
    target = lines(*numbered(20))
    a = match_at
    run = same(target, patch(hunk(header, f" l{a}", f" l{a + 1}", f" l{a + 2}", "+X", f" l{a + 3}")))
    assert run.rc == (0 if match_at == 17 else 1)


@pytest.mark.parametrize("consumed", [24, 25, 26, 27])
def test_bottom_anchor_must_lie_after_the_consumed_line(consumed: int) -> None:
    # the anchored position is 26; once hunk 1 has consumed line 26 it is not taken (not even as
    # "misordered"), although the hunk's first change would still come after the consumed line
    target = lines(*numbered(30))
    p = patch(
        hunk(consumed, "+X", new_start=consumed + 1).replace(f"-{consumed},1", f"-{consumed},0"),
        hunk(26, " l26", " l27", " l28", "-l29", "-l30"),
    )
    run = same(target, p)
    assert run.rc == (0 if consumed < 26 else 1)


@pytest.mark.parametrize("consumed", [0, 1, 2, 3])
def test_top_anchor_taken_while_the_first_change_is_after_the_consumed_line(consumed: int) -> None:
    target = lines(*numbered(30))
    first = hunk(consumed, "+X", new_start=consumed + 1).replace(f"-{consumed},1", f"-{consumed},0")
    run = same(target, patch(first, hunk(1, " l1", " l2", "-l3", "+Y", " l4", " l5", " l6")))
    assert run.rc == (0 if consumed < 3 else 1)


def test_anchor_released_at_higher_fuzz_then_misordered() -> None:
    # fuzz 0 and 1 hold the hunk to line 1 and refuse it (line 2 consumed); fuzz 2 searches freely
    # and finds it at line 1, before the consumed line
    target = lines(*numbered(30))
    run = same(target, patch("@@ -2,0 +3,1 @@\n+X\n", hunk(1, " l1", "-l2", "+Y", " l3", " l4", " l5")), fuzz=2)
    assert "misordered hunks! output would be garbled" in msgs(run)


# --- empty old sides and final newlines ---------------------------------------------------------


@pytest.mark.parametrize("after", [3, 4, 9])
def test_empty_old_side_past_the_end_is_appended_silently(after: int) -> None:
    run = same(lines(*"abc"), patch(f"@@ -{after},0 +{after + 1},1 @@\n+X\n"))
    assert run.files["f"] == lines("a", "b", "c", "X") and msgs(run) == []


@pytest.mark.parametrize("after", [3, 4, 9])
def test_lf_inserted_before_zero_context_append_to_file_without_one(after: int) -> None:
    run = same(b"a\nb\nc", patch(f"@@ -{after},0 +{after + 1},1 @@\n+X\n"))
    assert run.files["f"] == b"a\nb\nc\nX\n"


def test_no_lf_inserted_when_trailing_context_hangs_past_the_end() -> None:
    # fuzz 2 trims all context; the untrimmed old side runs past the end of the file, and then
    # GNU patch writes the added line straight after the unterminated last line
    run = same(b"a\nb\nc", patch(hunk(2, " b", " c", "+X", " y", " z")), fuzz=2)
    assert run.files["f"] == b"a\nb\ncX\n"


def test_lf_inserted_when_the_old_side_ends_at_the_end() -> None:
    run = same(b"a\nb\nc", patch(hunk(2, " b", " c", "+X")), fuzz=2)
    assert run.files["f"] == b"a\nb\nc\nX\n"


def test_unmarked_last_line_needs_fuzz() -> None:
    # the file's last line lacks LF, the patch's context line has one: not equal, fuzz 1 trims it
    run = same(b"a\nb\nc", patch(hunk(1, " a", "-b", "+B", " c")), fuzz=2)
    assert msgs(run) == ["Hunk #1 succeeded at 1 with fuzz 1."] and run.files["f"] == b"a\nB\nc"


def test_empty_old_side_expected_at_line_0_fails() -> None:
    # hunk 1 lands 5 lines early, so the insertion "after line 4" is expected at line 0
    target = lines(*numbered(30))
    run = same(target, patch(hunk(25, "-l20", "+X"), "@@ -4,0 +5,1 @@\n+Y\n"))
    assert msgs(run)[-1] == "Hunk #2 FAILED at 5."


# --- line endings -------------------------------------------------------------------------------


def test_different_line_endings_crlf_file_lf_patch() -> None:
    run = same(b"a\r\nb\r\nc\r\nd\r\n", patch(hunk(1, " a", "-b", "+B", " c")))
    assert msgs(run) == ["Hunk #1 FAILED at 1 (different line endings)."]


@pytest.mark.parametrize("lf_line", [5, 7, 8, 9, 10])
def test_different_line_endings_compares_the_named_line(lf_line: int) -> None:
    # CRLF file except one LF line; hunk 1 (LF) lands at offset 2 adding one line, hunk 2 (CRLF)
    # fails at 8 = start 7 + growth 1: only input line 8's ending is compared with the hunk's
    # first old line
    names = ["p", "q", *numbered(12)]
    data = b"".join(n.encode() + (b"\n" if k < 5 or k + 1 == lf_line else b"\r\n") for k, n in enumerate(names))
    p = b"--- a/f\n+++ b/f\n" + hunk(1, " l1", "-l2", "+L2", "+L2b", " l3").encode()
    p += b"@@ -7,3 +8,3 @@\n x\r\n-y\r\n+Y\r\n z\r\n"
    run = same(data, p)
    assert msgs(run)[-1].startswith("Hunk #2 FAILED at 8")


@pytest.mark.parametrize("body", [b"-x\r\n+Y\n y\r\n", b"-x\n+Y\n y\r\n"])
def test_different_line_endings_past_the_end_compares_the_last_line(body: bytes) -> None:
    data = b"".join(f"l{i}\n".encode() for i in range(1, 12)) + b"l12\r\n"
    same(data, b"--- a/f\n+++ b/f\n@@ -50,2 +50,2 @@\n" + body)


# --- more context, more fuzz --------------------------------------------------------------------


@pytest.mark.parametrize("fuzz", [2, 3, 4, 5])
def test_four_lines_of_context_at_fuzz_up_to_5(fuzz: int) -> None:
    # three context lines differ at each end: fuzz 3 places it; fuzz 5 still stops at 4
    target = lines("Q", "W", "E", "l4", "l5", "l6", "R", "T", "Y", "l10")
    p = patch(hunk(1, " l1", " l2", " l3", " l4", "-l5", "+L5", " l6", " l7", " l8", " l9"))
    run = same(target, p, fuzz=fuzz)
    assert run.rc == (0 if fuzz >= 3 else 1)


def test_fuzz_capped_at_the_larger_context() -> None:
    target = lines("Q", "W", "E", "X", "l5", "R", "T", "Y")
    run = same(target, patch(hunk(1, " l1", " l2", " l3", " l4", "-l5", "+L5", " l6", " l7", " l8", " l9")), fuzz=5)
    assert msgs(run) == ["Hunk #1 succeeded at 1 with fuzz 4."]


# --- several files ------------------------------------------------------------------------------


def test_several_files_in_one_patch() -> None:
    files = {
        "a.txt": lines("top", *numbered(30)),
        "sub/b.txt": lines(*numbered(10, "b")),
        "sub/c.txt": b"c1\r\nc2\r\nc3\r\n",
    }
    p = (
        patch(hunk(4, " l4", "-l5", "+L5", " l6"), hunk(20, " l20", "-l21", "+L21", " l22"), name="a.txt")
        + patch(hunk(3, " b3", "-nope", "+B4", " b5"), hunk(8, " b8", "-b9", "+B9", " b10"), name="sub/b.txt")
        + patch(hunk(2, " c2", "-c3", "+C3"), name="sub/c.txt")
    )
    run = same(files, p)
    assert run.rc == 1
    assert msgs(run, "a.txt") == ["Hunk #1 succeeded at 5 (offset 1 line).", "Hunk #2 succeeded at 21 (offset 1 line)."]
    assert msgs(run, "sub/b.txt") == ["Hunk #1 FAILED at 3."]
    assert msgs(run, "sub/c.txt") == ["Hunk #1 FAILED at 2 (different line endings)."]
    # git apply agrees with GNU patch on the file both apply cleanly
    with tempfile.TemporaryDirectory() as d:
        Path(d, "a.txt").write_bytes(files["a.txt"])
        Path(d, "p").write_bytes(
            patch(hunk(4, " l4", "-l5", "+L5", " l6"), hunk(20, " l20", "-l21", "+L21", " l22"), name="a.txt")
        )
        g = subprocess.run(["git", "apply", "-p1", "p"], cwd=d, capture_output=True)
        assert g.returncode == 0, g.stderr
        assert Path(d, "a.txt").read_bytes() == run.files["a.txt"]


def test_same_file_twice_in_one_patch() -> None:
    files = {"f": lines(*numbered(20))}
    p = patch(hunk(3, " l3", "-l4", "+L4", " l5")) + patch(hunk(10, " l10", "-l11", "+L11", "+extra", " l12"))
    run = same(files, p)
    assert run.rc == 0


# --- reversed patches ---------------------------------------------------------------------------


def _reversed_flags(data: bytes, p: bytes, fuzz: int, reverse: bool = False) -> tuple[bool, bool]:
    gnu = gnu_patch_tree({"f": data}, p, fuzz=fuzz, reverse=reverse, forward_only=True)
    run = run_hunks(split_keep(data), [sides(h, reverse) for h in parse_patch(p, "p").sections[0].hunks], fuzz)
    return "f" in gnu.reversed_files, run.reversed


def test_reversed_patch_detected_reported_never_taken() -> None:
    applied = numbered(20)
    applied[5] = "L6"
    p = patch(hunk(3, " l3", " l4", " l5", "-l6", "+L6", " l7", " l8", " l9"))
    assert _reversed_flags(lines(*applied), p, 2) == (True, True)
    # with -R on the pristine file: GNU patch says "Unreversed patch detected!"
    assert _reversed_flags(lines(*numbered(20)), p, 2, reverse=True) == (True, True)
    # never taken: with -f GNU patch and the engine both just fail the hunk, file unchanged
    run = same(lines(*applied), p, fuzz=2)
    assert run.rc == 1 and run.files["f"] == lines(*applied)


def test_reversed_detection_runs_per_fuzz_level() -> None:
    # the reversed hunk fits exactly at fuzz 0, the forward hunk only with fuzz 1 elsewhere: GNU
    # patch (without -f) reports a reversed patch; with -f it places the forward hunk with fuzz 1
    base = numbered(40)
    base[5] = "L6"
    base[20:27] = ["zz", "l4", "l5", "l6", "l7", "l8", "l9"]
    p = patch(hunk(3, " l3", " l4", " l5", "-l6", "+L6", " l7", " l8", " l9"))
    assert _reversed_flags(lines(*base), p, 2) == (True, True)
    run = same(lines(*base), p, fuzz=2)
    assert msgs(run) == ["Hunk #1 succeeded at 21 with fuzz 1 (offset 18 lines)."]


def test_reversed_detection_only_for_the_first_hunk() -> None:
    base = numbered(40)
    base[25] = "L26"  # hunk 2 already applied, hunk 1 not
    p = patch(hunk(3, " l3", "-l4", "+L4", " l5"), hunk(25, " l25", "-l26", "+L26", " l27"))
    assert _reversed_flags(lines(*base), p, 0) == (False, False)


# --- size ---------------------------------------------------------------------------------------


def test_large_file_far_offsets_same_as_gnu_without_scanning(monkeypatch: pytest.MonkeyPatch) -> None:
    # a 35,000-line file (many repeated lines) whose hunks all land 4,000 lines after their
    # headers, and one hunk that is nowhere: same result as GNU patch, and the engine compares at
    # a bounded number of positions per hunk instead of walking the file
    import dryboot.patching.place as place

    rnd_lines = [f"v{i % 997} {i * 7919 % 35000}" for i in range(35_000)]
    for i in range(0, 35_000, 5):
        rnd_lines[i] = ""
    old = lines(*rnd_lines)
    new_lines = list(rnd_lines)
    for i in range(200, 35_000, 700):
        new_lines[i] += " edited"
    with tempfile.TemporaryDirectory() as d:
        Path(d, "a").mkdir()
        Path(d, "b").mkdir()
        Path(d, "a", "f").write_bytes(old)
        Path(d, "b", "f").write_bytes(lines(*new_lines))
        p = subprocess.run(["diff", "-u", "a/f", "b/f"], cwd=d, capture_output=True).stdout
    p += b"@@ -30000,3 +30000,3 @@\n v1\n-nowhere\n+x\n v2\n"
    target = lines(*(["inserted"] * 4000 + rnd_lines))
    calls = 0
    real = place.FileView.matches

    def counting(self: place.FileView, old_side: object, pos: int, lo: int, hi: int) -> bool:
        nonlocal calls
        calls += 1
        return real(self, old_side, pos, lo, hi)  # type: ignore[arg-type]

    monkeypatch.setattr(place.FileView, "matches", counting)
    run = same(target, p)
    hunks = len(run.messages["f"])
    assert hunks >= 50 and run.messages["f"][-1].startswith(f"Hunk #{hunks} FAILED")
    assert calls < 40 * hunks
