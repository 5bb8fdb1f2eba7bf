"""FlashInfer's multi-CTA KV counter for a user-chosen fp8 KV cache (``--kv-cache-dtype fp8``).

vLLM 0.33.0 builds FlashInfer attention for an fp8 KV cache on SM 8.x (FlashAttention 2 takes
none), and ``FlashInferImpl.__init__`` allocates the counter with the model (0.27.1-0.32.0 do
not). The cases (``quant_cases_kvfp8.py``): published Qwen/Qwen3-0.6B (bf16) with
``--kv-cache-dtype fp8 --max-num-batched-tokens 8192`` on RTX 3090, RTX 4090 and H100 at TP 1
and 2, recorded by ``RECORD_SET=kvfp8 record_quant_weights.py`` in the boot environments
(``data/weights/quant-recorded-kvfp8-<version>.json``). An unquantized model's figure is the
built one (``built_allocated_bytes``: docs/weights.md, the walk keeps the built figure of
attention's scale blocks).
"""

from __future__ import annotations

from typing import Any

import pytest
import quant_cases_kvfp8 as kv
from quant_harness import case_ids, load_recorded, tp_of

from dryboot.vllm.backends import flashinfer_kv_counter_bytes
from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-kvfp8-")
CASES = case_ids(RECORDED)


def _weights(row: dict[str, Any], version: str, kv_cache_dtype: str = "fp8") -> Any:
    return model_weights(
        kv.CONFIGS / row["config"],
        tp=tp_of(row),
        compute_capability=tuple(row["capability"]),
        sm_count=row["sm_count"],
        vllm_version=version,
        max_num_batched_tokens=row["max_num_batched_tokens"],
        kv_cache_dtype=kv_cache_dtype,
    )


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm(version: str, cid: str) -> None:
    """Byte-exact on every recorded case: the counter where vLLM allocates it, none elsewhere."""
    row = RECORDED[version][cid]
    assert row["ok"], row.get("error")
    report = _weights(row, version)
    assert report.refused is None, report.refused
    assert report.stages[0].allocated_bytes == row["built_allocated_bytes"], cid


def test_counter_is_what_differs() -> None:
    """On 0.33.0 the SM 8.x rows hold exactly one counter more than the H100's (16 query heads
    per rank at TP 1, 8 at TP 2, 8,192 tokens): the figure is not matched by accident."""
    rows = RECORDED["0.33.0"]
    for tp, heads in ((1, 16), (2, 8)):
        h100 = rows[f"Qwen--Qwen3-0.6B H100 --tensor-parallel-size {tp}"]["built_allocated_bytes"]
        for gpu, sms in (("RTX 3090", 82), ("RTX 4090", 128)):
            got = rows[f"Qwen--Qwen3-0.6B {gpu} --tensor-parallel-size {tp}"]["built_allocated_bytes"]
            assert got - h100 == flashinfer_kv_counter_bytes(8192, heads, sms) == 8192 * heads * 4


def test_auto_cache_has_no_counter() -> None:
    """``--kv-cache-dtype auto`` on a bf16 checkpoint keeps FlashAttention: one counter less."""
    row = RECORDED["0.33.0"]["Qwen--Qwen3-0.6B RTX 3090 --tensor-parallel-size 1"]
    fp8 = _weights(row, "0.33.0").stages[0].allocated_bytes
    auto = _weights(row, "0.33.0", "auto").stages[0].allocated_bytes
    e5m2 = _weights(row, "0.33.0", "fp8_e5m2").stages[0].allocated_bytes
    assert fp8 - auto == 524_288 and e5m2 == fp8


def test_recorded_releases() -> None:
    """0.33.0 (with the counter) and 0.30.0 / 0.32.0 (without) are recorded."""
    assert "0.33.0" in RECORDED and len(RECORDED) >= 2
    assert sorted(RECORDED) == ["0.30.0", "0.32.0", "0.33.0"] and all(len(r) == 6 for r in RECORDED.values())
