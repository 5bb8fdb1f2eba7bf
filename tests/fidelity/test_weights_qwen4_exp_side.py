"""Qwen4-Exp's QSA and PLE layers (issue 33): dryboot's per-rank weights against what vLLM 0.30.0-0.33.0
allocate on the meta device, byte for byte, and what vLLM refuses refused.

``data/weights/qwen4-exp-side/recorded-<release>.json`` holds each release's figures for the tiny
configs the KV cache checks use (not published checkpoints): ``qwen4-qsa`` (QSA, budget 256 over ratio 4),
``qwen4-qsa-512`` (budget 2048: the ratio vLLM's own config class takes on 0.30), ``qwen4-qsa-ple``
(both kinds together), ``qwen4-ple`` / ``qwen4-ple2`` / ``qwen4-ple-wide`` /
``qwen4-ple-k3`` / ``qwen4-ple-attn`` and the wrapper's ``qwen4-vl-qsa`` / ``qwen4-vl-qsa-mrope`` (its
QSA rotary a multimodal RoPE: over the token positions from 0.32, ``mrope_positions_factor``) /
``qwen4-vl-ple`` (``data/refused-0.33/configs/``, ``data/qwen4-ple/configs/``; :mod:`qwen4_ple_cases`) and
``qwen4-vl-qsa-mrope-512`` (this folder; 0.30.0 and 0.32.0: under ``--language-model-only`` vLLM strips the
multimodal RoPE, ``_strip_qwen4_exp_mrope``), at
TP 1/2/4/8, expert parallelism at TP 2/8, three pipeline stages (and the wrappers' ``--language-model-only``
at TP 1/2), every
PLE case with ``--engram-config '{"cpu_offload": false}'`` and once at TP 1 without it (vLLM's default
offload: the meta build refuses it, "Engram CPU offload requires UVA support"; dryboot refuses it by
name). QSA on 0.30.0 / 0.32.0 / 0.33.0, PLE on 0.30.0-0.33.0. Recorded in each release's boot
environment with ``record_weights.py`` pointed at a folder of these configs (``R.ARCHS``) and its
flag sets extended as said::

    RECORD_WEIGHTS_OUT=/tmp/side-0.33.0.json ~/.cache/dryboot/boot-env/0.33.0/bin/python rec.py \\
        qwen4-qsa qwen4-qsa-512 qwen4-qsa-ple qwen4-ple qwen4-ple2 qwen4-ple-wide qwen4-ple-k3 qwen4-ple-attn
    (and the three wrapper configs, recorded apart and merged)

A case vLLM refuses must be refused; :func:`_refused_here` names the cases vLLM's meta build passes
and dryboot refuses.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from qwen4_ple_cases import config as case_config
from test_weights import _parallel, _serve

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/ with the walk)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights
from dryboot.vllm.model_executor.models import qwen4_exp

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights" / "qwen4-exp-side"
RECORDS: dict[str, dict[str, Any]] = {
    p.stem.split("-")[1]: json.loads(p.read_text()) for p in sorted(DATA.glob("recorded-*.json"))
}
CASES = sorted((v, cid) for v, doc in RECORDS.items() for cid in doc["cases"])
TOKENS = 8192


def _config(name: str) -> dict[str, Any]:
    """A recorded config: :mod:`qwen4_ple_cases`' or, for ``qwen4-vl-qsa-mrope-512`` (the mrope wrapper with the
    budget vLLM's own config class takes on 0.30), this folder's."""
    path = DATA / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else case_config(name)


def _refused_here(row: dict[str, Any]) -> str | None:
    """What dryboot refuses of a case vLLM builds, in its words: the tiny configs' 2 Gated DeltaNet
    key heads over TP 4 (vLLM splits the projections without checking the heads; Qwen3-Next's walk
    refuses it)."""
    argv = row["argv"]
    if argv[argv.index("--tensor-parallel-size") + 1] == "4":
        return re.escape("linear_num_key_heads (2) is not divisible by 4")
    return None


def _weights(config: dict[str, Any], argv: list[str], release: str, stage: int = 0, **kw: Any) -> Any:
    par = replace(_parallel(argv, stage), vllm_version=release, engram_cpu_offload="--engram-config" not in argv)
    serve = {**_serve({"argv": argv}), "max_num_batched_tokens": TOKENS, **kw}
    return rank_weights(config, par, **serve)


def test_records_are_the_releases() -> None:
    assert tuple(RECORDS) == qwen4_exp.PLE_RELEASES
    for v, doc in RECORDS.items():
        assert doc["vllm"] == v
        configs = {row["config"] for row in doc["cases"].values()}
        assert ("arch--qwen4-qsa" in configs) == (v in qwen4_exp.QSA_RELEASES), v
        assert {row["ok"] for row in doc["cases"].values()} == {True, False}


@pytest.mark.parametrize(("release", "cid"), CASES)
def test_matches_vllm(release: str, cid: str) -> None:
    """[param, buffer, allocated] bytes of rank 0 of every stage, or vLLM's refusal refused."""
    row = RECORDS[release]["cases"][cid]
    config = _config(row["config"][len("arch--") :])
    why = _refused_here(row)
    if not row["ok"] or why is not None:
        with pytest.raises(InputError, match=why if row["ok"] else None):
            _weights(config, row["argv"], release)
        return
    assert row["max_num_batched_tokens"] == TOKENS
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(len(stages)):
        w = _weights(config, row["argv"], release, stage)
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


def test_offloaded_tables_refused_by_name() -> None:
    """vLLM's default keeps the PLE tables in pinned host memory: refused by name (recorded: the meta
    build has no UVA), as every PLE config's TP 1 case without ``--engram-config`` shows."""
    row = RECORDS["0.33.0"]["cases"]["arch--qwen4-ple --tensor-parallel-size 1"]
    assert "UVA" in row["error"]
    with pytest.raises(InputError, match="pinned host memory"):
        rank_weights(case_config("qwen4-ple"), Parallel(vllm_version="0.33.0"), max_num_batched_tokens=TOKENS)


def test_ple_under_pipeline_parallelism_refused() -> None:
    row = RECORDS["0.33.0"]["cases"][
        'arch--qwen4-ple --tensor-parallel-size 2 --pipeline-parallel-size 3 --engram-config {"cpu_offload": false}'
    ]
    assert "pipeline_parallel_size=1" in row["error"]
    with pytest.raises(InputError, match="pipeline_parallel_size=1"):
        _weights(case_config("qwen4-ple"), row["argv"], "0.33.0")


@pytest.mark.parametrize(
    ("name", "release"), [("qwen4-qsa-512", "0.29.0"), ("qwen4-qsa-512", "0.31.0"), ("qwen4-ple", "0.29.0")]
)
def test_unrecorded_releases_refused(name: str, release: str) -> None:
    with pytest.raises(InputError, match=f"not {re.escape(release)}|{re.escape(release)}"):
        _weights(case_config(name), ["--tensor-parallel-size", "1", "--engram-config", "{}"], release)


def test_qsa_needs_bf16_tokens_and_no_quantization() -> None:
    argv = ["--tensor-parallel-size", "1"]
    qsa = case_config("qwen4-qsa")
    with pytest.raises(InputError, match="requires BF16"):
        _weights(qsa, argv, "0.33.0", dtype="float16")
    with pytest.raises(InputError, match="quantized"):
        _weights({**qsa, "quantization_config": {"quant_method": "fp8"}}, argv, "0.33.0")
    with pytest.raises(InputError, match="max_num_batched_tokens"):
        rank_weights(qsa, Parallel(vllm_version="0.33.0"))
    with pytest.raises(InputError, match="BF16 main KV cache"):
        rank_weights(
            {**qsa, "indexer_budget": 2048},
            Parallel(vllm_version="0.30.0", kv_cache_dtype="fp8"),
            max_num_batched_tokens=TOKENS,
        )


def test_qsa_layer_parts() -> None:
    """0.32.0 on: the indexer's replicated Q/K columns join ``qkv_proj`` (one tensor); 0.30.0 keeps
    ``index_qk_proj`` apart: the same bytes in two allocations. The top-k buffer is
    ``tokens x (budget + ratio)`` int32."""
    qsa = case_config("qwen4-qsa")
    fused = qwen4_exp.qsa_layer(qsa, Parallel(tp=2, vllm_version="0.33.0"), TOKENS)
    apart = qwen4_exp.qsa_layer(qsa, Parallel(tp=2, vllm_version="0.30.0"), TOKENS)
    assert fused.param_bytes == apart.param_bytes
    assert fused.buffer_bytes == TOKENS * (256 + 4) * 4
    index = (4 + 1) * 128 * 256 * 2
    assert fused.by_kind["attention"] == (2 * 4 // 2 + 2 * 1) * 128 * 256 * 2 + index


def test_ple_table_rows() -> None:
    """Each n-gram head takes the next prime from ``ngram_vocab_size_base``; a layer's heads follow the
    earlier PLE layers' (its dense id): 16 heads from 2000 sum to 33,0xx, rounded up to 128."""
    ple = case_config("qwen4-ple")
    first, second = qwen4_exp.ple_table_rows(ple, 0), qwen4_exp.ple_table_rows(ple, 1)
    assert first == 33024
    assert second > first
    assert qwen4_exp._primes_from(2000, 3) == [2003, 2011, 2017]
    assert qwen4_exp._primes_from(1, 4) == [2, 3, 5, 7]
    assert qwen4_exp._primes_from(20_000_000, 2) == [20_000_003, 20_000_023]
    with pytest.raises(InputError, match="outside what dryboot sizes"):
        qwen4_exp.ple_table_rows({**ple, "heads_per_ngram": 10**9}, 0)
    with pytest.raises(InputError, match="outside what dryboot sizes"):
        qwen4_exp.ple_table_rows({**ple, "ngram_vocab_size_base": 2**63}, 0)


MROPE = {p.stem.split("-")[1]: json.loads(p.read_text()) for p in sorted(DATA.glob("mrope-*.json"))}


@pytest.mark.parametrize(("release", "cid"), sorted((v, cid) for v, doc in MROPE.items() for cid in doc["cases"]))
def test_mrope_stripped_as_vllm(release: str, cid: str) -> None:
    """``_strip_qwen4_exp_mrope`` (0.29.0-0.33.0): ``Qwen4ExpForCausalLM`` and the wrapper under
    ``--language-model-only`` take a one-dimensional rotary table (``max_position_embeddings`` rows); the
    wrapper with its tower, or with zero image and video limits, keeps the multimodal 4x.
    ``mrope-<release>.json``: ``qwen4-plain-mrope`` (the tiny text config) and ``qwen4-vl-plain-mrope``
    (``data/refused-0.33/configs/qwen4-vl-plain.json``) with an interleaved ``mrope_section``, recorded at TP 2
    as above."""
    row = MROPE[release]["cases"][cid]
    assert row["ok"]
    w = _weights(_config(row["config"][len("arch--") :]), row["argv"], release)
    assert [w.param_bytes, w.buffer_bytes, w.allocated_bytes] == [
        row["param_bytes"],
        row["buffer_bytes"],
        row["allocated_bytes"],
    ]
