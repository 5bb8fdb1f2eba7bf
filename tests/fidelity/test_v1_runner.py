"""dryboot against vLLM's recorded engine start for the V1-model-runner cases (``v1_runner_cases``): every
record agrees, and both switches are needed (without ``v2_runner_lacks_mamba_all`` or with no
``v1_runner_refuses``, 0.30.0's ``--mamba-cache-mode all`` case is answered where vLLM refuses)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import release_records
import v1_runner_cases as C

from dryboot.vllm.versions import VersionRules

RECORDED = release_records.Recorded(C)
_problems = RECORDED.problems


def test_every_case_is_recorded_on_every_release() -> None:
    assert RECORDED.complete()


@pytest.mark.parametrize("key", RECORDED.keys())
def test_dryboot_matches_recorded_oracle(key: str) -> None:
    assert not _problems(key)


@pytest.mark.parametrize("switch,flipped", [("v2_runner_lacks_mamba_all", False), ("v1_runner_refuses", frozenset())])
def test_switch_is_needed(switch: str, flipped: Any, flip_rules: Callable[..., VersionRules]) -> None:
    flip_rules("0.30.0", **{switch: flipped})
    assert _problems("0.30.0/mamba-all")
