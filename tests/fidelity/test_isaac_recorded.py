"""Isaac's two configs (``isaac_cases.py``) against vLLM 0.28.0's and 0.33.0's recorded engine
start (``data/wrappers/isaac/``, ``record_isaac.py``). Needs no vLLM.

vLLM builds the decoder layers from ``text_config`` and the lm_head and M-RoPE sections from the
top level: a ``text_config`` equal to the top level is served as the top level alone (dryboot
agrees); a ``text_config`` differing from the top level in a key the layers alone read
(``num_key_value_heads``) is served, the KV cache as ``text_config`` says (half the blocks with
twice the KV heads; dryboot agrees); a ``head_dim`` whose sections do not sum to half the text's
rotary dimension (an unsplittable ``head_dim``, a partial rotary factor) fails
``MRotaryEmbedding``'s assertion (dryboot refuses, naming the field); a
``text_config`` differing in a key the lm_head reads at the top level (``vocab_size``) is served
(``embed_tokens`` of ``text_config``'s vocabulary, the lm_head of the top level's), which dryboot
does not compose: it refuses, naming the ``text_config`` key."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))

import isaac_cases as Q

from dryboot.cli import cli

RECORDED = {v: json.loads(Q.record_path(v).read_text())["cases"] for v in Q.VERSIONS}
#: case -> the field dryboot's refusal names (cases dryboot refuses)
REFUSED = {
    "text-config-head-dim-64": "text_config.head_dim",
    "text-config-vocab-2048": "text_config.vocab_size",
    "head-dim-100": "head_dim",
    "partial-rotary-half": "partial_rotary_factor",
}


def _plan(tmp_path: Path, config: dict[str, Any], version: str) -> tuple[int, str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    argv = ["plan", "--model", str(path), "--vllm-version", version, *Q.ARGV]
    res = CliRunner().invoke(cli, argv)
    return res.exit_code, " ".join(res.output.split())


def test_every_case_is_recorded() -> None:
    for cases in RECORDED.values():
        assert set(cases) == set(Q.CASES)


@pytest.mark.parametrize(("version", "case"), [(v, c) for v in Q.VERSIONS for c in Q.CASES])
def test_dryboot_against_the_record(tmp_path: Path, version: str, case: str) -> None:
    vllm = RECORDED[version][case]["vllm"]
    rc, out = _plan(tmp_path, Q.config(case), version)
    if case in REFUSED:
        assert rc == 2, out
        assert REFUSED[case] in out and "Traceback" not in out, out
        if not vllm["ok"]:  # vLLM fails building the model: the M-RoPE assertion
            assert vllm["stage"] == "model" and vllm["error"].startswith("AssertionError"), vllm
        return
    assert vllm["ok"], vllm
    assert rc == 0, out
    tokens = vllm["num_blocks"] * vllm["block_size"]
    assert f"GPU KV cache size: {tokens:,} tokens" in out, out


def test_vllm_reads_the_layers_from_text_config() -> None:
    """What the refusal of a disagreeing text_config stands on: vLLM's KV cache follows
    text_config's KV heads (4, the top level's 2): half the blocks of the equal case."""
    for cases in RECORDED.values():
        equal, kv4 = cases["text-config-equal"]["vllm"], cases["text-config-kv-heads-4"]["vllm"]
        assert kv4["ok"] and kv4["groups"][0][2] == 2 * equal["groups"][0][2]
        assert kv4["num_blocks"] == equal["num_blocks"] // 2
