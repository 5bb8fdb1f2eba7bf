"""A drafter's pass in the profile run (0.28 ``_dummy_run`` -> ``drafter.dummy_run``, after the
target's forward, the target's output hidden states still held) and its graphs on the V2 runner
of 0.29+ (``profile_cudagraph_memory`` measures the speculator's graphs in full)."""

from __future__ import annotations

import json
from pathlib import Path

from dryboot.vllm.worker.interval import MIB, Term
from dryboot.vllm.worker.profile_run import activation_terms, forward_shape, forward_widest

REPO = Path(__file__).resolve().parents[1]
QWEN3_8B = REPO / "tests/data/checklog/public/configs/Qwen--Qwen3-8B.config.json"


def _forward(terms: list[Term]) -> Term:
    return next(t for t in terms if "forward" in t.name)


def test_drafter_pass_holds_the_targets_hidden_states() -> None:
    shape = forward_shape(json.loads(QWEN3_8B.read_text()))
    common = {"max_num_batched_tokens": 8192, "max_num_seqs": 1, "tp": 1, "compiled": False, "runner": "V2"}
    plain = _forward(activation_terms(shape, **common))
    drafted = _forward(activation_terms(shape, **common, speculative=True, drafter_pass=True))
    held = 8192 * shape.hidden_size * shape.dtype_bytes
    widest = forward_widest(shape, 8192, 1)
    assert plain.low == widest and drafted.low == widest + held and drafted.high == (widest + held) * 150 // 100
    assert "drafter's pass" in drafted.source
    assert held == 64 * MIB
