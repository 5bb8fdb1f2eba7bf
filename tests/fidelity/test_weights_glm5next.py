"""GLM-5.3-Flash's weights (``Glm5NextForCausalLM``, vLLM 0.32.0 / 0.33.0:
``model_executor/models/glm5next.py``) against vLLM's own figures: parameter, buffer and allocated
bytes of each pipeline stage's rank 0. Needs no vLLM.

Recorded in each release's boot environment with ``RECORD_WEIGHTS_WORKSPACE=1`` (the worker's
workspace manager first: the sparse MLA backend reserves its workspace at construction):
``recorded-<release>-glm5next.json`` by ``record_weights.py --tiny Glm5NextForCausalLM
defaults/Glm5NextForCausalLM`` (the tiny config, and the config class's defaults: the 45-layer model,
64 KDA heads, 288 experts; its TP 1 case also in ``recorded-<release>-sweep.json``), and
``recorded-<release>-glm5next-configs.json`` over the KV tests' stand-ins (``data/glm5next/configs/``,
each copied as ``glm53-<name>/config.json`` into the directory named by ``RECORD_WEIGHTS_CONFIGS``):
eight layers of sixteen KDA heads, ``index_kpool`` 32, ``layer_types`` naming the indexed layers, KDA
heads of 64. No published config.json of GLM-5.3-Flash was found. A case vLLM builds matches; a case
vLLM refuses is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from weights_records import assert_in_sweep, assert_stages, stage_parallel

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
ARCH = "Glm5NextForCausalLM"
TINY = HERE / "data" / "architectures" / f"{ARCH}.json"
DEFAULTS = HERE / "data" / "architectures" / "defaults" / f"{ARCH}.json"
VARIANTS = HERE / "data" / "glm5next" / "configs"
RELEASES = ("0.32.0", "0.33.0")
FILES = tuple(f"recorded-{v}-glm5next{part}.json" for v in RELEASES for part in ("", "-configs"))
DOCS = {name: json.loads((DATA / name).read_text()) for name in FILES}
RECORDED = {(name, cid): row for name, doc in DOCS.items() for cid, row in doc["cases"].items()}


def _config(row: dict[str, Any]) -> dict[str, Any]:
    name = row["config"]
    if name.startswith("arch--defaults--"):
        path = DEFAULTS
    elif name.startswith("arch--"):
        path = TINY
    else:
        path = VARIANTS / f"{name.removeprefix('glm53-')}.json"
    config: dict[str, Any] = json.loads(path.read_text())
    return config


def _rank(row: dict[str, Any], stage: int, version: str) -> Any:
    argv = row["argv"]
    par = stage_parallel(argv, stage, version, capability=(9, 0))
    return rank_weights(_config(row), par, max_num_batched_tokens=row.get("max_num_batched_tokens", 8192))


def test_recorded() -> None:
    """Every release's records: the tiny config at TP 1 / 2 / 4 / 8, EP at TP 2 / 8 and TP 2 x PP 3 (7
    cases), the defaults without EP (they name no ``n_routed_experts``: 5), the five stand-ins as the tiny
    config (35: TP 8 refused by vLLM for their four heads, 8 cases); each TP 1 tiny case also in the sweep."""
    assert [doc["vllm"] for doc in DOCS.values()] == [v for v in RELEASES for _ in range(2)]
    for v in RELEASES:
        assert len(DOCS[f"recorded-{v}-glm5next.json"]["cases"]) == 12, v
        assert len(DOCS[f"recorded-{v}-glm5next-configs.json"]["cases"]) == 35, v
        refused = {cid for (name, cid), row in RECORDED.items() if v in name and not row["ok"]}
        assert len(refused) == 8 and all("--tensor-parallel-size 8" in cid for cid in refused), v
        assert_in_sweep(v, ARCH, DOCS[f"recorded-{v}-glm5next.json"]["cases"])


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    row: dict[str, Any] = RECORDED[(name, cid)]
    version = DOCS[name]["vllm"]
    assert_stages(row, lambda stage: _rank(row, stage, version))


def test_topk_buffer_on_the_stages_with_an_mla_layer() -> None:
    """TP 2 x PP 3 of the tiny config (layers 0-1, 2, 3): the top-k indices buffer (8,192 x 384 int32,
    12,582,912 bytes) is held by the indexed layer's stage alone; the KDA stages free it."""
    cases = DOCS["recorded-0.33.0-glm5next.json"]["cases"]
    row = cases[f"arch--{ARCH} --tensor-parallel-size 2 --pipeline-parallel-size 3"]
    stages = row["stages"]
    assert stages[2][2] - stages[2][0] > 8192 * 384 * 4 > stages[0][2] - stages[0][0]


@pytest.mark.parametrize(
    ("version", "words"),
    [
        ("0.31.0", "0.31.0: Glm5NextForCausalLM's weights on this release are not modelled .*every layer is built MLA"),
        ("0.30.0", "every layer is built MLA"),
        ("0.28.0", "registry has no Glm5NextForCausalLM"),
    ],
)
def test_other_releases_refused_by_name(version: str, words: str) -> None:
    par = Parallel(capability=(9, 0), vllm_version=version)
    with pytest.raises(InputError, match=words):
        rank_weights(json.loads(TINY.read_text()), par, max_num_batched_tokens=8192)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"mhc": None}, "config.mhc"),
        ({"quantization_config": {"quant_method": "fp8"}}, "quantized"),
        ({"tie_word_embeddings": True}, "tied GLM-5.3-Flash head"),
    ],
)
def test_unmodelled_refused_by_name(change: dict[str, Any], words: str) -> None:
    config = {**json.loads(TINY.read_text()), **change}
    if change.get("mhc", 0) is None:
        config.pop("mhc")
    with pytest.raises(InputError, match=words):
        rank_weights(config, Parallel(capability=(9, 0), vllm_version="0.33.0"), max_num_batched_tokens=8192)
