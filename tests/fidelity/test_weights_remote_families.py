"""Param2 MoE, Bailing (Ling v1), Bailing-V2 and TeleChat2's weights (``models/param2moe.py``,
``models/bailing_moe.py``, ``models/telechat2.py``: vLLM's ``param2moe.py``, ``bailing_moe.py`` and
``telechat2.py`` on the checkpoints' own config classes) against each release's model class on the
meta device: parameter, buffer and allocated bytes of every pipeline stage. Needs no vLLM.

``recorded-<release>-remote-families.json``: recorded in each release's boot environment with::

    RECORD_WEIGHTS_PP2=1 RECORD_WEIGHTS_OUT=/tmp/r.json $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py \\
        --tiny Param2MoEForCausalLM BailingMoeV2ForCausalLM TeleChat2ForCausalLM BailingMoeForCausalLM \\
        defaults/Param2MoEForCausalLM defaults/BailingMoeV2ForCausalLM defaults/TeleChat2ForCausalLM \\
        defaults/BailingMoeForCausalLM

(the ``defaults/`` configs, every size the config class's own default, on 0.28.0 and 0.33.0 only):
TP 1/2/4/8, expert parallelism at TP 2 and 8, two and three pipeline stages at TP 2, each started with
``--trust-remote-code`` and the checkpoint's ``configuration_*.py`` beside the config
(``data/remote-code/``). vLLM's refusals (Param2 at TP 8: its attention asserts TP divides the 4 KV
heads; Param2 over three stages of the 3-layer config: a stage of dense layers only) are refused too.
On 0.27.1, 0.31.0 and 0.32.0 (transformers 5.10.4 / 5.17.0 / 5.19.0) a file's
``partial_rotary_factor`` is a config attribute the classes read; not on the others.

``recorded-<release>-bailing-v1-bias.json`` and ``recorded-<release>-bailing-v1-shared-bias.json``:
Bailing v1's tiny config under ``use_bias`` (``BailingMoeConfig``'s default) with a dense first layer
and a ``partial_rotary_factor`` of 0.5, without and with shared experts (the same command with
``RECORD_WEIGHTS_OVERLAY='{"BailingMoeForCausalLM": {"use_bias": true, "first_k_dense_replace": 1,
"num_shared_experts": 0, "partial_rotary_factor": 0.5}}'`` (``-bias``; without ``num_shared_experts``:
``-shared-bias``) and ``--tiny BailingMoeForCausalLM``): biased ``query_key_value``, ``dense`` and
dense MLP built on every release; biased shared experts refused by vLLM's ``RowParallelLinear``
(``reduce_results=False``) at every TP, and by dryboot.

``quant-recorded-remotefam-0.33.0.json`` (``RECORD_SET=remotefam RECORD_GPUS=B200,H100
record_quant_weights.py``, ``quant_cases_remotefam.py``): every storage vLLM 0.33.0 makes while building
the tiny configs at TP 1 and 2 on B200 (FlashInfer's shared KV counter where it serves the layers) and
H100 (none)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import quant_cases_remotefam as qr
from quant_harness import case_ids, dryboot_weights, load_recorded, tp_of
from weights_records import DATA as WEIGHTS
from weights_records import assert_stages, overlaid_tiny, recorded_cases, stage_parallel

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, modelled_architectures, rank_weights
from dryboot.vllm.model_executor.models.bailing_moe import PARTIAL_ROTARY_ATTRIBUTE
from dryboot.vllm.model_executor.models.param2moe import FLOAT32_ROUTER

ARCHS = Path(__file__).resolve().parent / "data" / "architectures"
FAMILIES = ("Param2MoEForCausalLM", "BailingMoeV2ForCausalLM", "TeleChat2ForCausalLM", "BailingMoeForCausalLM")
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
FILES = {v: f"recorded-{v}-remote-families.json" for v in RELEASES}
RECORDED = recorded_cases(FILES, lambda row: True)
#: Bailing v1's tiny config under use_bias (record file -> release): built without shared experts,
#: refused with them
BIAS_FILES = {f"recorded-{v}-bailing-v1-{kind}.json": v for v in RELEASES for kind in ("bias", "shared-bias")}
BIAS_RECORDED = recorded_cases(BIAS_FILES, lambda row: True, key_by="file")


def _config(name: str) -> dict[str, Any]:
    """The recorded config ``arch--<A>`` (tiny) or ``arch--defaults--<A>`` (the config class's defaults)."""
    path = name[len("arch--") :].replace("defaults--", "defaults/")
    config: dict[str, Any] = json.loads((ARCHS / f"{path}.json").read_text())
    return config


def test_recorded() -> None:
    """Every release, each family at TP 1 and above, under PP 2, built by vLLM."""
    assert set(FAMILIES) <= modelled_architectures()
    for v in RELEASES:
        rows = {cid: row for (rv, cid), row in RECORDED.items() if rv == v}
        for arch in FAMILIES:
            for flags in ("1", "2", "2 --pipeline-parallel-size 2"):
                row = rows[f"arch--{arch} --tensor-parallel-size {flags} --trust-remote-code"]
                assert row["ok"], (v, arch, flags)
    assert sum(row["ok"] for row in RECORDED.values()) == 27 * len(RELEASES) + 2 * 28


def test_bias_recorded() -> None:
    """Every release builds Bailing v1's biased layers and refuses its biased shared experts."""
    for name in BIAS_FILES:
        rows = [row for (f, _), row in BIAS_RECORDED.items() if f == name]
        assert len(rows) == 8 and {row["ok"] for row in rows} == {"shared" not in name}, name


@pytest.mark.parametrize(("name", "cid"), sorted(BIAS_RECORDED))
def test_bias_matches_vllm(name: str, cid: str) -> None:
    """Bailing v1 under ``use_bias``: every stage's bytes as vLLM builds them, or refused where it refuses."""
    row = BIAS_RECORDED[(name, cid)]
    config = overlaid_tiny("BailingMoeForCausalLM", json.loads((WEIGHTS / name).read_text()))
    version = BIAS_FILES[name]
    if not row["ok"]:
        assert "When not reduce the results, adding bias" in row["error"]
    par = partial(stage_parallel, row["argv"], version=version)
    assert_stages(row, lambda stage: rank_weights(config, par(stage), max_num_batched_tokens=8192))


@pytest.mark.parametrize(("version", "cid"), sorted(RECORDED))
def test_matches_vllm(version: str, cid: str) -> None:
    """Every stage's bytes as each release builds them, or refused where vLLM refuses."""
    row = RECORDED[(version, cid)]
    config = _config(row["config"])
    assert_stages(
        row,
        lambda stage: rank_weights(
            config,
            stage_parallel(row["argv"], stage, version),
            max_num_batched_tokens=row.get("max_num_batched_tokens", 8192),
        ),
    )


def test_release_tables_recorded() -> None:
    """The per-release rules are among the recorded releases (each release's records check them)."""
    assert set(PARTIAL_ROTARY_ATTRIBUTE) <= set(RELEASES) and set(FLOAT32_ROUTER) <= set(RELEASES)


def _tiny(arch: str, **change: Any) -> dict[str, Any]:
    return {**_config(f"arch--{arch}"), **change}


@pytest.mark.parametrize(
    ("config", "words"),
    [
        (_tiny("BailingMoeV2ForCausalLM", use_bias=True), "use_bias"),
        (_tiny("BailingMoeV2ForCausalLM", router_dtype="bf16"), "bfloat16 router"),
        (_tiny("BailingMoeV2ForCausalLM", moe_shared_expert_intermediate_size=None), "null"),
        (_tiny("BailingMoeV2ForCausalLM", quantization_config={"quant_method": "fp8"}), "quantized"),
        (_tiny("Param2MoEForCausalLM", num_experts=None), "without routed experts"),
        (_tiny("Param2MoEForCausalLM", quantization_config={"quant_method": "fp8"}), "quantized"),
        (_tiny("TeleChat2ForCausalLM", quantization_config={"quant_method": "fp8"}), "quantized"),
        (_tiny("TeleChat2ForCausalLM", num_key_value_heads=None), "num_key_value_heads"),
        (_tiny("TeleChat2ForCausalLM", num_hidden_layers=3), "other name"),
        ({k: v for k, v in _tiny("TeleChat2ForCausalLM").items() if k != "tie_word_embeddings"}, "llama.py"),
        (_tiny("BailingMoeForCausalLM", num_key_value_heads=0), "divides by it"),
        ({k: v for k, v in _tiny("BailingMoeForCausalLM").items() if k != "num_key_value_heads"}, "divides by it"),
        ({k: v for k, v in _tiny("BailingMoeForCausalLM").items() if k != "use_bias"}, "When not reduce the results"),
        (_tiny("BailingMoeForCausalLM", router_dtype="bf16"), "bfloat16 router"),
        (_tiny("BailingMoeForCausalLM", quantization_config={"quant_method": "fp8"}), "quantized"),
    ],
)
def test_refused_by_name(config: dict[str, Any], words: str) -> None:
    with pytest.raises(InputError, match=words):
        rank_weights(config, Parallel(vllm_version="0.28.0"), max_num_batched_tokens=8192)


def test_param2_dense_stage_names_vllms_error() -> None:
    with pytest.raises(InputError, match="No Param2MoEMoEBlock found"):
        rank_weights(_tiny("Param2MoEForCausalLM"), Parallel(tp=2, pp=3, vllm_version="0.28.0"))


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("arch", FAMILIES)
def test_plan_with_a_gpu_gives_a_budget(arch: str, tmp_path: Path) -> None:
    """``dryboot plan --gpu`` sizes the weights and so the KV budget: exit 0, not 3 (undetermined)."""
    shutil.copy(ARCHS / f"{arch}.json", tmp_path / "config.json")
    for code in (REPO / "tests/fidelity/data/remote-code" / qr.REMOTE_CODE[arch]).glob("*.py"):
        shutil.copy(code, tmp_path / code.name)
    cmd = [sys.executable, "-m", "dryboot", "plan", "--model", str(tmp_path), "--trust-remote-code", "--gpu", "H200"]
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", "COLUMNS": "200"}
    r = subprocess.run([*cmd, "-tp", "2"], capture_output=True, text=True, env=env, check=False, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Weights per rank (vLLM's line, predicted)" in r.stdout and "verdict: fits (exit 0)" in r.stdout


QUANT = load_recorded("quant-recorded-remotefam-")
QUANT_CASES = case_ids(QUANT)
#: FlashInfer's shared multi-CTA KV counter on B200 at 8,192 tokens and TP 1: Bailing's, Bailing-V2's and
#: TeleChat2's 8 heads of 64 (x 4 bytes; a rank's share of them at TP 2); Param2's head size 96 is not
#: FlashInfer's (FlashAttention serves it: no counter)
COUNTER = {
    "BailingMoeForCausalLM": 262_144,
    "BailingMoeV2ForCausalLM": 262_144,
    "TeleChat2ForCausalLM": 262_144,
    "Param2MoEForCausalLM": 0,
}


def test_counter_records() -> None:
    assert set(QUANT) == {"0.33.0"}
    rows = QUANT["0.33.0"].values()
    assert {(row["config"], row["gpu"]) for row in rows} == {(a, g) for a in FAMILIES for g in ("B200", "H100")}
    assert len(rows) == 16 and all(row["ok"] for row in rows)


@pytest.mark.parametrize(("version", "cid"), QUANT_CASES)
def test_flashinfer_counter_matches_vllm_as_built(version: str, cid: str) -> None:
    """Every storage vLLM 0.33.0 makes while building the model, FlashInfer's counter on B200 included."""
    row = QUANT[version][cid]
    report = dryboot_weights(qr.CONFIGS, row, version)
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["built_allocated_bytes"]
    counter = report.stages[0].by_kind.get("attention counter", 0)
    assert counter == (0 if row["gpu"] == "H100" else COUNTER[row["config"]] // tp_of(row))
