"""check-log on logs as people paste them (issue 28): hard-wrapped by a terminal at its width,
re-flowed at blanks (``fold -s``), KV lines aligned with spaces, a KV figure that is not a
number. A wrapped log gives the verdict and the checked lines of the unwrapped one; a KV line
present but not read never leaves a clean exit 0."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import public_verdicts
from .conftest import DATA
from .test_logs import dryboot
from .wrapping import fold, hard_wrap

INDEX = json.loads((public_verdicts.PUBLIC / "INDEX.json").read_text())
WRAPS = {"hard": hard_wrap, "fold": fold}


def _normalised(v: dict[str, Any]) -> dict[str, Any]:
    """A verdict with line numbers in its reason removed (wrapping moves every line)."""
    return {**v, "reason": re.sub(r"line \d+", "line N", v["reason"] or "")}


def _verdict_of(name: str, text: bytes) -> dict[str, Any]:
    original = public_verdicts.body
    public_verdicts.body = lambda _name: text  # type: ignore[assignment]
    try:
        return _normalised(public_verdicts.verdict(name, INDEX[name]["config"]))
    finally:
        public_verdicts.body = original  # type: ignore[assignment]


_ORIGINAL: dict[str, dict[str, Any]] = {}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(sorted(INDEX)),
    width=st.integers(min_value=60, max_value=200),
    how=st.sampled_from(sorted(WRAPS)),
)
def test_a_wrapped_log_reads_as_the_original(name: str, width: int, how: str, tmp_path: Path) -> None:
    saved = os.environ.get("HF_HUB_CACHE")
    os.environ["HF_HUB_CACHE"] = str(tmp_path / "empty-hub")
    try:
        text = public_verdicts.body(name)
        if name not in _ORIGINAL:
            _ORIGINAL[name] = _verdict_of(name, text)
        wrapped = WRAPS[how](text.decode("utf-8", "replace"), width).encode("utf-8")
        assert _verdict_of(name, wrapped) == _ORIGINAL[name]
    finally:
        if saved is None:
            os.environ.pop("HF_HUB_CACHE", None)
        else:
            os.environ["HF_HUB_CACHE"] = saved


def _write(tmp_path: Path, text: str) -> Path:
    log = tmp_path / "pasted.log"
    log.write_text(text, encoding="utf-8")
    return log


@pytest.mark.parametrize("width", [80, 120, 160])
@pytest.mark.parametrize("how", sorted(WRAPS))
def test_tp2_log_wrapped_by_a_terminal_matches(width: int, how: str, tmp_path: Path, hf_cache: Path) -> None:
    """Before: at 80 columns 'no KV cache line' (exit 3); at 120/160 the args read as cut."""
    text = WRAPS[how]((DATA / "tp2.log").read_text(encoding="utf-8"), width)
    r = dryboot("check-log", str(_write(tmp_path, text)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 KV lines: 4 match, 0 differ" in r.stdout
    assert "cut" not in r.stdout


def test_only_the_kv_lines_wrapped(tmp_path: Path, hf_cache: Path) -> None:
    """Before: exit 0 with '2 match', the block-size and capacity lines never checked."""
    kv = re.compile(r"Setting attention block size|Padding mamba|GPU KV cache size|Mamba cache mode")
    lines = [hard_wrap(ln, 80) if kv.search(ln) else ln for ln in (DATA / "tp2.log").read_text().split("\n")]
    r = dryboot("check-log", str(_write(tmp_path, "\n".join(lines))))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 KV lines: 4 match, 0 differ" in r.stdout


def test_kv_line_with_aligned_spaces_is_read(tmp_path: Path, hf_cache: Path) -> None:
    text = (DATA / "tp2.log").read_text().replace("GPU KV cache size: ", "GPU KV cache size:         ")
    r = dryboot("check-log", str(_write(tmp_path, text)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 KV lines: 4 match, 0 differ" in r.stdout


def test_a_kv_figure_that_is_not_a_number_is_never_exit_0(tmp_path: Path, hf_cache: Path) -> None:
    """Before: the NaN line was dropped and the other three matched: exit 0."""
    text = re.sub(r"GPU KV cache size: [\d,]+ tokens", "GPU KV cache size: NaN tokens", (DATA / "tp2.log").read_text())
    r = dryboot("check-log", str(_write(tmp_path, text)))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "unread: 'GPU KV cache size: NaN tokens" in r.stdout
    assert "exit 2" in r.stdout


def test_a_lone_nan_kv_line_is_refused_in_one_line(tmp_path: Path) -> None:
    log = _write(
        tmp_path,
        "(EngineCore pid=1) INFO 12-04 03:13:10 [kv_cache_utils.py:1869] GPU KV cache size: NaN tokens\n",
    )
    r = dryboot("check-log", str(log))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "line 1, EngineCore" in r.stderr and "NaN" in r.stderr


def test_a_post_that_rewrapped_at_a_blank_and_dropped_it_is_read() -> None:
    """kaito-project/kaito #2132 posts vLLM's one-line error over three lines, broken at blanks
    that the post dropped: '(1048576),' / '22.5 GiB ...'. Joined exactly it reads no template;
    the blank is put back where the join with it reads one."""
    import io

    from dryboot.checklog.parse import iter_boots, iter_numbered_log_lines, iter_relevant_lines

    text = (
        "ValueError: To serve at least one request with the model's max seq len (1048576),\n"
        "22.5 GiB KV cache is needed, which is larger than the available KV cache memory (17.39 GiB).\n"
        "Based on the available memory, the estimated maximum model length is 810208.\n"
    )
    (facts,) = tuple(iter_boots(iter_numbered_log_lines(iter_relevant_lines(io.BytesIO(text.encode()), "x.log"))))
    (line,) = facts.kv_lines
    assert line.kind.name == "NOT_ENOUGH_MEMORY"
    assert not facts.unread
