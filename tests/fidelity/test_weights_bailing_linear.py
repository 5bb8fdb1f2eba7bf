"""Bailing-V2.5's weights (``BailingMoeV2_5ForCausalLM``, vLLM 0.28.0-0.30.0 and 0.33.0:
``model_executor/models/bailing_moe_linear.py``) against vLLM's own figures: parameter, buffer and
allocated bytes of each pipeline stage's rank 0. Needs no vLLM.

Recorded in each release's boot environment by ``record_weights.py``:
``recorded-<release>-bailing-linear.json`` by ``--tiny BailingMoeV2_5ForCausalLM
defaults/BailingMoeV2_5ForCausalLM`` (the tiny stand-in and ``BailingHybridConfig``'s defaults: no
published ``config.json`` was found), ``recorded-<release>-bailing-linear-configs.json`` over two
stand-in variants of the weights' own (``data/bailing-linear/weights-configs/*.json``, each copied
as ``<name>/config.json`` into the directory named by ``RECORD_WEIGHTS_CONFIGS``):
``bailing-qlora-bias`` (q-LoRA MLA, biases, a bfloat16 router, two shared experts of their own
width, no q/k norms, every layer MoE, ``group_norm_size`` 8) and ``bailing-softmax-noshared``
(softmax routing without the expert bias, no shared expert, two dense layers). Each with TP 1 / 2 /
4 / 8, EP at TP 2 / 8 and TP 2 x PP 3. A case vLLM builds matches; a case vLLM refuses
(``group_norm_size`` below TP) is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from weights_records import assert_stages, stage_parallel

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights
from dryboot.vllm.model_executor.models.llama_eagle3 import drafter_weights

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
ARCH = "BailingMoeV2_5ForCausalLM"
TINY = HERE / "data" / "architectures" / f"{ARCH}.json"
DEFAULTS = HERE / "data" / "architectures" / "defaults" / f"{ARCH}.json"
VARIANTS = HERE / "data" / "bailing-linear" / "weights-configs"
RELEASES = ("0.28.0", "0.29.0", "0.30.0", "0.33.0")
FILES = tuple(f"recorded-{v}-bailing-linear{part}.json" for v in RELEASES for part in ("", "-configs"))
DOCS = {name: json.loads((DATA / name).read_text()) for name in FILES}
RECORDED = {(name, cid): row for name, doc in DOCS.items() for cid, row in doc["cases"].items()}


def _config(row: dict[str, Any]) -> dict[str, Any]:
    name = row["config"]
    path = (
        TINY
        if name == f"arch--{ARCH}"
        else DEFAULTS
        if name.startswith("arch--defaults--")
        else VARIANTS / f"{name}.json"
    )
    config: dict[str, Any] = json.loads(path.read_text())
    return config


def _rank(row: dict[str, Any], stage: int, version: str) -> Any:
    argv = row["argv"]
    par = stage_parallel(argv, stage, version)
    return rank_weights(_config(row), par, max_num_batched_tokens=row.get("max_num_batched_tokens", 8192))


def test_recorded() -> None:
    """Every file is its release's; the tiny config's TP 1 / 2 / 4, EP 2 and PP cases are served on each."""
    assert [doc["vllm"] for doc in DOCS.values()] == [v for v in RELEASES for _ in range(2)]
    for v in RELEASES:
        rows = DOCS[f"recorded-{v}-bailing-linear.json"]["cases"]
        served = sorted(cid for cid, r in rows.items() if r["ok"] and r["config"] == f"arch--{ARCH}")
        assert len(served) == 5, (v, served)


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    row: dict[str, Any] = RECORDED[(name, cid)]
    version = DOCS[name]["vllm"]
    assert_stages(row, lambda stage: _rank(row, stage, version))


@pytest.mark.parametrize("version", ["0.27.1", "0.31.0", "0.32.0"])
def test_other_releases_refused(version: str) -> None:
    """Their transformers has no ``BailingHybridConfig``: vLLM refuses the config."""
    with pytest.raises(InputError):
        rank_weights(json.loads(TINY.read_text()), Parallel(vllm_version=version), max_num_batched_tokens=8192)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "rope type 'yarn'"),
        ({"score_function": "softmax"}, "asserts"),
        ({"use_bias": None}, "use_bias"),
        ({"quantization_config": {"quant_method": "fp8"}}, "quantized"),
    ],
)
def test_refused_by_name(change: dict[str, Any], words: str) -> None:
    config = {k: v for k, v in {**json.loads(TINY.read_text()), **change}.items() if v is not None}
    with pytest.raises(InputError, match=words):
        rank_weights(config, Parallel(vllm_version="0.33.0"), max_num_batched_tokens=8192)


#: the MTP drafter's records (``drafters/bailing-mtp-<release>.json``: ``record_drafter_weights.py``
#: with its ``CASES`` set to the targets of :func:`_mtp_target`, each a directory holding the config,
#: method ``mtp``, ``RECORD_TPS=1,2,4``; the targets' paths written as their names)
MTP_DOCS = {v: json.loads((DATA / "drafters" / f"bailing-mtp-{v}.json").read_text()) for v in RELEASES}
MTP_ROWS = {(v, cid): row for v, doc in MTP_DOCS.items() for cid, row in doc["cases"].items()}


def _mtp_target(name: str) -> dict[str, Any]:
    """The target of a recorded MTP case: the tiny config, it with two MTP layers, or a variant."""
    tiny: dict[str, Any] = json.loads(TINY.read_text())
    if name == "tiny":
        return tiny
    if name == "tiny-mtp2":
        return {**tiny, "num_nextn_predict_layers": 2}
    if name == "all-linear":  # five lightning-attention layers: the drafter's MLA rotary table is its own
        return {**tiny, "layer_group_size": 8}
    config: dict[str, Any] = json.loads((VARIANTS / f"{name}.json").read_text())
    return config


@pytest.mark.parametrize(("version", "cid"), sorted(MTP_ROWS))
def test_mtp_drafter_matches_vllm(version: str, cid: str) -> None:
    """The drafter's own allocation beside the target (the embedding and LM head shared)."""
    row = MTP_ROWS[(version, cid)]
    target = _mtp_target(row["target"])
    par = Parallel(tp=row["tp"], vllm_version=version)
    if not row["ok"]:
        with pytest.raises(InputError):
            drafter_weights(target, target, "mtp", par, max_model_len=4096, vllm_version=version)
        return
    got = drafter_weights(target, target, "mtp", par, max_model_len=4096, vllm_version=version)
    assert got.low.allocated_bytes == row["shared_allocated_bytes"]
