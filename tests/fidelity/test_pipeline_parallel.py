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
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import pp_cases as P
import test_architectures as T

pytestmark = pytest.mark.fidelity

RELEASES = sorted(p.stem.removeprefix("vllm-") for p in P.DATA.glob("vllm-*.json"))


def _record(version: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(P.record_path(version).read_text())
    assert doc["vllm"] == version and doc["argv"] == P.ARGV
    return doc


@pytest.mark.parametrize("version", RELEASES)
def test_every_planned_architecture_is_recorded(version: str) -> None:
    assert sorted(_record(version)["cases"]) == sorted(T.tiny_configs())


@pytest.mark.parametrize("version", RELEASES)
def test_dryboot_matches_recorded_oracle_under_pp2(version: str) -> None:
    cases = _record(version)["cases"]
    problems = []
    for arch, vllm in cases.items():
        case = P.case(arch)
        got = H.run_dryboot(case, version)
        if not H.compare(vllm, got)["agree"]:
            problems.append(
                f"{case.command(version)}\n    vLLM:    {H._answer(vllm, vllm=True)}\n"
                f"    dryboot: {H._answer(got, vllm=False)}"
            )
    assert not problems, f"{len(problems)}/{len(cases)} disagree:\n" + "\n".join(problems)
