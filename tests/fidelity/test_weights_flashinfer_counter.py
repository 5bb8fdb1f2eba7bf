"""vLLM 0.33.0's FlashInfer multi-CTA KV counter in unquantized models' weights (issue 33).

``FlashInferImpl.__init__`` (0.33.0 only) allocates one shared uint8 counter per process while
the model is built, so it is inside ``Model loading took``: on SM 10.x, where FlashInfer leads
the attention priorities, and wherever ``--attention-backend FLASHINFER`` is named. dryboot adds
it (``weights._flashinfer_attention``). ``data/weights/quant-recorded-ficounter-<release>.json``:
vLLM's own figures (``RECORD_SET=ficounter record_quant_weights.py``, ``quant_cases_ficounter.py``)
for published Qwen3, Llama-3.1, Gemma 3 and Nemotron-H configs on A100 / H100 / B200 / RTX 5090
at TP 1 and 2, as built (``built_allocated_bytes``: every storage made while building, the counter
included). Nothing recorded comes from dryboot. Needs no vLLM.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quant_cases_ficounter as fc
from quant_harness import case_ids, dryboot_weights, load_recorded

from dryboot.vllm.backends import flashinfer_kv_counter_bytes
from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-ficounter-")
CASES = case_ids(RECORDED)


def _flag(row: dict[str, Any], flag: str) -> str | None:
    argv = row["argv"]
    return argv[argv.index(flag) + 1] if flag in argv else None


def _weights(row: dict[str, Any], version: str) -> Any:
    return dryboot_weights(
        fc.CONFIGS,
        row,
        version,
        attention_backend=_flag(row, "--attention-backend"),
        kv_cache_dtype=_flag(row, "--kv-cache-dtype") or "auto",
    )


def test_recorded_releases_and_gpus() -> None:
    assert set(RECORDED) == {"0.32.0", "0.33.0"}
    b200 = [row for row in RECORDED["0.33.0"].values() if row["gpu"] == "B200"]
    assert len(b200) == 8 and all(row["ok"] for row in b200)


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_unquantized_weights_match_vllm_with_the_counter(version: str, cid: str) -> None:
    row = RECORDED[version][cid]
    assert row["ok"], row.get("error")
    report = _weights(row, version)
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["built_allocated_bytes"]


def test_the_counter_is_what_b200_adds_on_0_33_0() -> None:
    """B200 on 0.33.0 holds H100's figure plus the counter (8,192 tokens x a rank's query heads
    int32: Qwen3-0.6B's 16 heads at TP 1, 512 KiB); 0.32.0's B200 figure equals 0.33.0's H100 one."""
    r33, r32 = RECORDED["0.33.0"], RECORDED["0.32.0"]
    qwen = "Qwen--Qwen3-0.6B {} --tensor-parallel-size 1"
    extra = r33[qwen.format("B200")]["built_allocated_bytes"] - r33[qwen.format("H100")]["built_allocated_bytes"]
    assert extra == flashinfer_kv_counter_bytes(8192, 16, 148) == 524_288
    assert r32[qwen.format("B200")]["built_allocated_bytes"] == r33[qwen.format("H100")]["built_allocated_bytes"]


def test_sm12_counter_with_an_fp8_cache_only() -> None:
    """RTX 5090 (SM 12.0): FlashAttention under ``auto`` (no counter), FlashInfer for an fp8 cache."""
    r33 = RECORDED["0.33.0"]
    qwen = "Qwen--Qwen3-0.6B {} --tensor-parallel-size 1"
    h100 = r33[qwen.format("H100")]["built_allocated_bytes"]
    assert r33[qwen.format("RTX 5090")]["built_allocated_bytes"] == h100
    fp8 = r33[qwen.format("RTX 5090") + " --kv-cache-dtype fp8"]["built_allocated_bytes"]
    assert fp8 - h100 == flashinfer_kv_counter_bytes(8192, 16, 170)


ARCHITECTURES = Path(__file__).resolve().parent / "data" / "architectures"


@pytest.mark.parametrize("arch", ["Olmo2ForCausalLM", "GPT2LMHeadModel", "StableLmForCausalLM"])
def test_walks_without_the_counter_refused_where_flashinfer_serves(arch: str) -> None:
    """A family whose walk does not ask about the counter: refused by name on B200 with 0.33.0 (a
    silent figure without it before), answered on H100, on 0.32.0, and with another backend named."""
    config = ARCHITECTURES / f"{arch}.json"

    def run(cap: tuple[int, int], version: str = "0.33.0", backend: str | None = None) -> Any:
        return model_weights(
            config,
            compute_capability=cap,
            sm_count=148,
            vllm_version=version,
            max_num_batched_tokens=8192,
            attention_backend=backend,
        )

    refused = run((10, 0)).refused
    assert refused and "multi-CTA KV counter" in refused and "not modelled" in refused
    assert "multi-CTA" in (run((9, 0), backend="FLASHINFER").refused or "")
    assert not run((9, 0)).refused
    assert not run((10, 0), "0.32.0").refused
    assert not run((10, 0), backend="FLASH_ATTN").refused
