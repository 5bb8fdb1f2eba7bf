"""CUTLASS MLA's import-time workspace and SM 10.x's MLA weights (issue 33).

vLLM's ``v1/attention/backends/mla/cutlass_mla.py`` allocates a 128 MiB ``g_sm100_workspace`` on
"cuda" when imported (0.27.1 / 0.28.0 ``:107``, 0.29.0-0.33.0 ``:99``), and the MLA attention
selector imports it while the model is built (``platforms/cuda.py`` ``get_valid_backends``
imports every backend of SM 10.x's MLA priority list; a named ``--attention-backend`` imports only
that one): :mod:`dryboot.vllm.cutlass_mla`. On SM 10.x the MLA prefill backend also reserves the
worker's workspace (394 MiB) in its constructor where it is TRT-LLM ragged (GLM-4.7-Flash's
(192, 64, 256) head dims): :mod:`dryboot.vllm.mla_prefill`, ``test_weights_mla_prefill.py``.
``data/weights/quant-recorded-mlaws-<release>.json``: vLLM's own figures (``RECORD_SET=mlaws
record_quant_weights.py``, ``quant_cases_mlaws.py``) for the published GLM-4.7-Flash config on
H100 / B200 / RTX 5090, as built (``built_allocated_bytes``: every storage made while building,
module globals included). Nothing recorded comes from dryboot. Needs no vLLM.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quant_cases_mlaws as mc
from quant_harness import case_ids, dryboot_weights, load_recorded

from dryboot.vllm.cutlass_mla import CUTLASS_MLA_WORKSPACE_BYTES, imports_cutlass_mla
from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-mlaws-")
CASES = case_ids(RECORDED)
#: ``envs.VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE``'s default (0.27.1-0.33.0)
PREFILL_WORKSPACE = 394 * 1024 * 1024
ARCHITECTURES = Path(__file__).resolve().parent / "data" / "architectures"
GLM = "zai-org--GLM-4.7-Flash {} --tensor-parallel-size {}"


def _flag(row: dict[str, Any], flag: str) -> str | None:
    argv = row["argv"]
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_recorded() -> None:
    assert "0.28.0" in RECORDED
    for cases in RECORDED.values():
        assert all(row["ok"] for row in cases.values())
        assert any(row["gpu"] == "B200" for row in cases.values())


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_mla_weights_match_vllm(version: str, cid: str) -> None:
    """Byte-exact everywhere: off SM 10.x no workspace (SM 9.0 and 12.x's MLA lists have no
    CUTLASS_MLA); on SM 10.x CUTLASS MLA's 128 MiB where the selector imports it, plus TRT-LLM
    ragged's 394 MiB prefill workspace (refused by name before the prefill backend was modelled)."""
    row = RECORDED[version][cid]
    assert row["ok"], row.get("error")
    report = dryboot_weights(mc.CONFIGS, row, version, attention_backend=_flag(row, "--attention-backend"))
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["built_allocated_bytes"]


@pytest.mark.parametrize("version", sorted(RECORDED))
@pytest.mark.parametrize("tp", [1, 2])
def test_b200_holds_the_cutlass_and_prefill_workspaces(version: str, tp: int) -> None:
    """B200 builds what H100 builds (the same layers, bf16 experts as built) plus CUTLASS MLA's
    128 MiB (imported by the selector) and the TRT-LLM ragged prefill's 394 MiB reservation
    (GLM-4.7-Flash's 192/64/256 head dims put it first on SM 10.x)."""
    rec = RECORDED[version]
    extra = rec[GLM.format("B200", tp)]["built_allocated_bytes"] - rec[GLM.format("H100", tp)]["built_allocated_bytes"]
    assert extra == CUTLASS_MLA_WORKSPACE_BYTES + PREFILL_WORKSPACE


@pytest.mark.parametrize("version", sorted(RECORDED))
def test_a_named_backend_imports_only_itself(version: str) -> None:
    """``--attention-backend FLASHINFER_MLA``: CUTLASS MLA is not imported (the prefill's
    reservation stays); ``CUTLASS_MLA``: it is, as under vLLM's own choice."""
    rec = RECORDED[version]
    h100 = rec[GLM.format("H100", 1)]["built_allocated_bytes"]
    named = GLM.format("B200", 1) + " --attention-backend {}"
    if named.format("FLASHINFER_MLA") not in rec:
        pytest.skip(f"{version}: no named-backend rows recorded")
    assert rec[named.format("FLASHINFER_MLA")]["built_allocated_bytes"] - h100 == PREFILL_WORKSPACE
    assert (
        rec[named.format("CUTLASS_MLA")]["built_allocated_bytes"] - h100
        == CUTLASS_MLA_WORKSPACE_BYTES + PREFILL_WORKSPACE
    )


def test_the_selector_rule() -> None:
    """``platforms/cuda.py``: SM 10.x's MLA priorities hold CUTLASS_MLA and every one is imported;
    SM 8.x / 9.x / 11.x / 12.x's lists do not; a named backend imports only itself."""
    assert imports_cutlass_mla((10, 0), None) is True
    assert imports_cutlass_mla((10, 3), None) is True
    for cap in ((8, 0), (8, 6), (8, 9), (9, 0), (11, 0), (12, 0), (12, 1)):
        assert imports_cutlass_mla(cap, None) is False
    assert imports_cutlass_mla((10, 0), "FLASHINFER_MLA") is False
    assert imports_cutlass_mla((9, 0), "CUTLASS_MLA") is True
    assert imports_cutlass_mla(None, None) is None
    assert CUTLASS_MLA_WORKSPACE_BYTES == 134_217_728


def _weights(arch: str, cap: tuple[int, int] | None, backend: str | None = None, pp: int = 1) -> Any:
    return model_weights(
        ARCHITECTURES / f"{arch}.json",
        compute_capability=cap,
        sm_count=132,
        attention_backend=backend,
        pp=pp,
        max_num_batched_tokens=8192,
    )


def test_the_term_where_the_module_is_imported_off_sm10() -> None:
    """CUTLASS_MLA named on another GPU (vLLM imports the module, then finds it invalid): the
    128 MiB joins the figure; the model's own figure otherwise, and no term for a non-MLA model or
    MiniCPM3 (``kv_lora_rank`` with plain attention layers)."""
    base = _weights("DeepseekV3ForCausalLM", (9, 0))
    named = _weights("DeepseekV3ForCausalLM", (9, 0), "CUTLASS_MLA")
    assert not base.refused and not named.refused
    assert named.stages[0].allocated_bytes - base.stages[0].allocated_bytes == CUTLASS_MLA_WORKSPACE_BYTES
    assert any("CUTLASS MLA workspace" in n for n in named.stages[0].notes)
    for arch in ("MiniCPM3ForCausalLM", "Qwen3ForCausalLM"):
        plain, with_name = _weights(arch, (9, 0)), _weights(arch, (9, 0), "CUTLASS_MLA")
        assert plain.refused == with_name.refused
        if not plain.refused:
            assert plain.stages[0].allocated_bytes == with_name.stages[0].allocated_bytes


@pytest.mark.parametrize(
    ("arch", "prefill"),
    [
        ("DeepseekV3ForCausalLM", 0),
        ("Glm4MoeLiteForCausalLM", PREFILL_WORKSPACE),
        ("KimiLinearForCausalLM", 0),
        ("DeepseekV32ForCausalLM", 0),
    ],
)
def test_mla_on_sm10_holds_the_prefill_backends_workspace(arch: str, prefill: int) -> None:
    """MLA weights on SM 10.x (refused by name before the prefill backend was modelled; a silent
    figure 522 MiB short for GLM-4.7-Flash before that): H100's + CUTLASS MLA's 128 MiB + the
    prefill workspace where TRT-LLM ragged is chosen ((192, 64, 256) head dims). DeepSeek-V3.2's sparse
    layers (16 heads: FLASHINFER_MLA_SPARSE, which reserves nothing while the model is built) keep
    FLASH_ATTN's prefill for its (128, 64, 128) dims (refused by name before; recorded:
    ``test_weights_sparsemla.py``'s B200 rows, ``test_weights_nvfp4smla.py``'s)."""
    b200, h100 = _weights(arch, (10, 0)), _weights(arch, (9, 0))
    assert not b200.refused and not h100.refused, (b200.refused, h100.refused)
    extra = b200.stages[0].allocated_bytes - h100.stages[0].allocated_bytes
    assert extra == CUTLASS_MLA_WORKSPACE_BYTES + prefill


@pytest.mark.parametrize(
    ("arch", "backend"),
    [
        ("DeepseekV32ForCausalLM", "FLASHMLA_SPARSE"),
        ("KimiK3ForConditionalGeneration", None),
        ("DeepseekVLV2ForCausalLM", None),
    ],
)
def test_unmodelled_prefill_choices_refused_on_sm10(arch: str, backend: str | None) -> None:
    """Sparse MLA served by FLASHMLA_SPARSE (its own reservation from the worker's workspace), an
    architecture with its own MLA layer, head dims the config does not write (its
    ``language_config``): what they build on SM 10.x is not modelled, refused by name; a non-MLA
    model is not."""
    refused = _weights(arch, (10, 0), backend).refused
    assert refused and "prefill backend" in refused
    assert "prefill backend" not in (_weights("Qwen3ForCausalLM", (10, 0)).refused or "")


def test_hybrid_pipeline_stages_refused_where_the_module_is_imported() -> None:
    """Kimi-Linear (KDA beside MLA) under PP with CUTLASS_MLA named: which stages build an MLA
    layer is not modelled."""
    refused = _weights("KimiLinearForCausalLM", (9, 0), "CUTLASS_MLA", pp=2).refused
    assert refused and "which stages build an MLA layer" in refused
