"""GPTQ's empty ``modules_in_block_to_quantize`` against what vLLM holds after loading (issue 33).

The set (``quant_cases_gptqempty.py``): composed tiny Qwen3 / Llama configs with a GPTQ 4-bit
quantization config whose ``modules_in_block_to_quantize`` is absent or ``[]``, each with a
header-only checkpoint of the real shapes: GPTQ-packed, or float tensors only
(``...+float-checkpoint``). ``data/weights/quant-recorded-gptqempty-<version>.json`` holds vLLM's
own figures on 0.27.1-0.33.0 (``RECORD_SET=gptqempty record_quant_weights.py``, which also runs
vLLM's loader over the checkpoint's tensors). Every case is
checked in the default run (no vLLM needed): byte-exact where vLLM loads the model, refused by name
where it fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import quant_cases_gptqempty as qe
from quant_harness import assert_weights, case_ids, dryboot_weights, load_recorded

RECORDED = load_recorded("quant-recorded-gptqempty-")
CASES = case_ids(RECORDED)
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: what dryboot names where vLLM 0.32.0+ quantizes every linear layer of a checkpoint holding no
#: quantized tensor and then fails loading its float weights
WHY_ALL_QUANTIZED = "holds no quantized tensor"


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every config's checkpoint as the recorder gave it to vLLM (header-only safetensors)."""
    tmp = tmp_path_factory.mktemp("gptqempty")
    for cdir in sorted(p for p in qe.CONFIGS.iterdir() if p.is_dir()):
        qe.checkpoint_dir(cdir, tmp)
    return tmp


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(checkpoints: Path, version: str, cid: str) -> None:
    """Byte-exact where vLLM loads the model; refused by name where it fails."""
    row = RECORDED[version][cid]
    why = None if row["ok"] else WHY_ALL_QUANTIZED
    assert_weights(dryboot_weights(checkpoints, row, version), row, why)


def test_corpus() -> None:
    """Five configs, RTX 3090 / 4090 at TP 1 / 2, on each of seven releases (140 cases). An empty list reads
    as an absent one (the checkpoint's non-float tensors: every linear layer quantized, Marlin on
    8 layers). A checkpoint with no quantized tensor: up to 0.31.0 vLLM leaves every linear layer
    unquantized and loads it; 0.32.0 and 0.33.0 quantize every one (8 Marlin layers built) and its loader
    then fails on the float weights."""
    assert len(CASES) == 140
    for v in RELEASES:
        for name in sorted(p.name for p in qe.CONFIGS.iterdir() if p.is_dir()):
            for gpu in ("RTX 3090", "RTX 4090"):
                for tp in (1, 2):
                    row = RECORDED[v][f"{name} {gpu} --tensor-parallel-size {tp}"]
                    if not name.endswith(qe.FLOAT_CHECKPOINT):
                        assert row["ok"] and row["kernels"] == {"MarlinLinearKernel": 8}, (v, name, row)
                    elif v in ("0.32.0", "0.33.0"):
                        assert not row["ok"] and "AttributeError" in row["error"], (v, name, row)
                        assert row["built_kernels"] == {"MarlinLinearKernel": 8}, (v, name, row)
                    else:
                        assert row["ok"] and row["kernels"] == {}, (v, name, row)


def test_empty_list_reads_as_absent() -> None:
    """vLLM's figure for ``[]`` is the absent key's, on every release and GPU (both read the
    checkpoint's dtypes), float checkpoint or not."""
    for v in RELEASES:
        for cid, row in RECORDED[v].items():
            if "-empty-list" in cid and "Qwen3" in cid:
                twin = RECORDED[v][cid.replace("-empty-list", "", 1)]
                assert (row["ok"], row.get("allocated_bytes")) == (twin["ok"], twin.get("allocated_bytes")), cid


@pytest.mark.parametrize("version", RELEASES)
def test_the_note_says_which_layers_vllm_quantizes(checkpoints: Path, version: str) -> None:
    """The report's note agrees with vLLM's built kernels: a checkpoint holding no quantized tensor
    quantizes no layer where vLLM loads it (no kernel built, 0.27.1-0.31.0) and every one where it
    fails; a GPTQ-packed one names the layers read from its dtypes."""
    for cid, row in RECORDED[version].items():
        if not cid.endswith("--tensor-parallel-size 1") or "RTX 3090" not in cid:
            continue
        notes = " ".join(dryboot_weights(checkpoints, row, version).notes)
        if qe.FLOAT_CHECKPOINT not in cid:
            assert "those holding a non-float tensor" in notes, (cid, notes)
        elif row["ok"]:
            assert row["kernels"] == {} and f"vLLM {version} quantizes no layer" in notes, (cid, notes)
        else:
            assert row["built_kernels"] and "as every linear layer quantized" in notes, (cid, notes)
        assert "every decoder-block linear layer" not in notes, (cid, notes)
