"""Step5's weights (``models/step5.py``: ``Step5ForCausalLM``, vLLM 0.33.0) against vLLM's own
figures for the tiny config: parameter, buffer and allocated bytes of each pipeline stage. Needs
no vLLM.

Recorded by ``record_weights.py --tiny Step5ForCausalLM`` in 0.33.0's boot environment
(``RECORD_WEIGHTS_OUT``): the tiny config as it is (DSA layers: the fused QKV + indexer
projection, ``sparse_indexer_w``, ``ssmax_s``, the indexer's norms and rotary table) into
``recorded-0.33.0-step5.json`` (its TP 1 case also in ``recorded-0.33.0-sweep.json``), and with
``RECORD_WEIGHTS_OVERLAY`` (``sparse_config`` disabled, float32 norms, ``moe_layers_enum``, a
``share_expert_dim``: the plain ``qkvg_proj`` layers, and at TP 4 / 8, where the two KV heads are
replicated, ``qkv_proj`` + ``g_proj``) into ``recorded-0.33.0-step5-overlay.json``. vLLM refuses
TP 4 and 8 of the DSA config (2 and 1 query heads per KV group); dryboot refuses them too."""

from __future__ import annotations

import copy
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
ARCH = "Step5ForCausalLM"
TINY = HERE / "data" / "architectures" / f"{ARCH}.json"
FILES = ("recorded-0.33.0-step5.json", "recorded-0.33.0-step5-overlay.json")
DOCS = {name: json.loads((DATA / name).read_text()) for name in FILES}
RECORDED = {(name, cid): row for name, doc in DOCS.items() for cid, row in doc["cases"].items()}


def _config(name: str) -> dict[str, Any]:
    return overlaid_tiny(ARCH, DOCS[name])


def test_recorded() -> None:
    assert all(doc["vllm"] == "0.33.0" for doc in DOCS.values())
    served = {name: sum(1 for (n, _), row in RECORDED.items() if n == name and row["ok"]) for name in FILES}
    assert served == {FILES[0]: 3, FILES[1]: 5}
    sweep = json.loads((DATA / "recorded-0.33.0-sweep.json").read_text())["cases"]
    cid = f"arch--{ARCH} --tensor-parallel-size 1"
    assert sweep[cid] == DOCS[FILES[0]]["cases"][cid]


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    """Every stage's bytes as vLLM 0.33.0 builds them, or refused where vLLM refuses."""
    row: dict[str, Any] = RECORDED[(name, cid)]
    config, argv = _config(name), row["argv"]
    tp, pp = int_flag(argv, "--tensor-parallel-size"), int_flag(argv, "--pipeline-parallel-size")
    kwargs = {"max_num_batched_tokens": row.get("max_num_batched_tokens", 8192)}
    if not row["ok"]:
        with pytest.raises(InputError, match="query heads per KV group"):
            rank_weights(config, Parallel(tp=tp, pp=pp, vllm_version="0.33.0"), **kwargs)
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(pp):
        w = rank_weights(config, Parallel(tp=tp, pp=pp, pp_rank=stage, vllm_version="0.33.0"), **kwargs)
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


def _tiny(**change: Any) -> dict[str, Any]:
    config: dict[str, Any] = copy.deepcopy(json.loads(TINY.read_text()))
    config.update(change)
    return config


@pytest.mark.parametrize(
    ("config", "par", "words"),
    [
        (
            _tiny(quantization_config={"quant_method": "fp8", "weight_block_size": [128, 128]}),
            Parallel(vllm_version="0.33.0"),
            "indexer GEMM cannot be quantized",
        ),
        (_tiny(), Parallel(tp=2, expert_parallel=True, vllm_version="0.33.0"), "expert parallelism"),
        (_tiny(tie_word_embeddings=True), Parallel(vllm_version="0.33.0"), "tie"),
        (_tiny(rope_scaling={"rope_type": "yarn", "factor": 2.0}), Parallel(vllm_version="0.33.0"), "rope_scaling"),
        (_tiny(rope_theta=[10000.0] * 4), Parallel(vllm_version="0.33.0"), "rope_theta"),
        (_tiny(partial_rotary_factors=[0.5] * 4), Parallel(vllm_version="0.33.0"), "partial_rotary_factors"),
        (_tiny(norm_dtype="fp16"), Parallel(vllm_version="0.33.0"), "norm_dtype"),
        (
            {
                **{k: v for k, v in _tiny().items() if k != "head_dim"},
                "swa_num_attention_heads": 4,
                "sparse_config": {"enabled": False},
            },
            Parallel(vllm_version="0.33.0"),
            "a head size per layer kind",
        ),
    ],
)
def test_refused_by_name(config: dict[str, Any], par: Parallel, words: str) -> None:
    with pytest.raises(InputError, match=words):
        rank_weights(config, par, max_num_batched_tokens=8192)
