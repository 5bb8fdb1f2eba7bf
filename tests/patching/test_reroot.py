"""``dryboot.patching.reroot``: a series' file names moved one folder down (the boot arms of
``series port --boot-arms``), as ``git apply --directory`` reads them."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from dryboot.patching.parse import read_patch
from dryboot.patching.reroot import reroot_line, reroot_series

from .test_port import udiff

COMPONENT = st.text(alphabet="abcxyz_.-0189", min_size=1, max_size=6).filter(lambda c: c not in (".", ".."))


@given(parts=st.lists(COMPONENT, min_size=1, max_size=4), strip=st.integers(0, 2), stamp=st.booleans())
def test_reroot_line_puts_the_folder_after_the_stripped_components(parts: list[str], strip: int, stamp: bool) -> None:
    prefix = ["a", "x"][:strip]
    name = "/".join(prefix + parts).encode()
    tail = b"\t2026-08-18 17:39:49 +0200" if stamp else b""
    got = reroot_line(b"--- " + name + tail, strip, b"vllm")
    assert got == b"--- " + "/".join([*prefix, "vllm", *parts]).encode() + tail
    assert reroot_line(b"--- /dev/null", strip, b"vllm") == b"--- /dev/null"
    assert reroot_line(b"rename from " + "/".join(parts).encode(), strip, b"vllm") == (
        b"rename from vllm/" + "/".join(parts).encode()
    )


def test_reroot_series_moves_only_header_names(tmp_path: Path) -> None:
    s = tmp_path / "s"
    s.mkdir()
    body = udiff("x\n--- a/not-a-header\n", "y\n--- a/not-a-header\n", "d/f.txt")
    text = "Subject: t\n\n--- a/quoted in prose\n\ndiff --git a/d/f.txt b/d/f.txt\n" + body
    (s / "1.patch").write_text(text)
    (s / "series").write_text("1.patch\n")
    reroot_series(str(s), str(tmp_path / "r"), "vllm")
    got = (tmp_path / "r" / "1.patch").read_text()
    assert got == text.replace("a/d/f.txt b/d/f.txt", "a/vllm/d/f.txt b/vllm/d/f.txt").replace(
        "--- a/d/f.txt", "--- a/vllm/d/f.txt"
    ).replace("+++ b/d/f.txt", "+++ b/vllm/d/f.txt")
    sec = read_patch(str(tmp_path / "r" / "1.patch")).sections[0]
    assert sec.new is not None and sec.new.stripped(1) == "vllm/d/f.txt"
