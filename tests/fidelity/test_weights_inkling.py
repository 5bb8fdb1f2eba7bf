"""Inkling's weights (``InklingForCausalLM``, vLLM 0.33.0: ``model_executor/models/inkling.py``)
against vLLM's own figures: parameter, buffer and allocated bytes of each pipeline stage's rank 0.
Needs no vLLM.

Recorded by ``record_weights.py --tiny InklingForCausalLM`` in 0.33.0's boot environment
(``RECORD_WEIGHTS_OUT``): the tiny config as it is into ``recorded-0.33.0-inkling.json`` (its TP 1
case also in ``recorded-0.33.0-sweep.json``; vLLM refuses TP 4 and 8, above a layer's KV heads,
and dryboot with its words), and with ``RECORD_WEIGHTS_OVERLAY`` (the options the tiny config
leaves off: the q bias, ``embed_norm``, the global scales, the gate bias, the HF
``moe_intermediate_size`` naming, a padded vocabulary, two dense layers, seven routed experts,
padded to eight under expert parallelism at TP 2) into ``recorded-0.33.0-inkling-overlay.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from weights_records import int_flag, overlaid_tiny

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
ARCH = "InklingForCausalLM"
TINY = HERE / "data" / "architectures" / f"{ARCH}.json"
FILES = ("recorded-0.33.0-inkling.json", "recorded-0.33.0-inkling-overlay.json")
DOCS = {name: json.loads((DATA / name).read_text()) for name in FILES}
RECORDED = {(name, cid): row for name, doc in DOCS.items() for cid, row in doc["cases"].items()}


def _config(name: str) -> dict[str, Any]:
    return overlaid_tiny(ARCH, DOCS[name])


def test_recorded() -> None:
    assert all(doc["vllm"] == "0.33.0" for doc in DOCS.values())
    served = {name: sum(1 for (n, _), row in RECORDED.items() if n == name and row["ok"]) for name in FILES}
    assert served == {FILES[0]: 4, FILES[1]: 4}
    sweep = json.loads((DATA / "recorded-0.33.0-sweep.json").read_text())["cases"]
    cid = f"arch--{ARCH} --tensor-parallel-size 1"
    assert sweep[cid] == DOCS[FILES[0]]["cases"][cid]


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    """Every stage's bytes as vLLM 0.33.0 builds them, or refused where vLLM refuses."""
    row: dict[str, Any] = RECORDED[(name, cid)]
    config, argv = _config(name), row["argv"]
    tp, pp = int_flag(argv, "--tensor-parallel-size"), int_flag(argv, "--pipeline-parallel-size")
    ep = "--enable-expert-parallel" in argv
    if not row["ok"]:
        assert "sconv SWA cache supports tp_size <= num_kv_heads" in row["error"]
        with pytest.raises(InputError, match=row["error"].split(": ", 1)[1].replace("(", r"\(").replace(")", r"\)")):
            rank_weights(config, Parallel(tp=tp, pp=pp, expert_parallel=ep, vllm_version="0.33.0"))
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(pp):
        w = rank_weights(config, Parallel(tp=tp, pp=pp, pp_rank=stage, expert_parallel=ep, vllm_version="0.33.0"))
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


@pytest.mark.parametrize(
    ("change", "par", "words"),
    [
        ({}, Parallel(vllm_version="0.32.0"), "0.33.0 only"),
        ({"quantization_config": {"quant_method": "fp8"}}, Parallel(vllm_version="0.33.0"), "quantized"),
        ({"shared_expert_sink": False}, Parallel(vllm_version="0.33.0"), "sink shared experts"),
        # vLLM refuses it (RowParallelLinear without the all-reduce, with a bias): recorded, every case
        ({"o_bias": True}, Parallel(vllm_version="0.33.0"), "When not reduce the results, adding bias"),
    ],
)
def test_refused_by_name(change: dict[str, Any], par: Parallel, words: str) -> None:
    config = {**json.loads(TINY.read_text()), **change}
    with pytest.raises(InputError, match=words):
        rank_weights(config, par)
