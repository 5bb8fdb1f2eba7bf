"""Property tests: the log reader, the args-line parser and the ``vllm serve`` command-line parser
never raise anything but :class:`InputError`, on arbitrary bytes or words and on mutated real logs.

``DRYBOOT_FUZZ_EXAMPLES`` sets the examples per property (default 200; 10,000 for the release
check: ``DRYBOOT_FUZZ_EXAMPLES=10000 pytest tests/checklog/test_fuzz.py``, about 6 minutes on two
cores); the whole-check property, which plans each example, runs a twentieth of them.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dryboot.checklog.argmap import map_args
from dryboot.checklog.check import check_stream
from dryboot.checklog.literal import parse_args_prefix
from dryboot.checklog.parse import (
    iter_boots,
    iter_log_lines,
    iter_numbered_log_lines,
    iter_relevant_lines,
    iter_text_lines,
)
from dryboot.checklog.serve import env_effects, parse_serve
from dryboot.errors import InputError

from .conftest import DATA

EXAMPLES = int(os.environ.get("DRYBOOT_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
REAL = [p.read_bytes() for p in sorted(DATA.glob("*.log"))] + [
    p.read_bytes() for p in sorted((DATA / "public").glob("*.log"))
]
ARGS_LINES = [
    line.split("non-default args: ", 1)[1]
    for text in REAL
    for line in text.decode("utf-8", "replace").splitlines()
    if "non-default args: " in line
]


def read_all(data: bytes) -> None:
    for lines in (
        lambda: iter_log_lines(iter_text_lines(io.BytesIO(data))),
        lambda: iter_numbered_log_lines(iter_relevant_lines(io.BytesIO(data))),
    ):
        try:
            for facts in iter_boots(lines()):
                if facts.args_text is not None:
                    parse_args(facts.args_text)
        except InputError:
            pass


def parse_args(text: str) -> None:
    try:
        parsed, _ = parse_args_prefix(text)
        map_args(parsed, "log")
    except InputError:
        pass


@st.composite
def mutated(draw: st.DrawFn, sources: list[bytes]) -> bytes:
    """A real log with a few byte-level edits: cut, duplicated span, inserted bytes, flipped bytes."""
    data = bytearray(draw(st.sampled_from(sources)))
    for _ in range(draw(st.integers(1, 6))):
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["cut", "dup", "insert", "flip", "delete"]))
        if op == "cut":
            del data[i:]
        elif op == "dup":
            j = draw(st.integers(i, min(len(data), i + 400)))
            data[i:i] = data[i:j]
        elif op == "insert":
            data[i:i] = draw(st.binary(max_size=40))
        elif op == "flip":
            data[i] = draw(st.integers(0, 255))
        else:
            j = draw(st.integers(i, min(len(data), i + 200)))
            del data[i:j]
    return bytes(data)


@FUZZ
@given(st.binary(max_size=4000))
def test_reader_on_arbitrary_bytes(data: bytes) -> None:
    read_all(data)


@FUZZ
@given(mutated(REAL))
def test_reader_on_mutated_real_logs(data: bytes) -> None:
    read_all(data)


@FUZZ
@given(st.text(max_size=2000))
def test_args_parser_on_arbitrary_text(text: str) -> None:
    parse_args(text)
    parse_args("{" + text)


@FUZZ
@given(mutated([a.encode() for a in ARGS_LINES]))
def test_args_parser_on_mutated_real_args(data: bytes) -> None:
    parse_args(data.decode("utf-8", "replace"))


def test_the_corpus_holds_args_lines() -> None:
    assert len(ARGS_LINES) >= 5
    assert Path(DATA / "public").is_dir()


VLLM_WRITTEN = [p.read_bytes() for p in sorted(DATA.glob("*.log"))]


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """HF_HUB_CACHE holding the configs the vLLM-written logs name, for the whole module."""
    from .conftest import REPO, figures, make_hub_cache

    f = figures()
    cache = make_hub_cache(
        tmp_path_factory.mktemp("hub"), {s["model"]: REPO / s["config"] for s in f["scenarios"].values()}, f["revision"]
    )
    saved = os.environ.get("HF_HUB_CACHE")
    os.environ["HF_HUB_CACHE"] = str(cache)
    yield
    if saved is None:
        os.environ.pop("HF_HUB_CACHE", None)
    else:
        os.environ["HF_HUB_CACHE"] = saved


@settings(
    max_examples=max(20, EXAMPLES // 20),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    database=None,
)
@given(mutated(VLLM_WRITTEN))
def test_whole_check_on_mutated_vllm_logs(hub: None, data: bytes) -> None:
    """Reading, mapping, planning and comparing: a mutated log of a model in the cache ends in a
    report or an InputError, never another exception (a twentieth of the examples: each plans)."""
    try:
        report = check_stream(io.BytesIO(data), source="fuzz.log")
    except InputError:
        return
    assert report.exit_code in (0, 1, 2, 3, 4)


SERVE_WORDS = st.lists(
    st.one_of(
        st.sampled_from(
            ["vllm", "serve", "-tp", "2", "--max-model-len", "--max_model_len=8", "-O3", "-O", "--config",
             "--speculative-config.num_speculative_tokens", "--enable-prefix-caching", "--no-enable-prefix-caching",
             "--served-model-name", "a", "b", "--model", "m/x", "--kv-cache-dtype", "fp8", "VLLM_X=1", "--", "-",
             "--gpu-memory-util", "0.9", "{", '{"a": 1}', "--hf-overrides", "--max", "--tensor-parallel-size=x"]
        ),
        st.text(max_size=12),
    ),
    max_size=16,
)  # fmt: skip


@FUZZ
@given(SERVE_WORDS)
def test_serve_parser_on_arbitrary_words(words: list[str]) -> None:
    for candidate in (words, ["vllm", "serve", *words]):
        try:
            cmd = parse_serve(candidate, {})
            env_effects(cmd.env)
            map_args(cmd.args, "--serve", label="", plan=True)
        except InputError:
            pass


@FUZZ
@given(st.text(max_size=300))
def test_serve_parser_on_arbitrary_text(text: str) -> None:
    for candidate in (text, "vllm serve " + text):
        with contextlib.suppress(InputError):
            parse_serve(candidate, {})
