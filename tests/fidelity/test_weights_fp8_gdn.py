"""dryboot's plain fp8 (``quant_method: fp8``, vLLM's ``Fp8Config``, ``[128, 128]`` blocks) weights of
the Gated DeltaNet hybrids on a named GPU against what vLLM holds after
``process_weights_after_loading``.

vLLM's figures: ``data/weights/quant-recorded-fp8gdn-<version>.json``, recorded by
``RECORD_SET=fp8gdn record_quant_weights.py`` (the model built by vLLM's loader on the meta device,
the post-load step run through the repack kernels' fake shapes, every storage still held counted in
512-byte blocks; DeepGEMM present on SM 9.0 as the CUDA wheel vendors it) for the configs of
``quant_cases_fp8gdn.py``: Qwen3-Next-80B-A3B-Instruct-FP8 (its ``modules_to_not_convert`` keeps
``in_proj_ba``, ``conv1d``, the routers and gates in bfloat16), Qwen3.5-27B and Qwen3.6-35B-A3B in
Qwen's fp8 block export (``in_proj_a`` / ``in_proj_b``, ``conv1d`` and the vision tower
unquantized), on RTX 3090 (SM 8.6: Marlin FP8 experts), RTX 4090 (SM 8.9) and H100 (SM 9.0:
DeepGEMM) at TP 1 and 2, and on RTX 5090 / GB10 (SM 12.0 / 12.1) on 0.28.0 and 0.30.0.
Byte-exact where dryboot answers; refused by name elsewhere.
"""

from __future__ import annotations

from typing import Any

import pytest
import quant_cases_fp8gdn as gdn
from quant_harness import assert_weights, case_ids, dryboot_weights, load_recorded, tp_of

from dryboot.vllm.model_executor.model_loader.loader import model_weights
from dryboot.vllm.model_executor.model_loader.weights import fp8_ignored_names

RECORDED = load_recorded("quant-recorded-fp8gdn-")
CASES = case_ids(RECORDED)
QWEN3_NEXT = "Qwen--Qwen3-Next-80B-A3B-Instruct-FP8"
QWEN3_5 = "Qwen--Qwen3.5-27B+FP8-block"
QWEN3_6_MOE = "Qwen--Qwen3.6-35B-A3B+FP8-block"
#: (release, config) pairs whose layout after loading differs from dryboot's and is refused by name
#: (the substring the refusal carries)
REFUSED: dict[tuple[str, str], str] = {}


def _refusal(row: dict[str, Any], version: str) -> str | None:
    """What dryboot must name where it does not give vLLM's figure (``None``: byte-exact)."""
    return REFUSED.get((version, row["config"]))


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Byte-exact where vLLM's layout is modelled; the named refusal elsewhere."""
    row = RECORDED[version][cid]
    report = dryboot_weights(gdn.CONFIGS, row, version)
    why = _refusal(row, version)
    assert_weights(report, row, why)


def test_corpus_size() -> None:
    """Every config on every GPU and TP of the set is recorded and answered byte-exact on each
    release recorded (SM 12.x on 0.28.0 and 0.30.0) but the (release, config) pairs of
    :data:`REFUSED`."""
    assert set(RECORDED) == {"0.28.0", "0.30.0", "0.33.0"}
    # 3 configs x (3 GPUs x 3 releases + 2 SM 12.x GPUs x 2 releases) x 2 TP sizes
    assert sum(len(cases) for cases in RECORDED.values()) == 3 * (3 * 3 + 2 * 2) * 2
    for version, cases in RECORDED.items():
        exact = {
            (row["config"], row["gpu"], tp_of(row))
            for row in cases.values()
            if row["ok"] and _refusal(row, version) is None and not dryboot_weights(gdn.CONFIGS, row, version).refused
        }
        configs = {c for c in (QWEN3_NEXT, QWEN3_5, QWEN3_6_MOE) if (version, c) not in REFUSED}
        gpus = [g for g in gdn.GPUS if g not in gdn.BLACKWELL_GPUS or version in gdn.BLACKWELL_RELEASES]
        want = {(c, g, t) for c in configs for g, _, _ in gpus for t in gdn.TPS}
        assert want <= exact, (version, sorted(want - exact))


def test_gdn_projections_quantized_as_the_checkpoint_lists() -> None:
    """vLLM's own classes: Qwen3-Next's ``in_proj_ba`` is left unquantized by the checkpoint's
    ``modules_to_not_convert`` (``Fp8LinearMethod`` on 36 x 2 GDN projections, 12 x 2 attention
    layers, 48 x 2 shared-expert layers = 192, not 228), its experts on Marlin FP8 below SM 8.9."""
    row = RECORDED["0.28.0"][f"{QWEN3_NEXT} RTX 3090 --tensor-parallel-size 1"]
    assert row["kernels"]["Fp8LinearMethod"] == 192
    assert row["kernels"]["Fp8MoEMethod"] == 48
    assert row["linear_kernels"]["FusedMoEKernel/MarlinExperts"] == 48
    # Qwen3.5-27B: in_proj_qkvz and out_proj of 48 GDN layers, 16 attention layers' two, 64 MLPs' two
    row = RECORDED["0.28.0"][f"{QWEN3_5} RTX 4090 --tensor-parallel-size 1"]
    assert row["kernels"]["Fp8LinearMethod"] == 48 * 2 + 16 * 2 + 64 * 2


@pytest.mark.parametrize(
    ("capability", "version", "name"),
    [
        ((10, 0), "0.28.0", QWEN3_NEXT),
        ((12, 0), "0.33.0", QWEN3_5),
        ((10, 0), "0.30.0", QWEN3_6_MOE),
        ((9, 0), "0.29.0", QWEN3_NEXT),
        ((8, 9), "0.27.1", QWEN3_6_MOE),
    ],
)
def test_unrecorded_gpus_and_releases_refused(capability: tuple[int, int], version: str, name: str) -> None:
    """A GPU or release whose Gated DeltaNet fp8 layout after loading is not recorded is refused by
    name, not answered with another GPU's layout; without a GPU the layout is refused as before."""
    report = model_weights(gdn.CONFIGS / name, tp=1, compute_capability=capability, sm_count=128, vllm_version=version)
    assert report.refused and "fp8 weights after loading" in report.refused
    assert model_weights(gdn.CONFIGS / name, tp=1).refused


def test_wrapper_names_mapped_as_vllm_maps_them() -> None:
    """A Qwen3.5 / 3.6 wrapper's ``modules_to_not_convert`` (checkpoint names) are its layers' names
    after vLLM's ``hf_to_vllm_mapper``: the text model's ``model.X``, the tower's ``visual.X``;
    Qwen3-Next's are kept as written."""
    names = ("lm_head", "model.language_model.layers.0.linear_attn.in_proj_a", "model.visual.blocks.0.attn.qkv")
    assert fp8_ignored_names(names, "qwen3_5") == (
        "lm_head",
        "model.layers.0.linear_attn.in_proj_a",
        "visual.blocks.0.attn.qkv",
    )
    assert fp8_ignored_names(names, "qwen3_next") == names
