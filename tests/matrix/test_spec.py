"""MATRIX.toml parsing: what a matrix holds, and one line (file, field, reason) for bad input."""

from __future__ import annotations

import contextlib
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matrix_help import QWEN3_06B, QWEN25_15B, write_matrix

from dryboot.cli import cli
from dryboot.errors import InputError
from dryboot.matrix.spec import load_matrix, parse_expectation, parse_matrix

GOOD = f"""
gpus = ["RTX 3090", "sm89:48G"]
timeout = 60
[models]
small = "{QWEN3_06B}"
"qwen2.5" = "{QWEN25_15B}/config.json"
[flags]
pinned = "vllm serve --max-model-len 4096 --kv-cache-memory-bytes 2G"
util = {{ max-model-len = 8192, gpu-memory-utilization = 0.8 }}
[arms.upstream]
vllm-version = "0.28.0"
[arms.pad]
vllm-version = "0.28.0"
grouping = "pad-sliding-window-buckets"
[expect]
all = "tokens >= 1_000"
gpus = {{ "sm89:48G" = "identical" }}
cells = {{ "small|RTX 3090|pinned" = "refused" }}
"""


def test_a_matrix_and_its_expectations(tmp_path: Path) -> None:
    m = load_matrix(write_matrix(tmp_path, GOOD), tmp_path / "work")
    assert [x.name for x in m.models] == ["small", "qwen2.5"]
    assert m.models[1].path.endswith("config.json")
    assert m.gpus == ("RTX 3090", "sm89:48G")
    assert [f.name for f in m.flag_sets] == ["pinned", "util"]
    assert m.flag_sets[0].argv == ("--max-model-len", "4096", "--kv-cache-memory-bytes", "2G")
    assert m.flag_sets[1].argv == ("--max-model-len", "8192", "--gpu-memory-utilization", "0.8")
    assert [(a.name, a.kind, a.grouping) for a in m.arms] == [
        ("upstream", "policy", "upstream"),
        ("pad", "policy", "pad-sliding-window-buckets"),
    ]
    assert m.timeout_s == 60
    # the most specific wins: a cell's own, then its GPU's, then the matrix's
    assert m.expectation("small|RTX 3090|pinned").kind == "refused"
    assert m.expectation("small|sm89:48G|util").kind == "identical"
    low = m.expectation("qwen2.5|RTX 3090|util")
    assert low is not None and (low.kind, low.tokens) == ("tokens>=", 1000)


def test_flag_sets_from_a_profiles_file_take_its_model(tmp_path: Path) -> None:
    """The reference deployment's profiles are flag sets; with no [models] their model is the row."""
    ex = Path(__file__).resolve().parents[2] / "examples"
    p = tmp_path / "m.toml"
    p.write_text(
        f'gpus = ["RTX 3090"]\nprofiles = "{ex}/reference-deployment-boot.toml"\n[arms.a]\nvllm-version = "0.28.0"\n'
    )
    m = load_matrix(p, tmp_path / "work")
    assert [f.name for f in m.flag_sets][:2] == ["CTX=fast", "CTX=long"]
    assert [x.name for x in m.models] == ["Qwen3.5-27B"]
    fast = m.flag_sets[0].argv
    assert "--speculative-config" in fast and "--max-model-len" in fast and "65536" in fast


#: the start of a matrix file: one GPU, one model (MODEL: replaced by a corpus config's path), one flag set
MODEL = 'gpus = ["H100"]\n[models]\nm = "MODEL"\n'
HEAD = MODEL + '[flags]\na = "vllm serve"\n'


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('gpus = ["H100"]\n[flags]\na = "vllm serve --max-model-len 1"\n[arms.a]\n', "models"),
        ("gpus = []", "gpus"),
        ('gpus = ["Voodoo 2"]', "gpus[0]"),
        ('gpus = ["H100", "H100"]', "gpus[1]"),
        ('gpus = ["H100"]\ncolour = 1', "colour"),
        ('gpus = ["H100"]\ntimeout = -3', "timeout"),
        ('gpus = ["H100"]\ntimeout = true', "timeout"),
        (MODEL + "", "flags"),
        (MODEL + "[flags]\na = 3\n", "flags.a"),
        (MODEL + '[flags]\na = "vllm serve --no-such-flag 1"\n', "--no-such-flag"),
        (MODEL + '[flags]\na = "ls -l"\n', "flags.a"),
        (MODEL + '[flags]\na = { max-model-len = "x" }\n', "flags.a.max-model-len"),
        (MODEL + '[flags]\na = { model = "x" }\n', "flags.a.model"),
        (MODEL + '[flags]\n"a|b" = "vllm serve"\n', "flags.a|b"),
        ('gpus = ["H100"]\n[models]\nm = "nope/nowhere"\n[flags]\na = "vllm serve"\n[arms.a]\n', "models.m"),
        (HEAD + "", "arms"),
        (HEAD + "[arms.dryboot]\n", "arms.dryboot"),
        (HEAD + '[arms.a]\nseries = "p"\n', "arms.a.base"),
        (
            HEAD + '[arms.a]\ntree = "/nonexistent"\n',
            "arms.a",
        ),
        (
            HEAD + '[arms.a]\ntree = "x"\nrelease = "0.28.0"\n',
            "arms.a.release",
        ),
        (HEAD + '[arms.a]\nrelease = "0.9.1"\n', "0.9.1"),
        (
            HEAD + '[arms.a]\ngrouping = "best"\n',
            "grouping",
        ),
        (HEAD + '[arms.a]\ncolour = "red"\n', "colour"),
        (
            HEAD + '[arms.a]\nexpect = "tokens > 5"',
            "expect",
        ),
        (
            HEAD + '[arms.a]\n[expect]\nall = "fast"',
            "expect.all",
        ),
        (
            HEAD + '[arms.a]\n[expect.cells]\n"m|B200|a" = "refused"',
            "expect.cells.m|B200|a",
        ),
        (
            HEAD + '[arms.a]\n[expect.gpus]\nB200 = "refused"',
            "B200",
        ),
        ("gpus = [", None),
    ],
)
def test_bad_input_is_one_line_naming_the_field(tmp_path: Path, text: str, where: str | None) -> None:
    path = write_matrix(tmp_path, text.replace("MODEL", str(QWEN3_06B)))
    with pytest.raises(InputError) as err:
        load_matrix(path, tmp_path / "work")
    line = err.value.line()
    assert "\n" not in line and line.startswith(str(path))
    if where is not None:
        assert where in line, line


def test_the_cli_says_bad_input_in_one_line_and_exits_2(tmp_path: Path) -> None:
    path = write_matrix(tmp_path, 'gpus = ["Voodoo 2"]')
    res = CliRunner().invoke(cli, ["matrix", str(path), "--no-cache"])
    assert res.exit_code == 2
    assert res.output.strip().count("\n") == 0 and "gpus[0]" in res.output and "Traceback" not in res.output


def test_a_file_that_is_not_regular_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot read|not a regular"):
        load_matrix(tmp_path, tmp_path / "work")


@pytest.mark.parametrize(
    ("text", "kind", "tokens"),
    [("identical", "identical", None), ("  refused ", "refused", None), ("tokens >= 65,536", "tokens>=", 65536)],
)
def test_expectations(text: str, kind: str, tokens: int | None) -> None:
    e = parse_expectation(text, "m.toml", "expect")
    assert (e.kind, e.tokens) == (kind, tokens)


_KEYS = st.sampled_from(
    ["gpus", "models", "flags", "arms", "expect", "timeout", "profiles", "vllm-version", "all", "cells", "tree",
     "release", "series", "base", "grouping", "m", "a", "x|y", "dryboot", ""]
)  # fmt: skip
_LEAF = st.one_of(  # TOML has no null
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.sampled_from(
        ["H100", "RTX 3090", "sm89:24G", "vllm serve --max-model-len 4", "identical", "tokens >= 3", "0.28.0"]
    ),
)
_VALUE = st.recursive(
    _LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(_KEYS, _VALUE, max_size=6))
def test_any_document_is_a_matrix_or_one_input_error(tmp_path: Path, data: dict[str, object]) -> None:
    """Property: whatever the TOML holds, the parser answers a matrix or an InputError, never
    another exception."""
    try:
        parse_matrix(data, "m.toml", tmp_path, tmp_path / "work")
    except InputError as exc:
        assert "\n" not in exc.line()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=200))
def test_any_text_is_a_matrix_or_one_input_error(tmp_path: Path, text: str) -> None:
    p = tmp_path / "t.toml"
    p.write_text(text, encoding="utf-8", errors="surrogatepass") if "\ud800" not in text else None
    if not p.exists():
        return
    with contextlib.suppress(tomllib.TOMLDecodeError, ValueError):
        tomllib.loads(text)
    try:
        load_matrix(p, tmp_path / "work")
    except InputError as exc:
        assert "\n" not in exc.line()


#: a matrix of the tiny Qwen3 with one ``vllm serve`` flag set (FLAGS) and modelled arms (ARMS)
ENGRAM = "vllm serve --max-model-len 4096 --engram-config '{\\\"cpu_offload\\\": false}'"


def _serve_matrix(tmp_path: Path, flags: str, arms: dict[str, str], version: str | None = None) -> Path:
    text = f'gpus = ["H100"]\n[models]\nm = "{QWEN3_06B}"\n[flags]\na = "{flags}"\n'
    text = (f'vllm-version = "{version}"\n' if version else "") + text
    for name, release in arms.items():
        text += f'[arms.{name}]\nvllm-version = "{release}"\n'
    return write_matrix(tmp_path, text)


def test_a_serve_line_is_read_by_its_own_release(tmp_path: Path) -> None:
    """An option only newer releases have (--engram-config, 0.30.0+) is taken where every release
    that starts the flag set has it (issue 37: 0.28.0's table read it before, whatever the release)."""
    m = load_matrix(_serve_matrix(tmp_path, ENGRAM, {"new": "0.33.0", "mid": "0.30.0"}), tmp_path / "work")
    assert m.vllm_version == "0.33.0"
    assert m.flag_sets[0].argv == ("--max-model-len", "4096", "--engram-config", '{"cpu_offload": false}')
    # 0.31.2 reads 0.31.0's table
    load_matrix(_serve_matrix(tmp_path, ENGRAM, {"a": "0.31.2"}), tmp_path / "work")


@pytest.mark.parametrize(
    ("arms", "version", "said"),
    [
        # an arm of an older release: its parser refuses the option, naming the arm and the release
        ({"new": "0.33.0", "old": "0.29.0"}, None, "flags.a: arm old (vLLM 0.29.0): --engram-config: vLLM 0.29.0's"),
        # dryboot's own plan of each cell on 0.28.0 (the matrix's vllm-version)
        ({"new": "0.33.0"}, "0.28.0", "flags.a: arm dryboot (vLLM 0.28.0): --engram-config"),
        # two starters on one release are both named
        ({"x": "0.27.1", "y": "0.27.1"}, "0.33.0", "arms x, y (vLLM 0.27.1)"),
    ],
)
def test_a_serve_line_a_starting_release_lacks_is_refused_by_name(
    tmp_path: Path, arms: dict[str, str], version: str | None, said: str
) -> None:
    with pytest.raises(InputError) as err:
        load_matrix(_serve_matrix(tmp_path, ENGRAM, arms, version), tmp_path / "work")
    assert said in err.value.line(), err.value.line()
    assert "has no such option" in err.value.line()


def test_an_option_a_newer_release_dropped_is_refused_there(tmp_path: Path) -> None:
    """The other way round: 0.28.0's --enable-bf16x3-router-gemm is gone from 0.33.0's parser."""
    line = "vllm serve --enable-bf16x3-router-gemm"
    assert load_matrix(_serve_matrix(tmp_path, line, {"a": "0.28.0"}), tmp_path / "work").flag_sets[0].argv == (
        "--enable-bf16x3-router-gemm",
    )
    with pytest.raises(InputError, match=r"arm b \(vLLM 0\.33\.0\): --enable-bf16x3-router-gemm"):
        load_matrix(_serve_matrix(tmp_path, line, {"a": "0.28.0", "b": "0.33.0"}), tmp_path / "work")


def test_an_option_no_release_has_is_refused_as_the_matrix_release_says(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"flags\.a: --no-such-flag: vLLM 0\.30\.0's 'vllm serve' has no such option"):
        load_matrix(_serve_matrix(tmp_path, "vllm serve --no-such-flag 1", {"a": "0.30.0"}, "0.30.0"), tmp_path)


def _write_table_matrix(tmp_path: Path, table: str, arms: dict[str, str], version: str | None = None) -> Path:
    text = f'gpus = ["H100"]\n[models]\nm = "{QWEN3_06B}"\n[flags]\na = {{ {table} }}\n'
    text = (f'vllm-version = "{version}"\n' if version else "") + text
    for name, release in arms.items():
        text += f'[arms.{name}]\nvllm-version = "{release}"\n'
    return write_matrix(tmp_path, text, "table.toml")


ENGRAM_TABLE = "max-model-len = 4096, engram-config = '{\"cpu_offload\": false}'"


def test_a_table_flag_set_is_read_by_its_own_release(tmp_path: Path) -> None:
    """A table of flags is read as a serve line is (issue 37: dryboot's own flag table read it, whatever the
    release): a key only 0.30.0+ has is taken where every starting release has it."""
    m = load_matrix(_write_table_matrix(tmp_path, ENGRAM_TABLE, {"new": "0.33.0", "mid": "0.30.0"}), tmp_path / "w")
    assert m.flag_sets[0].argv == ("--max-model-len", "4096", "--engram-config", '{"cpu_offload": false}')
    assert m.flag_sets[0].source == "profile"


@pytest.mark.parametrize(
    ("table", "arms", "version", "said"),
    [
        # an arm of an older release lacks the option: named with its release
        (ENGRAM_TABLE, {"new": "0.33.0", "old": "0.29.0"}, None, "flags.a: arm old (vLLM 0.29.0): --engram-config"),
        # dryboot's own plan on the matrix's vllm-version
        (ENGRAM_TABLE, {"new": "0.33.0"}, "0.28.0", "flags.a: arm dryboot (vLLM 0.28.0): --engram-config"),
        # an option a newer release dropped (0.28.0's --enable-bf16x3-router-gemm is gone from 0.33.0)
        ("enable-bf16x3-router-gemm = true", {"a": "0.28.0", "b": "0.33.0"}, None, "arm b (vLLM 0.33.0)"),
        # no release has it
        ("no-such-flag = 1", {"a": "0.30.0"}, None, "--no-such-flag: vLLM 0.30.0's 'vllm serve' has no such option"),
    ],
)
def test_a_table_key_a_starting_release_lacks_is_refused_by_name(
    tmp_path: Path, table: str, arms: dict[str, str], version: str | None, said: str
) -> None:
    with pytest.raises(InputError) as err:
        load_matrix(_write_table_matrix(tmp_path, table, arms, version), tmp_path / "w")
    assert said in err.value.line(), err.value.line()
    assert "\n" not in err.value.line()


def test_a_table_key_of_an_older_release_is_taken_there(tmp_path: Path) -> None:
    m = load_matrix(_write_table_matrix(tmp_path, "enable-bf16x3-router-gemm = true", {"a": "0.28.0"}), tmp_path / "w")
    assert m.flag_sets[0].argv == ("--enable-bf16x3-router-gemm",)


@pytest.mark.parametrize(
    ("table", "where"),
    [
        ('vllm-version = "0.33.0"', "flags.a.vllm-version"),  # an arm's, not a flag set's
        ('max-model-len = "long"', "flags.a.max-model-len"),  # a key dryboot plans keeps its value check
        ("engram-config = [1, 2]", "flags.a.engram-config"),  # not a vllm serve value
    ],
)
def test_a_bad_table_key_is_one_line_naming_it(tmp_path: Path, table: str, where: str) -> None:
    with pytest.raises(InputError) as err:
        load_matrix(_write_table_matrix(tmp_path, table, {"a": "0.33.0"}), tmp_path / "w")
    assert where in err.value.line(), err.value.line()
