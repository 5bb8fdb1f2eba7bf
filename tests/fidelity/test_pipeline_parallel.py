"""Pipeline parallelism per architecture and release: dryboot ``--vllm-version X`` against what
vLLM X's own engine start answered for every planned architecture's tiny config under
``--pipeline-parallel-size 2`` (``pp_cases.py``; recorded by ``record_pp.py`` into
``data/pipeline/vllm-X.json``; nothing there comes from dryboot). vLLM refuses some wrappers
there that it builds without pipeline parallelism (a language model built from a text config
that names no architecture, a class without ``SupportsPP``): dryboot must refuse the same ones,
the same way, on each release.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm.versions import VersionRules

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import pp_cases as P
import test_architectures as T

pytestmark = pytest.mark.fidelity

RELEASES = sorted(p.stem.removeprefix("vllm-") for p in P.DATA.glob("vllm-*.json"))


def _record(version: str, single: bool = False) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(P.record_path(version, single).read_text())
    assert doc["vllm"] == version and doc["argv"] == (P.SINGLE_ARGV if single else P.ARGV)
    return doc


#: (release, architecture) -> why dryboot's answer differs from the record; each must still differ
KNOWN: dict[tuple[str, str], str] = {
    ("0.27.1", "LongcatFlashForCausalLM"): (
        "0.27.1 builds transformers' LongcatFlashConfig.num_hidden_layers (56) decoder layers from the 2-layer "
        "config, whose KV cache does not fit (recorded); dryboot refuses it by that layer count first "
        "(test_release_architectures: RELAYERED)"
    ),
    **{
        (v, "ChameleonForConditionalGeneration"): "the oracle's limit: the model class needs CUDA"
        for v in ("0.30.0", "0.33.0")
    },
}


def _planned(version: str) -> list[str]:
    """The tiny configs' architectures dryboot plans on ``version`` (a later release's architecture
    only on the releases that verified it: ``LATER_ARCHITECTURES``)."""
    from dryboot.vllm.models.registry import LATER_ARCHITECTURES

    return sorted(a for a in T.tiny_configs() if version in LATER_ARCHITECTURES.get(a, (version,)))


def _recorded_as_planned(recorded: list[str], version: str) -> None:
    """Every architecture planned on ``version`` is recorded; beyond them only a later release's
    architecture whose refusal there was recorded (vLLM and dryboot both refuse it)."""
    from dryboot.vllm.models.registry import LATER_ARCHITECTURES

    planned = _planned(version)
    assert sorted(set(planned) - set(recorded)) == []
    assert sorted(set(recorded) - set(planned) - set(LATER_ARCHITECTURES)) == []


@pytest.mark.parametrize("version", RELEASES)
def test_every_planned_architecture_is_recorded(version: str) -> None:
    _recorded_as_planned(sorted(_record(version)["cases"]), version)


def _disagreements(version: str, single: bool, known: dict[tuple[str, str], str]) -> list[str]:
    """Every case of the record where dryboot ``--vllm-version version`` and vLLM disagree and
    ``known`` does not say why, and every ``known`` case that now agrees."""
    cases = _record(version, single)["cases"]
    problems = []
    for arch, vllm in cases.items():
        case = P.case(arch, single)
        got = H.run_dryboot(case, version)
        agree = H.compare(vllm, got)["agree"]
        if (version, arch) in known:
            if agree:
                problems.append(f"{case.id} on {version} now agrees: remove it from the known list")
            continue
        if not agree:
            problems.append(
                f"{case.command(version)}\n    vLLM:    {H._answer(vllm, vllm=True)}\n"
                f"    dryboot: {H._answer(got, vllm=False)}"
            )
    return problems


@pytest.mark.parametrize("version", RELEASES)
def test_dryboot_matches_recorded_oracle_under_pp2(version: str) -> None:
    problems = _disagreements(version, False, KNOWN)
    assert not problems, f"{len(problems)} disagree:\n" + "\n".join(problems)


SINGLE_RELEASES = sorted(p.stem.removeprefix("vllm-") for p in P.SINGLE_DATA.glob("vllm-*.json"))
#: (release, architecture) -> why dryboot's answer differs from the one-stage record
KNOWN_SINGLE: dict[tuple[str, str], str] = {
    # the oracle's limit of 0.30.0 / 0.33.0 (KNOWN) holds on one stage of every release from 0.29.0
    **{
        (v, "ChameleonForConditionalGeneration"): KNOWN[("0.30.0", "ChameleonForConditionalGeneration")]
        for v in ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
    },
    # both refuse: the release builds LongcatFlashConfig.num_hidden_layers (56) layers from the
    # 2-layer config (its KV cache then does not fit); dryboot refuses by that layer count first
    **{(v, "LongcatFlashForCausalLM"): KNOWN[("0.27.1", "LongcatFlashForCausalLM")] for v in ("0.27.1", "0.31.0")},
}


@pytest.mark.parametrize("version", SINGLE_RELEASES)
def test_every_planned_architecture_is_recorded_on_one_stage(version: str) -> None:
    _recorded_as_planned(sorted(_record(version, True)["cases"]), version)


@pytest.mark.parametrize("version", SINGLE_RELEASES)
def test_dryboot_matches_recorded_oracle_on_one_stage(version: str) -> None:
    """Without pipeline parallelism every planned architecture's tiny config starts on the
    release, or dryboot refuses it as vLLM does: no exit 0 on what vLLM refuses."""
    problems = _disagreements(version, True, KNOWN_SINGLE)
    assert not problems, f"{len(problems)} disagree:\n" + "\n".join(problems)


#: vLLM's words for Qwen3-VL's language model under PP on 0.27.1-0.29.0 (its text config names no
#: architecture; ``dryboot boot`` on each release's tree, 2026-12-05: 0.30.0 and 0.33.0 start it)
NO_ARCHITECTURES = "No model architectures are specified"


@pytest.mark.parametrize(
    ("architecture", "version", "refused"),
    [
        *[
            (a, v, True)
            for a in ("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration")
            for v in ("0.27.1", "0.28.0", "0.29.0")
        ],
        *[
            (a, v, False)
            for a in ("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration")
            for v in ("0.30.0", "0.33.0")
        ],
    ],
)
def test_qwen3_vl_under_pp_per_release(architecture: str, version: str, refused: bool) -> None:
    got = H.run_dryboot(P.case(architecture), version)
    if refused:
        assert got["refused"] and "--pipeline-parallel-size" in got["error"] and NO_ARCHITECTURES in got["error"], got
        assert got["error"].count("\n") <= 1, got["error"]
    else:
        assert not got.get("refused") and got.get("tokens"), got


def test_qwen3_vl_text_config_naming_its_architecture_builds_under_pp(tmp_path: Path) -> None:
    """vLLM 0.28.0 validates the text config it builds the language model from: one that names
    its architecture passes (Cosmos-3's recorded cases)."""
    cfg = json.loads((T.DATA / "Qwen3VLForConditionalGeneration.json").read_text())
    cfg["text_config"]["architectures"] = ["Qwen3ForCausalLM"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    case = H.Case(id="named", family="pp", model=str(tmp_path), argv=P.ARGV)
    got = H.run_dryboot(case, "0.28.0")
    assert not got.get("refused") and got.get("tokens"), got


@pytest.mark.parametrize(
    ("version", "switch", "architecture"),
    [
        ("0.30.0", "pp_text_model_named", "Qwen3VLForConditionalGeneration"),
        ("0.30.0", "pp_tower_view_builds", "MossTranscribeDiarizeForConditionalGeneration"),
        ("0.33.0", "pp_submodel_unvalidated", "MossTranscribeDiarizeForConditionalGeneration"),
    ],
)
def test_pp_switch_is_needed(
    version: str, switch: str, architecture: str, flip_rules: Callable[..., VersionRules]
) -> None:
    """Flipping the release's switch (and the switches that also lift the refusal on that
    release) makes dryboot disagree with the record."""
    from dryboot.vllm import versions

    rules = versions.rules_for(version)
    off: dict[str, Any] = {switch: type(getattr(rules, switch))()}
    if switch == "pp_submodel_unvalidated":
        off["pp_tower_view_builds"] = False
    flip_rules(version, **off)
    got = H.run_dryboot(P.case(architecture), version)
    assert not H.compare(_record(version)["cases"][architecture], got)["agree"], got


MINIMAX_RELEASES = sorted(p.stem.removeprefix("vllm-") for p in P.MINIMAX_DATA.glob("vllm-*.json"))


@pytest.mark.parametrize("version", MINIMAX_RELEASES)
def test_minimax_m3_pipeline_stages_agree(version: str) -> None:
    """MiniMax-M3 under 2 to 8 stages (``pp_cases.minimax_cases``): before 0.31 a stage that starts
    at a sparse layer takes its indexer's 128-token block while stage 0 keeps 16, so the engine
    unifies the merged specs' pages and buckets them (three kinds on 0.27.1/0.28.0, two after);
    from 0.31 one uniform-type group. Every recorded case agrees."""
    from test_frontier import problems

    rec = P.minimax_recorded(version)
    assert {c["id"] for c in P.minimax_cases()} <= set(rec), "record_pp.py --minimax records every case"
    n, wrong = problems(version, P.minimax_cases(), rec)
    assert n == len(P.MINIMAX_FLAGS) and not wrong, "\n".join(wrong)


@pytest.mark.parametrize(("version", "flipped"), [("0.31.0", True), ("0.32.0", False), ("0.33.0", False)])
def test_minimax_m3_block_stride_alignment_switch_is_needed(
    version: str, flipped: bool, flip_rules: Callable[..., VersionRules]
) -> None:
    """``kernel_block_stride_alignment`` (0.32+: a sparse layer's main cache records its backends'
    128-token kernel block, so it is bucketed apart from a dense layer's; 0.31: no such record):
    flipped, some recorded MiniMax-M3 stage layout of that release disagrees."""
    from test_frontier import problems

    flip_rules(version, kernel_block_stride_alignment=flipped)
    _, wrong = problems(version, P.minimax_cases(), P.minimax_recorded(version))
    assert wrong
