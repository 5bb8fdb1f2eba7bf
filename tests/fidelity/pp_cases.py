"""One pipeline-parallel case per planned architecture: its tiny config
(``data/architectures/<Architecture>.json``) under ``--pipeline-parallel-size 2`` and nothing else
that vLLM could refuse first (a drafter's case runs on its target, the drafter in
``--speculative-config``, as ``test_architectures.make_case`` builds it).

``record_pp.py PYTHON`` records one release's answers into ``data/pipeline/vllm-X.json``;
``test_pipeline_parallel.py`` checks dryboot ``--vllm-version X`` against each record.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T

DATA = Path(__file__).resolve().parent / "data" / "pipeline"
#: the flags of every case: two stages, a budget every tiny config fits
ARGV = ["--kv-cache-memory-bytes", "2000000000", "--max-num-batched-tokens", "4096", "--pipeline-parallel-size", "2"]


#: the same cases on one stage (``record_pp.py --single``; ``test_single_stage.py``): every planned
#: architecture's tiny config must start on every release, or dryboot must refuse it as vLLM does
SINGLE_DATA = Path(__file__).resolve().parent / "data" / "single-stage"
SINGLE_ARGV = ARGV[:4]


def argv_for(architecture: str, single: bool = False) -> list[str]:
    """The case's flags; a drafter's add its ``--speculative-config`` (one token)."""
    base = SINGLE_ARGV if single else ARGV
    if architecture not in T.DRAFTERS:
        return list(base)
    spec = {"method": T.DRAFTERS[architecture][1], "model": T.DRAFTER, "num_speculative_tokens": 1}
    return [*base, "--speculative-config", json.dumps(spec)]


def case(architecture: str, single: bool = False) -> H.Case:
    """``architecture``'s PP 2 case (id ``<Architecture>@pp2``), or its one-stage case (``@pp1``)."""
    c = T.make_case(architecture, 0, argv_for(architecture, single))
    tag = "pp1" if single else "pp2"
    return H.Case(id=f"{architecture}@{tag}", family="pp", model=c.model, argv=c.argv, source=c.source)


def record_path(version: str, single: bool = False) -> Path:
    return (SINGLE_DATA if single else DATA) / f"vllm-{version}.json"
