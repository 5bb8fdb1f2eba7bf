"""RNJ-1's chunked_attention layers (a lookback chunk) on the backend that builds them, against
each release's own engine start.

``Rnj1ForCausalLM``'s tiny config (``data/architectures/Rnj1ForCausalLM.json``) runs under
``test_architectures``' flag sets on 0.28.0, where the default backend (FLASH_ATTN on the H200)
fails vLLM's assertion for a lookback layer. Here the same flag sets run with
``--attention-backend TRITON_ATTN`` (any backend they named replaced), on every release listed in
:data:`RELEASES`; ``record_rnj1.py PYTHON`` records a release into ``data/rnj1/vllm-X.json``
(nothing there comes from dryboot). Needs no vLLM.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T

pytestmark = pytest.mark.fidelity

DATA = Path(__file__).resolve().parent / "data" / "rnj1"
ARCHITECTURE = "Rnj1ForCausalLM"
#: the releases recorded (rnj1.py builds the same attention on each; 0.29.0+ only changed its loader)
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
BACKEND = "TRITON_ATTN"


def on_triton(argv: list[str]) -> list[str]:
    """``argv`` with any ``--attention-backend`` dropped and ``--attention-backend TRITON_ATTN``
    appended."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--attention-backend":
            skip = True
            continue
        out.append(a)
    return [*out, "--attention-backend", BACKEND]


def cases() -> list[H.Case]:
    """The tiny config's cases on TRITON_ATTN (ids ``Rnj1ForCausalLM@triton#i``)."""
    path = T.tiny_configs()[ARCHITECTURE]
    model = T.materialize(ARCHITECTURE, path)
    return [
        H.Case(id=f"{ARCHITECTURE}@triton#{i}", family=f"arch:{ARCHITECTURE}", model=model, argv=on_triton(argv))
        for i, argv in enumerate(T.flag_sets(ARCHITECTURE, path))
    ]


def record_path(version: str) -> Path:
    return DATA / f"vllm-{version}.json"


def _rows(version: str) -> list[dict[str, Any]]:
    doc = json.loads(record_path(version).read_text())
    assert doc["vllm"] == version
    rows: list[dict[str, Any]] = doc["cases"]
    return rows


@pytest.mark.parametrize("version", RELEASES)
def test_recorded_with_todays_flag_sets(version: str) -> None:
    rows = _rows(version)
    assert [r["argv"] for r in rows] == [c.argv for c in cases()]
    assert sum(1 for r in rows if r["vllm"].get("ok")) >= 12, "too few cases vLLM serves"


@pytest.mark.parametrize("version", RELEASES)
def test_dryboot_matches_the_release(version: str) -> None:
    problems = []
    for c, row in zip(cases(), _rows(version), strict=True):
        got = H.run_dryboot(c, version)
        if not H.compare(row["vllm"], got)["agree"]:
            problems.append(
                f"{c.command(version)}\n    vLLM:    {H._answer(row['vllm'], vllm=True)}\n"
                f"    dryboot: {H._answer(got, vllm=False)}"
            )
    assert not problems, f"{len(problems)} disagree:\n" + "\n".join(problems)


def test_the_default_backend_is_refused_in_vllms_words() -> None:
    """Where the 0.28.0 record has vLLM refusing a case for its backend, dryboot refuses it with
    vLLM's assertion."""
    path = T.tiny_configs()[ARCHITECTURE]
    rows = T.load_recorded()[ARCHITECTURE]
    refused = [i for i, r in enumerate(rows) if "Chunked attention with lookback" in str(r["vllm"].get("error"))]
    assert len(refused) >= 12, "too few cases of the 0.28.0 record are refused for their backend"
    for i in refused:
        got = H.run_dryboot(T.make_case(ARCHITECTURE, i, T.local(rows[i]["argv"])), "0.28.0")
        assert "Chunked attention with lookback requires the Triton backend" in str(got.get("error")), (i, got)
    assert [T.local(r["argv"]) for r in rows] == T.flag_sets(ARCHITECTURE, path)
