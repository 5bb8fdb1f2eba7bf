"""dryboot against vLLM's recorded engine start for the V1-model-runner cases (``v1_runner_cases``): every
record agrees, and both switches are needed (without ``v2_runner_lacks_mamba_all`` or with no
``v1_runner_refuses``, 0.30.0's ``--mamba-cache-mode all`` case is answered where vLLM refuses)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import e2e_harness as H
import pytest
import v1_runner_cases as C

from dryboot.vllm import versions

RECORDED: dict[str, dict[str, Any]] = json.loads(C.RECORDS.read_text())
CASES = {c.id: c for c in C.cases(H.default_workdir())}


def _problems(key: str) -> list[str]:
    release, cid = key.split("/")
    verdict = H.compare(RECORDED[key], H.run_dryboot(CASES[cid], release))
    return [f"{k}: vLLM {a} != dryboot {b}" for k, (a, b) in verdict["diffs"].items()]


def test_every_case_is_recorded_on_every_release() -> None:
    assert set(RECORDED) == {f"{r}/{c}" for r in C.RELEASES for c in CASES}


@pytest.mark.parametrize("key", sorted(RECORDED))
def test_dryboot_matches_recorded_oracle(key: str) -> None:
    assert not _problems(key)


@pytest.mark.parametrize("switch,flipped", [("v2_runner_lacks_mamba_all", False), ("v1_runner_refuses", frozenset())])
def test_switch_is_needed(switch: str, flipped: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = versions.rules_for("0.30.0")
    monkeypatch.setitem(versions.VERSIONS, "0.30.0", dataclasses.replace(rules, **{switch: flipped}))
    versions.rules_for.cache_clear()
    try:
        assert _problems("0.30.0/mamba-all")
    finally:
        versions.rules_for.cache_clear()
