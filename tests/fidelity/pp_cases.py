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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import remote_code_table as R
import test_architectures as T

DATA = Path(__file__).resolve().parent / "data" / "pipeline"
#: the flags of every case: two stages, a budget every tiny config fits
ARGV = ["--kv-cache-memory-bytes", "2000000000", "--max-num-batched-tokens", "4096", "--pipeline-parallel-size", "2"]


#: the same cases on one stage (``record_pp.py --single``; ``test_single_stage.py``): every planned
#: architecture's tiny config must start on every release, or dryboot must refuse it as vLLM does
SINGLE_DATA = Path(__file__).resolve().parent / "data" / "single-stage"
SINGLE_ARGV = ARGV[:4]


def argv_for(architecture: str, single: bool = False) -> list[str]:
    """The case's flags; a remote-code config's add ``--trust-remote-code``, a drafter's its
    ``--speculative-config`` (one token)."""
    base = SINGLE_ARGV if single else ARGV
    if architecture in R.DIRS:
        # the checkpoint's own config class (its Python file beside the config): read only under the flag
        base = [*base, T.TRUST]
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


#: MiniMax-M3 under pipeline parallelism beyond the tiny config's PP 2 case (``record_pp.py PYTHON
#: --minimax``, into ``data/pipeline/minimax-m3/vllm-X.json``, ``frontier_cases`` case form, on an
#: H100): more stages (a stage that starts at a sparse layer takes its indexer's 128-token block
#: before 0.31), ``--block-size 128`` (one block everywhere), fp8, TP, auto-fit, and the published
#: MiniMax-M3-MXFP8 config (3 dense layers, then 57 sparse ones)
MINIMAX_DATA = DATA / "minimax-m3"
MINIMAX_GPU = "H100"
_TINY = "arch:MiniMaxM3SparseForCausalLM"
_PUBLISHED = "newest:MiniMaxAI--MiniMax-M3-MXFP8"
_TINY_BASE = ("--kv-cache-memory-bytes", "2000000000", "--max-num-batched-tokens", "4096")
_PUBLISHED_BASE = ("--max-model-len", "32768", "--kv-cache-memory-bytes", "8000000000")
MINIMAX_FLAGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (_TINY, ("-pp", "3")),
    (_TINY, ("-pp", "4")),
    (_TINY, ("-pp", "2", "--block-size", "128")),
    (_TINY, ("-pp", "2", "--kv-cache-dtype", "fp8")),
    (_TINY, ("-pp", "2", "-tp", "2")),
    (_TINY, ("-pp", "2", "--max-model-len", "-1")),
    (_TINY, ("-pp", "2", "--no-enable-prefix-caching")),
    (_PUBLISHED, ("-pp", "2")),
    (_PUBLISHED, ("-pp", "4", "-tp", "2")),
    (_PUBLISHED, ("-pp", "8")),
    (_PUBLISHED, ("-pp", "2", "--kv-cache-dtype", "fp8")),
    (_PUBLISHED, ("-pp", "2", "--block-size", "128")),
)


def minimax_cases() -> list[dict[str, Any]]:
    """The MiniMax-M3 PP cases: ``{id, model, files, argv, gpu}``."""
    out = []
    for i, (model, flags) in enumerate(MINIMAX_FLAGS):
        base = _TINY_BASE if model == _TINY else _PUBLISHED_BASE
        out.append(
            {
                "id": f"{MINIMAX_GPU}|{model.split(':', 1)[1]}#{i}",
                "model": model,
                "files": None,
                "argv": [*base, *flags],
                "gpu": MINIMAX_GPU,
            }
        )
    return out


def minimax_recorded(version: str) -> dict[str, dict[str, Any]]:
    """case id -> vLLM's answer, of ``data/pipeline/minimax-m3/vllm-<version>.json`` (empty if absent)."""
    path = MINIMAX_DATA / f"vllm-{version}.json"
    if not path.exists():
        return {}
    data: dict[str, dict[str, Any]] = json.loads(path.read_text())["cases"]
    return data
