"""Every numeric field of a config ``dryboot plan`` reads, given any JSON value, ends in the
plan or in one line and exit 2, never a traceback (issue 35 item 5: ``max_position_embeddings``
0 or -1 gave a ``ZeroDivisionError``; a string or NaN was planned at 2,048 tokens while vLLM
refuses the config). What vLLM 0.28.0 itself does with each kind of value is recorded and
checked in ``tests/fidelity/test_numeric_fields.py``; here, the values between and beyond."""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dryboot.cli import cli

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "fidelity" / "data" / "architectures"
BASES = {
    "llama": TINY / "LlamaForCausalLM.json",
    "mistral": TINY / "MistralForCausalLM.json",
    "qwen3-next": TINY / "Qwen3NextForCausalLM.json",
    "nemotron-h": TINY / "NemotronHForCausalLM.json",
    "qwen3.5": REPO / "examples" / "models" / "Qwen3.5-27B.config.json",
    "gpt-oss": REPO / "examples" / "models" / "gpt-oss-20b.config.json",
}
WORK = Path(tempfile.mkdtemp(prefix="dryboot-numeric-"))

ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-2, max_value=2),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, 0.0, -1.0, 4096.0, 4096.5, 1e30]),
    st.text(max_size=4),
    st.sampled_from(["4096", "0", "-1", "NaN"]),
)


def numeric_paths(config: dict[str, Any]) -> list[tuple[str, ...]]:
    """The paths of every number in ``config``, nested objects (``text_config``,
    ``rope_scaling``, ``rope_parameters`` ...) included; lists left out."""
    out: list[tuple[str, ...]] = []

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> None:
        for key, value in node.items():
            if isinstance(value, dict):
                walk(value, (*path, key))
            elif isinstance(value, int | float) and not isinstance(value, bool):
                out.append((*path, key))

    walk(config, ())
    return out


def set_path(config: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(config))
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def plan_exit(config: dict[str, Any], *flags: str) -> tuple[int, str]:
    path = WORK / "config.json"
    path.write_text(json.dumps(config))
    r = CliRunner().invoke(cli, ["plan", "--model", str(path), "--kv-cache-memory", "20G", *flags])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception  # a traceback: the failure this test looks for
    return r.exit_code, r.output


def test_every_field_checked_against_vllm_is_among_those_varied() -> None:
    """The fields whose outcome vLLM's own engine start recorded (the issue's: sizes, heads,
    layers, vocabulary, window, RoPE, Gated DeltaNet and Mamba2 dims) are varied here too."""
    sys.path.insert(0, str(REPO / "tests" / "fidelity"))
    from test_numeric_fields import FIELDS

    names = {p[-1] for base in BASES.values() for p in numeric_paths(json.loads(base.read_text()))}
    recorded = {field.split(".")[-1] for fields in FIELDS.values() for field in fields}
    assert recorded <= names, recorded - names


@pytest.mark.parametrize("value", ["4096", math.nan, 0, -1, 4096.0, True, None, 1e30])
def test_max_position_embeddings_vllm_refuses_is_refused_in_one_line(value: Any) -> None:
    """vLLM 0.28.0 refuses each (recorded in tests/fidelity/data/numeric_fields/recorded.json:
    transformers' strict int field, or ModelConfig's positive max_model_len)."""
    for name in ("llama", "qwen3-next"):
        config = set_path(json.loads(BASES[name].read_text()), ("max_position_embeddings",), value)
        code, out = plan_exit(config)
        assert code == 2, (name, value, out)
        assert out.count("\n") == 1 and "max_position_embeddings" in out, out


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(BASES)), st.data(), ODD, st.sampled_from([[], ["--max-model-len", "4096"]]))
def test_any_value_of_a_numeric_field_is_planned_or_refused_in_one_line(
    name: str, data: Any, value: Any, flags: list[str]
) -> None:
    config = json.loads(BASES[name].read_text())
    path = data.draw(st.sampled_from(numeric_paths(config)))
    code, out = plan_exit(set_path(config, path, value), *flags)
    assert code in (0, 1, 2), out
    if code == 2:
        assert out.startswith("dryboot: error: ") and out.count("\n") == 1, out
