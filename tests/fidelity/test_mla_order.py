"""Synthetic MLA shapes (issue 37): vLLM selects the MLA prefill backend when it builds the model,
after the runner's drafter checks. The generated case ``s7-77`` (``e2e_harness.py --family
deepseek --seed 7``: head dims (128, 32, 128), which no prefill backend serves, with an
``extract_hidden_states`` drafter without layer ids) is refused by vLLM 0.28.0 and 0.30.0 (engine
start, run on 2026-12-05) with "ValueError: eagle_aux_hidden_state_layer_ids must be set in the
draft model config for extract_hidden_states method"; without the drafter with "No valid MLA
prefill backend found ...".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H

VLLM_FIRST = "eagle_aux_hidden_state_layer_ids must be set in the draft model config for extract_hidden_states method"


@pytest.mark.parametrize("version", ["0.28.0", "0.30.0"])
def test_the_drafter_check_comes_before_the_mla_prefill_backend(tmp_path: Path, version: str) -> None:
    case = next(c for c in H.generate_cases(80, 7, tmp_path, families=["deepseek"]) if c.id == "s7-77")
    config = json.loads((Path(case.model) / "config.json").read_text())
    assert (config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"]) == (128, 32, 128)
    got = H.run_dryboot(case, version)
    assert got["refused"] and VLLM_FIRST in got["error"], got
    without = H.Case(id="x", family="mla", model=case.model, argv=["--kv-cache-memory-bytes", "1G"], source="x")
    got = H.run_dryboot(without, version)
    assert got["refused"] and "No valid MLA prefill backend found" in got["error"], got
