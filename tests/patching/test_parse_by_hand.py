"""The parser reads ``@@`` headers, timestamps and binary notices by hand (``series apply``
starts without importing ``re``): it must accept exactly what the documented patterns accept,
with the same groups. The patterns are the oracle here, on structured random lines."""

from __future__ import annotations

import random
import re

from dryboot.patching.parse import _TS_PATTERN, _hunk_header, _is_binary_notice, _is_epoch, _timestamp

HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$", re.S)
BINARY = re.compile(rb"^Binary files .* differ$")
TS = re.compile(_TS_PATTERN)


def _num(rnd: random.Random) -> bytes:
    return str(rnd.randint(0, 120)).encode() if rnd.random() < 0.92 else b""


def test_hunk_header_as_the_pattern() -> None:
    rnd = random.Random(1)
    seen = 0
    for _ in range(40000):
        s = b"@@ -" + _num(rnd)
        if rnd.random() < 0.6:
            s += b"," + _num(rnd)
        s += rnd.choice([b" +", b"+", b"  +", b" -"]) + _num(rnd)
        if rnd.random() < 0.6:
            s += b"," + _num(rnd)
        s += rnd.choice([b" @@", b" @@ def f():", b"@@", b" @", b" @@\n", b" @@\r", b" @@x"])
        if rnd.random() < 0.2:
            s = s[: rnd.randint(0, len(s))]
        m = HUNK.match(s)
        want = None
        if m is not None:
            b, d = m[2], m[4]
            want = (int(m[1]), None if b is None else int(b), int(m[3]), None if d is None else int(d), m[5])
            seen += 1
        assert _hunk_header(s) == want, s
    assert seen > 2000  # both outcomes well covered


def test_timestamp_as_the_pattern() -> None:
    rnd = random.Random(2)
    tails = [b".", b"123", b"+", b"-", b"0000", b"00:00", b"\t", b" ", b"x", b"9", b"+0100", b"-05:30", b"\xd9"]
    seen = 0
    for _ in range(40000):
        sep = rnd.choice([b" ", b"T", b"_"])
        nums = [rnd.randint(0, 9999), *(rnd.randint(0, 99) for _ in range(5))]
        s = b"%04d-%02d-%02d%s%02d:%02d:%02d" % (*nums[:3], sep, *nums[3:])
        if rnd.random() < 0.2:
            s = s[: rnd.randint(0, len(s))]
        s += b"".join(rnd.choice(tails) for _ in range(rnd.randint(0, 4)))
        m = TS.match(s)
        want = None
        if m is not None:
            g = m.groups()
            want = (*(int(x) for x in g[:6]), g[6] or b"", int(g[7] or 0), int(g[8] or 0))
            seen += 1
        assert _timestamp(s) == want, s
    assert seen > 2000  # both outcomes well covered


def test_epoch_timestamps() -> None:
    assert _is_epoch(b"1970-01-01 00:00:00.000000000 +0000")
    assert _is_epoch(b"1970-01-01 01:00:00 +0100")
    assert _is_epoch(b"1969-12-31 19:00:00 -0500")
    assert not _is_epoch(b"1970-01-01 00:00:01 +0000")
    assert not _is_epoch(b"2024-05-01 10:00:00 +0000")


def test_binary_notice_as_the_pattern() -> None:
    rnd = random.Random(3)
    parts = [b"Binary files ", b" differ", b" ", b"x", b"differ", b"Binary", b"\r"]
    for _ in range(20000):
        s = b"".join(rnd.choice(parts) for _ in range(rnd.randint(0, 5)))
        assert _is_binary_notice(s) == bool(BINARY.match(s)), s
