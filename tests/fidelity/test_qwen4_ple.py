"""Qwen4-Exp's PLE layers (``ple_layer_ids``, issue 37): dryboot's plan against vLLM 0.33.0's
engine start on the tiny configs of ``qwen4_ple_cases.py`` (``data/qwen4-ple/vllm-0.33.0.json``,
``record_qwen4_ple.py``): the block, every KV cache group (kind, block, page, layers, in vLLM's
order: a PLE layer's short-convolution state is built before its decoder layer's mixer), the
blocks, tokens, concurrency and max length; what vLLM refuses (transformers' config class on PLE
layers, pipeline parallelism) refused in vLLM's words. Over TP 1/2/4, max lengths (auto-fit too),
an fp8 KV cache, a float32 mamba cache, block sizes, prefix caching, n-gram speculative decoding,
two PLE layers, a PLE state larger than the Gated DeltaNet state (it sizes the attention block),
another kernel / n-gram / stream count. The oracle's faked GPU has no UVA, so every case turns
the n-gram table's CPU offload off (``--engram-config``, a flag dryboot does not take: it is left
out of dryboot's flags, the caches do not depend on it). Needs no vLLM."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import qwen4_ple_cases as P

from dryboot.vllm.models.registry import QWEN4_EXP_LAYERS

RECORDED = P.recorded()
#: the releases whose records are kept (``vllm-<release>.json``; 0.29.0-0.32.0 recorded alike, 0.29.0 without
#: ``--engram-config``, which it lacks; the GPU cases on 0.33.0 only)
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
RECORDS = {v: P.recorded(P.DATA / f"vllm-{v}.json") for v in RELEASES}


def _case(tmp_path: Path, cid: str) -> H.Case:
    """The case as dryboot is run on it: the record's flags less ``--engram-config``, which dryboot
    does not take (the n-gram table's placement; no cache reads it)."""
    name, argv = P.CASES[cid]
    argv = [a for a in argv if a not in P.NO_OFFLOAD]
    return H.Case(cid, "qwen4-ple", H._write_config(tmp_path, cid, P.config(name)), argv)


def test_every_case_is_recorded() -> None:
    assert set(RECORDED) == set(P.CASES)
    for cid, (name, argv) in P.CASES.items():
        assert RECORDED[cid]["config"] == name and RECORDED[cid]["argv"] == argv, cid
    served = [cid for cid, row in RECORDED.items() if row["vllm"]["ok"]]
    assert len(P.CASES) == 26 and len(served) == 22


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("cid", sorted(P.CASES))
def test_dryboot_plans_ple_layers_as_vllm(tmp_path: Path, cid: str, release: str) -> None:
    v = RECORDS[release][cid]["vllm"]
    case = _case(tmp_path, cid)
    d = H.run_dryboot(case, release)
    if not v["ok"]:
        # vLLM's own words (transformers' ValueError, the embedding's NotImplementedError)
        words = v["error"].split("ValueError: ")[-1].split(": ", 1)[-1].split(" Please")[0].rstrip(".")
        words = words.split("Value error, ")[-1].split(" [type=")[0]
        assert d.get("refused") and words[:80] in str(d["error"]), (v["error"], d.get("error"))
        return
    verdict = H.compare(v, d)
    assert verdict["agree"], verdict
    assert v["final_block_size"] == d["block_size"]
    assert not verdict["diffs"], verdict
    assert _group_layers(case, release) == v["group_layers"]


def _group_layers(case: H.Case, release: str = P.VERSION) -> list[list[str]]:
    """dryboot's KV cache groups' member layers (``plan --json``), in its group order."""
    from click.testing import CliRunner

    from dryboot.cli import cli

    res = CliRunner().invoke(cli, case.dryboot_argv(release), catch_exceptions=False)
    doc = json.loads(res.stdout)
    return [list(g["layer_names"]) for g in doc["grouping"]["groups"]]


def test_ple_layers_group_apart_before_their_mixer() -> None:
    """Two PLE layers: their two Mamba groups come first (each built before its layer's Gated
    DeltaNet mixer), each alone, on the common page."""
    v = RECORDED["ple2"]["vllm"]
    assert v["group_layers"][:3] == [["model.layers.0.ple"], ["model.layers.1.ple"], ["model.layers.0.linear_attn"]]
    assert len({g[2] for g in v["groups"]}) == 1


def test_reason_names_the_release() -> None:
    assert "PLE layers" in QWEN4_EXP_LAYERS and "planned on 0.29.0-0.33.0" in QWEN4_EXP_LAYERS


@pytest.mark.parametrize("cid", sorted(P.GPU_CASES))
def test_dryboot_plans_ple_layers_on_other_gpus(tmp_path: Path, cid: str) -> None:
    """The oracle as an A100 (no FlashInfer GDN prefill checkpoints: no checkpoint page), an RTX
    4090 and a B200 (``data/qwen4-ple/vllm-0.33.0-gpus.json``): dryboot given the same ``--gpu``."""
    name, argv, gpu = P.GPU_CASES[cid]
    v = P.recorded(P.GPU_RECORD)[cid]["vllm"]
    argv = [a for a in argv if a not in P.NO_OFFLOAD]
    case = H.Case(cid, "qwen4-ple", H._write_config(tmp_path, cid, P.config(name)), [*argv, "--gpu", gpu])
    d = H.run_dryboot(case, P.VERSION)
    verdict = H.compare(v, d)
    assert v["ok"] and verdict["agree"] and not verdict["diffs"], verdict
    assert v["final_block_size"] == d["block_size"]
    assert _group_layers(case) == v["group_layers"]
