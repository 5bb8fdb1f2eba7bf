"""OLMo-Hybrid's weights (``models/olmo_hybrid.py``: ``OlmoHybridForCausalLM``) against vLLM's own
figures: parameter, buffer and allocated bytes of each pipeline stage. Needs no vLLM.

Recorded in each release's boot environment with::

    RECORD_WEIGHTS_OUT=/tmp/a.json $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py --tiny \\
        OlmoHybridForCausalLM defaults/OlmoHybridForCausalLM

(TP 1/2/4/8, three pipeline stages at TP 2): the tiny config's cases on 0.28.0 in ``recorded.json``
(the match table), the defaults config's in ``recorded-0.28.0-olmo-hybrid.json``; both configs on
0.33.0 in ``recorded-0.33.0-olmo-hybrid.json``; with ``RECORD_WEIGHTS_OVERLAY`` (its ``overlay``:
``rope_parameters`` with a ``rope_theta``, a tied head, a float32 ``torch_dtype``, served as
bfloat16 with ``o_norm`` in float32) into ``recorded-<release>-olmo-hybrid-overlay.json``; TP 1
on 0.29.0 (``RECORD_WEIGHTS_FLAGS="--tensor-parallel-size 1"``) into
``recorded-0.29.0-olmo-hybrid.json`` (0.27.1's in ``recorded-0.27.1.json``, 0.30.0-0.33.0's in the
sweeps). 0.27.1-0.31.0 read the config with vLLM's own ``OlmoHybridConfig`` (no rotary table by
default), 0.32.0+ with transformers' (a ``rope_theta`` of 10000 by default: a table)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from weights_records import int_flag

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

HERE = Path(__file__).resolve().parent
ARCH = "OlmoHybridForCausalLM"
ARCHS = HERE / "data" / "architectures"
FILES = (
    "recorded-0.28.0-olmo-hybrid.json",
    "recorded-0.28.0-olmo-hybrid-overlay.json",
    "recorded-0.29.0-olmo-hybrid.json",
    "recorded-0.33.0-olmo-hybrid.json",
    "recorded-0.33.0-olmo-hybrid-overlay.json",
)
DOCS = {name: json.loads((HERE / "data" / "weights" / name).read_text()) for name in FILES}
RECORDED = {(name, cid): row for name, doc in DOCS.items() for cid, row in doc["cases"].items()}


def _config(name: str, row: dict[str, Any]) -> dict[str, Any]:
    if row["config"] == f"arch--defaults--{ARCH}":
        return copy.deepcopy(json.loads((ARCHS / "defaults" / f"{ARCH}.json").read_text()))
    config: dict[str, Any] = copy.deepcopy(json.loads((ARCHS / f"{ARCH}.json").read_text()))
    config.update(DOCS[name].get("overlay", {}).get(ARCH, {}))
    return config


def test_recorded() -> None:
    assert {doc["vllm"] for doc in DOCS.values()} == {"0.28.0", "0.29.0", "0.33.0"}
    assert len(RECORDED) == 26
    assert sum(row["ok"] for row in RECORDED.values()) == 15


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    """Every stage's bytes as the release builds them; what it refuses refused."""
    row: dict[str, Any] = RECORDED[(name, cid)]
    config = _config(name, row)
    argv = row["argv"]
    tp, pp = int_flag(argv, "--tensor-parallel-size"), int_flag(argv, "--pipeline-parallel-size")
    par = [Parallel(tp=tp, pp=pp, pp_rank=r, vllm_version=DOCS[name]["vllm"]) for r in range(pp)]
    if not row["ok"]:
        with pytest.raises(InputError, match="is not divisible by"):
            rank_weights(config, par[0])
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for p in par:
        w = rank_weights(config, p)
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


def test_o_norm_in_the_configs_dtype() -> None:
    """The overlay's float32 checkpoint is served as bfloat16; each GDN layer's ``o_norm`` stays
    float32 (``RMSNormGated(dtype=config.torch_dtype)``): 128 x 2 bytes more per layer."""
    tiny = json.loads((ARCHS / f"{ARCH}.json").read_text())
    bf16 = rank_weights(tiny, Parallel(tp=1, vllm_version="0.28.0"))
    fp32 = rank_weights({**tiny, "torch_dtype": "float32"}, Parallel(tp=1, vllm_version="0.28.0"))
    assert fp32.param_bytes - bf16.param_bytes == 3 * 128 * 2


def test_rope_outside_rope_parameters_refused() -> None:
    tiny = json.loads((ARCHS / f"{ARCH}.json").read_text())
    for change in ({"rope_theta": 500000}, {"rope_parameters": {"rope_type": "default"}}):
        with pytest.raises(InputError, match="not modelled"):
            rank_weights({**tiny, **change}, Parallel(tp=1, vllm_version="0.28.0"))
