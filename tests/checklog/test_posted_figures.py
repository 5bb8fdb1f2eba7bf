"""The posted figures themselves: for each public log whose inputs the post states
(tests/data/checklog/public/FIGURES.toml, copied by hand from the logs), dryboot's planner under
the stated flags gives the logged figure for some KV budget the logged ``Available KV cache
memory`` stands for (the smallest worker's, every byte count that prints as the logged GiB).

Unlike test_public_corpus_change_detector.py, whose expectations are dryboot's own verdicts
recorded by a script, the expectations here are vLLM's: a disagreement is a strict xfail whose
reason is documented in FIGURES.toml (with vLLM's arithmetic).
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest

from dryboot.planner.plan import plan
from dryboot.planner.runner import load_drafter_and_k
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.transformers_utils.config import load_model

from .public_verdicts import PUBLIC, REPO

ENTRIES: list[dict[str, Any]] = tomllib.loads((PUBLIC / "FIGURES.toml").read_text())["log"]
GIB = 2**30
#: vLLM's wording of the two figures (read here with our own patterns, not check-log's parser)
TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
NEEDED = re.compile(r"\(([\d.]+) GiB KV cache is needed")


def interval(gib: str) -> tuple[int, int]:
    """Every byte count ``round(b / 2**30, 2)`` prints as ``gib``."""
    x = Fraction(gib)
    return math.ceil((x - Fraction(1, 200)) * GIB), math.ceil((x + Fraction(1, 200)) * GIB) - 1


def predicted(entry: dict[str, Any]) -> set[str]:
    """The figure (tokens, or the GiB needed) at every pool-block step of the smallest worker's
    interval."""
    model = load_model(REPO / entry["config"])
    args = EngineArgs(vllm_version=entry["rules"], **entry["flags"])
    drafter = None
    if "mtp_k" in entry:
        drafter, args = load_drafter_and_k({"method": "mtp", "num_speculative_tokens": entry["mtp_k"]}, None, args)
    lo, hi = min(interval(g) for g in entry["available_gib"])
    pattern = NEEDED if "needed_gib" in entry else TOKENS
    out: set[str] = set()
    for step in range(65):  # 64 steps of the 0.01 GiB interval: finer than any pool block here
        budget = lo + (hi - lo) * step // 64
        p = plan(model, replace(args, kv_cache_memory_bytes=budget), drafter=drafter)
        out.update(m.group(1) for m in pattern.finditer(str(p.memory_error or "") + "\n" + _capacity_text(p)))
    return out


def _capacity_text(p: Any) -> str:
    from dryboot.checklog.compare import predicted_lines

    return "\n".join(text for _, text in predicted_lines(p))


def _param(entry: dict[str, Any]) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=entry["xfail"])] if "xfail" in entry else []
    return pytest.param(entry, id=entry["log"], marks=marks)


def test_each_entry_quotes_its_log() -> None:
    """The figures were copied from the logs: each is on the line the entry names."""
    for entry in ENTRIES:
        line = (PUBLIC / entry["log"]).read_text(encoding="utf-8").split("\n")[entry["line"] - 1]
        figure = (
            f"{entry['tokens']:,} tokens" if "tokens" in entry else f"({entry['needed_gib']} GiB KV cache is needed"
        )
        assert figure in line, (entry["log"], line)
        text = (PUBLIC / entry["log"]).read_text(encoding="utf-8")
        for gib in entry["available_gib"]:
            assert f"Available KV cache memory: {gib} GiB" in text or f"available KV cache memory ({gib} GiB)" in text


@pytest.mark.parametrize("entry", [_param(e) for e in ENTRIES])
def test_the_logged_figure_is_predicted(entry: dict[str, Any]) -> None:
    want = f"{entry['tokens']:,}" if "tokens" in entry else entry["needed_gib"]
    got = predicted(entry)
    assert want in got, f"{entry['log']}: logged {want}, predicted {sorted(got)}"
