"""dryboot against vLLM's recorded engine start on the newest published configs
(``newest_cases.py``: checkpoints published in 2026 or 2025, stored verbatim with their ``SOURCE`` under
``data/newest/configs/``), on an H100 and an A100 with a pinned KV cache budget.
``data/newest/vllm-X.json`` is written by ``record_newest.py``; nothing in it comes from
dryboot. Strict: every recorded case must agree (block size, groups, blocks, tokens, concurrency,
max model length, or the same refusal, ``e2e_harness.compare``); a case listed in
:data:`KNOWN` must still disagree, so a fixed one is noticed. One difference is the oracle's, not
dryboot's (:func:`weights_first`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import newest_cases as N
from test_frontier import dryboot_answer, problems

pytestmark = pytest.mark.fidelity

#: release -> case id -> why dryboot disagrees with vLLM there
KNOWN: dict[str, dict[str, str]] = {}


#: the start of vLLM's not-enough-KV-memory refusal (``kv_cache_utils.check_enough_kv_cache_memory``)
NOT_ENOUGH_KV = "To serve at least one request with the model's max seq len"


def weights_first(case: dict[str, Any], rec: dict[str, dict[str, Any]], version: str) -> bool:
    """vLLM refused for want of KV memory, and dryboot says the start fails earlier on this GPU:
    the weights do not fit it, so vLLM fails loading them (``load_model``) before any KV sizing
    and logs no KV line. The oracle builds the model on the meta device and loads no weights, so
    it reaches the KV sizing; both say the start fails (dryboot's KV verdict is not compared)."""
    v = rec[case["id"]]["vllm"]
    if v.get("ok") or NOT_ENOUGH_KV not in str(v.get("error")):
        return False
    d = dryboot_answer(case, version)
    return not d.get("refused") and not d.get("log") and "load_model" in str(d.get("log_note"))


def case_id(problem: str) -> str:
    """The case id a line of ``test_frontier.problems`` starts with."""
    return problem.split(" ", 1)[0].rstrip(":")


@pytest.mark.parametrize("version", N.VERSIONS)
def test_newest_configs_agree(version: str) -> None:
    rec = N.recorded(version)
    if not rec:
        pytest.skip(f"no recording of the newest configs for {version}")
    by_id = {c["id"]: c for c in N.cases()}
    n, wrong = problems(version, N.cases(), rec)
    wrong = [w for w in wrong if not weights_first(by_id[case_id(w)], rec, version)]
    known = KNOWN.get(version, {})
    unexpected = [w for w in wrong if case_id(w) not in known]
    fixed = sorted(set(known) - {case_id(w) for w in wrong})
    assert not unexpected, f"{len(unexpected)}/{n} disagree on {version}:\n" + "\n".join(unexpected)
    assert not fixed, f"listed as disagreeing but agree now on {version}: {fixed}"


def test_newest_recording_covers_every_config() -> None:
    """Both releases hold an answer for every case of every stored config, and each config
    folder keeps its ``SOURCE``."""
    for name in N.configs():
        assert (N.CONFIGS / name / "SOURCE").is_file(), name
    for version in N.VERSIONS:
        missing = [c["id"] for c in N.cases() if c["id"] not in N.recorded(version)]
        assert not missing, f"{version}: not recorded: {missing}"
