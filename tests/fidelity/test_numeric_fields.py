"""Every numeric config field dryboot reads, given as a value a hand-edited or hostile config
holds (a string, NaN, 0, -1, a fraction, the same number as a float, a bool, null, 1e30),
against vLLM 0.28.0's own engine start (issue 35 item 5).

The bases are the tiny configs of ``data/architectures/`` (a Llama with llama3 RoPE scaling, a
Mistral with a sliding window, Qwen3-Next's Gated DeltaNet dims, Nemotron-H's Mamba2 dims); each
case varies one field. ``data/numeric_fields/recorded.json`` holds what vLLM answered for every
case (``record_numeric_fields.py`` runs ``src/dryboot/boot/engine_start.py``; nothing in it comes
from dryboot). The default run checks ``dryboot plan --json`` against each: the same figures
where vLLM starts (having coerced the value), a refusal where vLLM refuses.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H

pytestmark = pytest.mark.fidelity

HERE = Path(__file__).resolve().parent
BASES = HERE / "data" / "architectures"
RECORDED = HERE / "data" / "numeric_fields" / "recorded.json"
ARGV = ["--kv-cache-memory-bytes", "2000000000"]

#: base architecture -> the fields varied (a dotted name reaches into rope_scaling)
FIELDS: dict[str, tuple[str, ...]] = {
    "LlamaForCausalLM": (
        "max_position_embeddings",
        "hidden_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "num_hidden_layers",
        "vocab_size",
        "intermediate_size",
        "rope_scaling.factor",
        "rope_scaling.original_max_position_embeddings",
    ),
    "MistralForCausalLM": ("sliding_window", "max_position_embeddings", "num_key_value_heads"),
    "Qwen3NextForCausalLM": (
        "max_position_embeddings",
        "vocab_size",
        "hidden_size",
        "num_key_value_heads",
        "linear_num_key_heads",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel_dim",
        "full_attention_interval",
    ),
    "NemotronHForCausalLM": (
        "max_position_embeddings",
        "vocab_size",
        "mamba_num_heads",
        "mamba_head_dim",
        "ssm_state_size",
        "n_groups",
        "conv_kernel",
    ),
}

#: the kinds of value, each derived from the field's published value
VALUES = ("string", "nan", "zero", "negative", "fraction", "float", "bool", "null", "huge")


def hostile(original: Any, kind: str) -> Any:
    """The value of ``kind`` for a field whose base value is ``original`` (a number)."""
    return {
        "string": str(original),
        "nan": math.nan,
        "zero": 0,
        "negative": -1,
        "fraction": original + 0.5,
        "float": float(original),
        "bool": True,
        "null": None,
        "huge": 1e30,
    }[kind]


def base(architecture: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((BASES / f"{architecture}.json").read_text())
    return data


def varied(architecture: str, field: str, kind: str) -> dict[str, Any]:
    config = copy.deepcopy(base(architecture))
    holder = config
    *outer, key = field.split(".")
    for name in outer:
        holder = holder[name]
    holder[key] = hostile(holder[key], kind)
    return config


def case_ids() -> list[tuple[str, str, str]]:
    return [(a, f, k) for a, fields in FIELDS.items() for f in fields for k in VALUES]


def make_case(architecture: str, field: str, kind: str) -> H.Case:
    work = H.default_workdir()
    work.mkdir(parents=True, exist_ok=True)
    model = H._write_config(work, f"numeric-{architecture}-{field}-{kind}", varied(architecture, field, kind))
    return H.Case(id=f"{architecture}:{field}:{kind}", family="numeric", model=model, argv=ARGV)


def load_recorded() -> dict[str, dict[str, Any]]:
    if not RECORDED.exists():
        return {}
    data: dict[str, dict[str, Any]] = json.loads(RECORDED.read_text())["cases"]
    return data


def disagreement(case: H.Case, answer: dict[str, Any]) -> str | None:
    """Why dryboot's answer to ``case`` is not vLLM's ``answer``, or ``None``: the same figures,
    both refusing, or dryboot refusing in one line a value vLLM plans with (a zero or negative
    size vLLM happens to build: "exact or refused"). A traceback, or a plan where vLLM refuses,
    is a disagreement."""
    d = H.run_dryboot(case, "0.28.0")
    if d.get("rc") not in (0, 1, 2) or (d.get("rc") == 2 and not d.get("refused")):
        return f"{case.command('0.28.0')}\n    dryboot ended badly: {d}"
    if H.compare(answer, d)["agree"] or (answer.get("ok") and d.get("refused")):
        return None
    if not answer.get("ok") and d.get("refused") and "config.json" in str(d.get("error")):
        # both refuse the odd value: vLLM with whatever its config class or layer raises on it
        # (a TypeError, a ZeroDivisionError...), dryboot naming the field in config.json, which
        # is what this test is about (the harness's same-refusal rule matches vLLM's engine
        # messages, not the exception a bad value happens to raise inside a model class)
        return None
    return (
        f"{case.command('0.28.0')}\n    vLLM:    {H._answer(answer, vllm=True)}"
        f"\n    dryboot: {H._answer(d, vllm=False)}"
    )


def test_every_case_is_recorded() -> None:
    assert sorted(load_recorded()) == sorted(f"{a}:{f}:{k}" for a, f, k in case_ids())


@pytest.mark.parametrize("architecture,field", [(a, f) for a, fields in FIELDS.items() for f in fields])
def test_dryboot_matches_recorded_vllm(architecture: str, field: str) -> None:
    recorded = load_recorded()
    problems = []
    for kind in VALUES:
        case = make_case(architecture, field, kind)
        if (p := disagreement(case, recorded[case.id])) is not None:
            problems.append(p)
    assert not problems, "\n".join(problems)
