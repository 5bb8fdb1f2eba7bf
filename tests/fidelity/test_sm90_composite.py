"""dryboot's ``TRITON_FLASH_ATTN`` (vLLM 0.30+'s Triton image-mask / FlashAttention causal composite on SM 9.x)
against vLLM: its selection rule per release against the backend matrix vLLM's own selector recorded
(``tests/data/gpus/backend-matrix/``: the multimodal-prefix rows of the H100 and H200), and the recorded
engine starts of ``sm90_composite_cases.py`` (figures, the engine block, the "Setting kv cache block size"
line and the backend dryboot prints against the one vLLM logs choosing)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import sm90_composite_cases as S

from dryboot.vllm import versions
from dryboot.vllm.backends import BACKENDS, AttentionBackend, AttentionSelectorConfig, default_backend, invalid_reasons

pytestmark = pytest.mark.fidelity

MATRIX = H.REPO / "tests" / "data" / "gpus" / "backend-matrix"


def _mm_prefix_rows(version: str) -> list[tuple[str, dict[str, Any]]]:
    doc = json.loads((MATRIX / f"vllm-{version}.json").read_text(encoding="utf-8"))
    return [
        (row["gpu"], case)
        for row in doc["rows"]
        if row["gpu"] in ("H100", "H200") and row["arm"] == "cubin"
        for case in row["cases"]
        if case.get("use_mm_prefix") and case["kind"] == "standard"
    ]


def _layer(version: str, case: dict[str, Any], rules: versions.VersionRules | None = None) -> AttentionSelectorConfig:
    r = rules or versions.rules_for(version)
    return AttentionSelectorConfig(
        case["head_size"],
        case["kv_cache_dtype"],
        has_sinks=bool(case.get("has_sink")),
        mm_prefix=True,
        capability=(9, 0),
        mm_prefix_composites=r.mm_prefix_composites,
        quantized_mm_prefix_triton=r.fa_quantized_mm_prefix_sm90,
        composite_causal_fa3=r.composite_causal_fa3,
    )


def _selected(version: str, case: dict[str, Any], rules: versions.VersionRules | None = None) -> str:
    return default_backend(_layer(version, case, rules), False)


def _reasons(version: str, case: dict[str, Any], rules: versions.VersionRules | None = None) -> dict[str, list[str]]:
    """dryboot's reasons against each backend vLLM's selector rejected before the one it chose."""
    layer = _layer(version, case, rules)
    return {name: invalid_reasons(BACKENDS[name], layer) for name in case["rejected_above"]}


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_the_selection_is_vllms_on_sm90(version: str) -> None:
    """Every multimodal-prefix row vLLM's selector answered on the H100 and H200 (head sizes 128 / 256,
    auto and fp8): 0.31+ picks the composite at head size 256, 0.30.0 only where FlashAttention 4 runs
    the causal half (not at 256), 0.29.0 has none."""
    rows = _mm_prefix_rows(version)
    assert rows
    wrong = [(gpu, c["head_size"], c["kv_cache_dtype"], c["selected"], _selected(version, c)) for gpu, c in rows]
    assert [w for w in wrong if w[3] != w[4]] == []


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_the_rejections_are_vllms_on_sm90(version: str) -> None:
    """The reasons vLLM's selector gave each backend it passed over, word for word: the composite's
    head size and, on 0.30.0, its causal route's FlashAttention 4; FlashAttention's mm-prefix refusals."""
    wrong = [
        (gpu, c["head_size"], c["kv_cache_dtype"])
        for gpu, c in _mm_prefix_rows(version)
        if _reasons(version, c) != c["rejected_above"]
    ]
    assert wrong == []


def test_the_quantized_mm_prefix_switch_is_needed() -> None:
    """Off on 0.31.0, FlashAttention's reason for a head-128 fp8 multimodal-prefix layer is not vLLM's
    ("SM90 FP8 KV with mm_prefix requires Triton"): with the composite modelled, this is where the switch
    shows (the backend chosen is Triton's either way)."""
    rules = dataclasses.replace(versions.rules_for("0.31.0"), fa_quantized_mm_prefix_sm90=False)
    rows = [c for _, c in _mm_prefix_rows("0.31.0") if c["kv_cache_dtype"] == "fp8" and c["head_size"] == 128]
    assert rows and all(_reasons("0.31.0", c) == c["rejected_above"] for c in rows)
    assert all(_reasons("0.31.0", c, rules) != c["rejected_above"] for c in rows)


def test_the_causal_fa3_switch_is_needed() -> None:
    """Off on 0.31.0, the head-256 rows go to Triton where vLLM picks the composite."""
    rules = dataclasses.replace(versions.rules_for("0.31.0"), composite_causal_fa3=False)
    rows = [c for _, c in _mm_prefix_rows("0.31.0") if c["selected"] == "TRITON_FLASH_ATTN"]
    assert rows and all(_selected("0.31.0", c, rules) == "TRITON_ATTN" for c in rows)


def _versions() -> list[str]:
    return [v for v in S.RELEASES if S.recorded(v)]


def _setting(lines: list[str]) -> list[str]:
    """The "Setting kv cache block size" lines, once each (a pipeline stage's worker logs its own)."""
    out: list[str] = []
    for ln in lines:
        if ln.startswith("Setting kv cache block size") and ln not in out:
            out.append(ln)
    return out


def problems(version: str) -> tuple[int, list[str]]:
    """(cases recorded, one line per disagreement)."""
    rec = S.recorded(version)
    out = []
    for gpu, _ in S.RECORDED_ON:
        for case in S.cases(gpu):
            if case["id"] not in rec:
                continue
            if rec[case["id"]]["argv"] != case["argv"]:
                out.append(f"{case['id']}: recorded for {rec[case['id']]['argv']}, the case is {case['argv']}")
                continue
            v = rec[case["id"]]["vllm"]
            c = H.Case(
                id=case["id"],
                family="sm90-composite",
                model=S.materialize(case),
                argv=[*S.argv(case), "--gpu", gpu],
                source=case["model"],
            )
            d = H.run_dryboot(c, version)
            if not H.compare(v, d)["agree"]:
                said = f"vLLM {H._answer(v, vllm=True)}\n    dryboot {H._answer(d, vllm=False)}"
                out.append(f"{case['id']} {case['argv']}: {said}")
                continue
            if not v.get("ok"):
                continue
            if v.get("final_block_size") not in (None, d.get("block_size")):
                out.append(f"{case['id']}: engine block vLLM {v['final_block_size']}, dryboot {d.get('block_size')}")
            if _setting(v.get("kv_log") or []) != _setting(d.get("log") or []):
                out.append(f"{case['id']}: vLLM logs {_setting(v.get('kv_log') or [])}, dryboot {_setting(d['log'])}")
            if v.get("backends") and v["backends"] != [d.get("attention_backend")]:
                out.append(f"{case['id']}: vLLM chose {v['backends']}, dryboot {d.get('attention_backend')}")
    return sum(1 for gpu, _ in S.RECORDED_ON for c in S.cases(gpu) if c["id"] in rec), out


@pytest.mark.parametrize("version", S.RELEASES)
def test_dryboot_matches_the_recorded_engine_starts(version: str) -> None:
    n, wrong = problems(version)
    if n == 0:
        pytest.skip(f"no SM 9.x composite recording for {version}")
    assert not wrong, f"{len(wrong)}/{n} disagree on {version}:\n" + "\n".join(wrong)


def test_every_release_is_recorded_and_vllm_picks_the_composite() -> None:
    """0.30.0-0.33.0 on the H100 (0.31.0 on the H200 too), and vLLM chose TRITON_FLASH_ATTN in each."""
    assert _versions() == list(S.RELEASES)
    for gpu, releases in S.RECORDED_ON:
        for version in releases:
            rec = S.recorded(version)
            ids = [c["id"] for c in S.cases(gpu)]
            assert set(ids) <= set(rec), (version, gpu)
            assert any(rec[i]["vllm"].get("backends") == ["TRITON_FLASH_ATTN"] for i in ids), (version, gpu)


def test_sliding_layers_ask_the_kernel_blocks_with_their_head_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without :meth:`AttentionBackend.for_head` (every layer on FlashAttention 4's 64-token fp8 pages) the
    head-256 sliding layers start at 64 under ``--block-size 128`` / ``256``: 0.31.0's published 26B-A4B
    ``--block-size 128`` case (vLLM 29,303 tokens) and the tiny config's four-stage ``--block-size 256``
    n-gram case (test_architectures' flag set #18) disagree."""
    assert not problems("0.31.0")[1]
    monkeypatch.setattr(AttentionBackend, "for_head", lambda self, head_size: self)
    wrong = problems("0.31.0")[1]
    for cid in ("H100|google--gemma-4-26B-A4B#3", "H200|google--gemma-4-26B-A4B#3", "H100|Gemma4ForCausalLM#4"):
        assert any(w.startswith(cid + " ") for w in wrong), (cid, wrong)


def test_named_as_a_flag_it_is_refused_by_name() -> None:
    case = next(c for c in S.cases("H100") if c["id"] == "H100|google--gemma-4-26B-A4B#0")
    c = H.Case(
        id="named",
        family="sm90-composite",
        model=S.materialize(case),
        argv=[*S.argv(case), "--gpu", "H100", "--attention-backend", "TRITON_FLASH_ATTN"],
        source=case["model"],
    )
    got = H.run_dryboot(c, "0.31.0")
    assert got["rc"] == 2 and "a composite backend vLLM 0.30+ picks itself" in got["error"], got
