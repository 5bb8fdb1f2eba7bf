"""Synthetic MLA shapes (issue 37): vLLM selects the MLA prefill backend when it builds the model,
after the engine config's checks, the runner's drafter checks and each layer's decode backend.
The generated case ``s7-77`` (``e2e_harness.py --family deepseek --seed 7``: head dims
(128, 32, 128), which no prefill backend serves, with an ``extract_hidden_states`` drafter without
layer ids) is refused by vLLM 0.28.0 and 0.30.0 (engine start, run on 2026-12-05) with
"ValueError: eagle_aux_hidden_state_layer_ids must be set in the draft model config for
extract_hidden_states method"; without the drafter with "No valid MLA prefill backend found ...".
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


#: generated DeepSeek cases whose (qk_nope, qk_rope, v) head dims (128, 32, 128) no MLA prefill
#: backend serves, refused by vLLM 0.28.0 (engine start, run on 2026-12-05; 0.30.0 agrees with
#: dryboot on all of seeds 7, 11 and 12) for a reason it meets first: the draft model's missing
#: ``SupportsPP`` while the engine config is created, or the decode attention backend when the
#: layer is built (before its prefill backend); its error as logged, cut after the message
EARLIER_REFUSALS = {
    (11, "s11-52"): (
        "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=288, "
        "dtype=torch.bfloat16, kv_cache_dtype=fp8_e5m2, block_size=None, use_mla=True"
    ),
    (11, "s11-77"): (
        "NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement "
        "the `SupportsPP` interface."
    ),
    (12, "s12-59"): (
        "ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this configuration. "
        "Reason: ['head_size not supported', 'MLA not supported']"
    ),
    (12, "s12-68"): (
        "NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement "
        "the `SupportsPP` interface."
    ),
    (12, "s12-79"): (
        "ValidationError: 1 validation error for VllmConfig\n  Value error, nvfp4 KV cache is not supported with "
        "MLA (Multi-head Latent Attention) backends. Please use a different --kv-cache-dtype (e.g., 'fp8' or "
        "'auto') for MLA models such as DeepSeek."
    ),
}


@pytest.mark.parametrize(("seed", "case_id"), sorted(EARLIER_REFUSALS))
def test_what_vllm_meets_before_the_mla_prefill_backend(tmp_path: Path, seed: int, case_id: str) -> None:
    case = next(c for c in H.generate_cases(80, seed, tmp_path, families=["deepseek"]) if c.id == case_id)
    config = json.loads((Path(case.model) / "config.json").read_text())
    assert (config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"]) == (128, 32, 128)
    got = H.run_dryboot(case, "0.28.0")
    assert "prefill backend" not in str(got.get("error")), got
    vllm = {"ok": False, "error": EARLIER_REFUSALS[(seed, case_id)]}
    assert H.compare(vllm, got)["agree"], got
