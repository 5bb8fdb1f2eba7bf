"""dryboot against vLLM's recorded engine start on the newest published configs
(``newest_cases.py``: checkpoints published in 2026, stored verbatim with their ``SOURCE`` under
``data/newest/configs/``), on an H100 and an A100 with a pinned KV cache budget.
``data/newest/vllm-X.json`` is written by ``record_newest.py``; nothing in it comes from
dryboot. Strict: every recorded case must agree (block size, groups, blocks, tokens, concurrency,
max model length, or the same refusal, ``e2e_harness.compare``); a case listed in
:data:`KNOWN` must still disagree, so a fixed one is noticed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import newest_cases as N
from test_frontier import problems

pytestmark = pytest.mark.fidelity

#: case id -> why dryboot disagrees with vLLM there (none today)
KNOWN: dict[str, str] = {}


@pytest.mark.parametrize("version", N.VERSIONS)
def test_newest_configs_agree(version: str) -> None:
    rec = N.recorded(version)
    if not rec:
        pytest.skip(f"no recording of the newest configs for {version}")
    n, wrong = problems(version, N.cases(), rec)
    unexpected = [w for w in wrong if w.split(" ", 1)[0] not in KNOWN]
    fixed = sorted(set(KNOWN) - {w.split(" ", 1)[0] for w in wrong})
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
