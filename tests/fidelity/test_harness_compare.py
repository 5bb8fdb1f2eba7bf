"""The verdict of the fidelity harness (``e2e_harness.compare``) can fail: a crash of dryboot's never
agrees with anything, and two refusals agree only when they are the same refusal (vLLM's exception
type and a key phrase of its message, in dryboot's line or paired in ``SAME_REFUSAL``) or a documented
exception (``OTHER_ORDER``: a check dryboot runs in another order). Needs no vLLM: vLLM's side is its
recorded words."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H

DATA = Path(__file__).resolve().parent / "data"

SERVED = {"ok": True, "block_size": 16, "groups": [["FullAttention", 16, 65536, 2]], "num_blocks": 10,
          "tokens": 160, "concurrency": 0.02, "max_model_len": 8192}  # fmt: skip
PP = "NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement the SupportsPP interface."  # noqa: E501


def refused(line: str) -> dict[str, Any]:
    return {"rc": 2, "refused": True, "error": f"dryboot: error: {line}"}


def vllm(error: str) -> dict[str, Any]:
    return {"ok": False, "stage": "engine", "error": error}


def crash(exc: str) -> dict[str, Any]:
    return {"rc": -1, "refused": True, "error": f"crash: {exc}"}


def test_a_crash_never_agrees() -> None:
    """The planted bug of issue 38: the pipeline-parallel refusal raising TypeError was 'agree'."""
    assert not H.compare(vllm(PP), crash("TypeError: unsupported operand"))["agree"]
    assert not H.compare(SERVED, crash("KeyError: 'layers'"))["agree"]
    assert "crash" in H.compare(vllm(PP), crash("TypeError: x"))["diffs"]
    unparseable = {"rc": -1, "refused": True, "error": "unparseable output: Traceback (most recent call last)"}
    assert not H.compare(vllm(PP), unparseable)["agree"]


def test_the_same_refusal_agrees() -> None:
    v = vllm(
        "ValidationError: 1 validation error for ModelConfig\n  Value error, User-specified max_model_len (65536) is "
        "greater than the derived max_model_len (max_position_embeddings=32768 or model_max_length=None in model's "
        "config.json). [type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]"
    )
    d = refused(
        "--max-model-len: 65536: User-specified max_model_len (65536) is greater than the derived max_model_len "
        "(max_position_embeddings=32768 in config.json)"
    )
    verdict = H.compare(v, d)
    assert verdict["agree"] and verdict["same_refusal"] and verdict["exception"] is None


def test_two_different_refusals_disagree() -> None:
    """Issue 38's example: "eagle_aux_hidden_state_layer_ids must be set" is no answer to a request
    that vLLM refuses for its pipeline parallelism -- unless it is the documented exception."""
    other = refused("--max-model-len: 65536: User-specified max_model_len (65536) is greater than the derived")
    verdict = H.compare(vllm(PP), other)
    assert not verdict["agree"] and verdict["diffs"]["refusal"][1] == other["error"]
    # the documented exception: dryboot checks the speculative config before the pipeline's support
    eagle = refused("--speculative-config: draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids: must be set")
    eagle["error"] = eagle["error"].replace("must be set", "eagle_aux_hidden_state_layer_ids must be set")
    verdict = H.compare(vllm(PP), eagle)
    assert verdict["agree"] and verdict["same_refusal"] is None and "pipeline parallelism" in verdict["exception"]


def test_the_exception_type_is_part_of_the_refusal() -> None:
    """A bare ``assert`` of vLLM's pairs with a line naming an assertion; a ValueError with no
    message of its own does not."""
    d = refused("--tensor-parallel-size: 8: x: total_num_heads % tp_size == 0 fails (AssertionError while vLLM builds)")
    assert H.compare(vllm("AssertionError: "), d)["agree"]
    assert not H.compare(vllm("ValueError: "), d)["agree"]


def test_one_side_refusing_disagrees() -> None:
    assert not H.compare(vllm(PP), {"rc": 0, "refused": False, **{k: v for k, v in SERVED.items() if k != "ok"}})[
        "agree"
    ]
    assert not H.compare(SERVED, refused("--max-model-len: 1: too small"))["agree"]


def _recorded_vllm_errors() -> Iterator[str]:
    def walk(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            if node.get("ok") is False and isinstance(node.get("error"), str):
                yield node["error"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    for path in sorted(DATA.rglob("*.json")):
        yield from walk(json.loads(path.read_text(encoding="utf-8")))
    for path in sorted(DATA.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                yield from walk(json.loads(line))


@pytest.mark.parametrize("table", ["SAME_REFUSAL", "OTHER_ORDER"])
def test_every_pairing_is_documented_and_pairs_a_recorded_vllm_refusal(table: str) -> None:
    """Strict tables: each entry says why, and its vLLM side is a refusal vLLM really gave in the
    recorded cases (no pairing kept for a message vLLM never says)."""
    errors = [H.vllm_refusal(e) for e in _recorded_vllm_errors()]
    assert len(errors) > 1000
    for kinds, v_phrase, d_phrase, why in getattr(H, table):
        assert len(why) > 20 and d_phrase, why
        re.compile(v_phrase)
        re.compile(d_phrase)
        assert any((not kinds or k in kinds) and re.search(v_phrase, m) for k, m in errors), why
