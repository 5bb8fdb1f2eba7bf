"""The MLA prefill backend vLLM builds with each MLA layer, and its workspace in the weights (issue 33).

:mod:`dryboot.vllm.mla_prefill`: on SM 10.x the prefill selector (``v1/attention/backends/mla/prefill/
selector.py``; 0.32.0+ ``platforms/interface.py`` ``get_mla_prefill_backend_cls``) puts TRT-LLM
ragged first for (192, 64, 256) head dims, whose constructor reserves
``VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE`` (394 MiB) from the worker's workspace manager while the
model is built; FlashAttention (no workspace) wins every other dims it takes; none valid: vLLM raises.
``data/weights/quant-recorded-mlapf-<release>.json``: vLLM's own figures (``RECORD_SET=mlapf
record_quant_weights.py``, ``quant_cases_mlapf.py``: tiny stand-in DeepSeek-V2 configs, said so in
their ``SOURCE``) on H100 / B200 at TP 1 and 2, as built (``built_allocated_bytes``: the workspace and
CUTLASS MLA's module global included). Nothing recorded comes from dryboot. Needs no vLLM.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quant_cases_mlapf as mc
from quant_harness import case_ids, dryboot_weights, load_recorded

from dryboot.vllm.cutlass_mla import CUTLASS_MLA_WORKSPACE_BYTES
from dryboot.vllm.mla_prefill import (
    FLASHINFER_WORKSPACE_BUFFER_BYTES,
    mla_prefill_backend,
    prefill_priorities,
    prefill_workspace_bytes,
)

RECORDED = load_recorded("quant-recorded-mlapf-")
CASES = case_ids(RECORDED)
CONFIG = "tiny-deepseek-v2-mla-{}-{}-{}"
#: the backend each recorded config's dims take on SM 10.x (None: vLLM raises)
B200_BACKEND = {
    (128, 64, 128): "FLASH_ATTN",
    (64, 64, 128): "FLASH_ATTN",
    (192, 64, 256): "TRTLLM_RAGGED",
    (96, 32, 96): None,
}


def test_recorded() -> None:
    assert set(RECORDED) == {"0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"}
    for cases in RECORDED.values():
        assert len(cases) >= 16
        assert any(row["gpu"] == "B200" and row["ok"] for row in cases.values())


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_mla_weights_match_vllm_as_built(version: str, cid: str) -> None:
    """Byte-exact with what vLLM holds once the model is built (the prefill workspace and CUTLASS MLA's
    global on B200), or refused where vLLM raises (no prefill backend for the dims)."""
    row = RECORDED[version][cid]
    argv = row["argv"]
    dtype = argv[argv.index("--dtype") + 1] if "--dtype" in argv else "auto"
    report = dryboot_weights(mc.CONFIGS, row, version, dtype=dtype)
    if not row["ok"]:
        assert report.refused, f"vLLM refuses ({row['error'][:160]}); dryboot answered"
        if "No valid MLA prefill backend found" in row["error"]:
            assert "MLA prefill backend" in report.refused, report.refused
        return
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["built_allocated_bytes"], (row, report.stages[0].allocated_bytes)


@pytest.mark.parametrize("version", sorted(RECORDED))
@pytest.mark.parametrize("tp", [1, 2])
@pytest.mark.parametrize("dims", [d for d, b in B200_BACKEND.items() if b is not None])
def test_b200_minus_h100_is_cutlass_plus_the_prefill_workspace(version: str, tp: int, dims: tuple[int, ...]) -> None:
    """vLLM's own B200 - H100 difference: CUTLASS MLA's 128 MiB, plus 394 MiB where TRT-LLM ragged is
    the prefill backend, once per rank (every layer's request reuses the worker's one buffer)."""
    rec = RECORDED[version]
    cid = CONFIG.format(*dims) + " {} --tensor-parallel-size " + str(tp)
    extra = rec[cid.format("B200")]["built_allocated_bytes"] - rec[cid.format("H100")]["built_allocated_bytes"]
    assert extra == CUTLASS_MLA_WORKSPACE_BYTES + prefill_workspace_bytes(B200_BACKEND[dims] or "")


def test_the_selector_rule() -> None:
    """``_get_mla_prefill_backend_priorities`` / ``get_mla_prefill_backend_cls``: TRT-LLM ragged first
    on SM 10.x for (192, 64, 256), FlashAttention first otherwise and alone off SM 10.x; fp16 / bf16
    only; (256, 0, 256) FlashAttention's from 0.31.0."""
    assert prefill_priorities((10, 0), (192, 64, 256))[0] == "TRTLLM_RAGGED"
    assert prefill_priorities((10, 3), (128, 64, 128))[0] == "FLASH_ATTN"
    assert prefill_priorities((9, 0), (192, 64, 256)) == ("FLASH_ATTN",)
    for version in ("0.27.1", "0.28.0", "0.33.0"):
        for dims, backend in B200_BACKEND.items():
            assert mla_prefill_backend((10, 0), dims, "bfloat16", version) == backend
        assert mla_prefill_backend((9, 0), (192, 64, 256), "bfloat16", version) == "FLASH_ATTN"
        assert mla_prefill_backend((10, 0), (192, 64, 256), "float32", version) is None
    assert mla_prefill_backend((10, 0), (256, 0, 256), "bfloat16", "0.30.0") is None
    assert mla_prefill_backend((10, 0), (256, 0, 256), "bfloat16", "0.31.0") == "FLASH_ATTN"
    assert prefill_workspace_bytes("TRTLLM_RAGGED") == FLASHINFER_WORKSPACE_BUFFER_BYTES == 413_138_944
    assert prefill_workspace_bytes("FLASH_ATTN") == 0
