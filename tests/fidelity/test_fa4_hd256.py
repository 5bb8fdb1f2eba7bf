"""dryboot against vLLM's engine start where FlashAttention's FA4 head-256 kernel shapes the KV cache
blocks on SM 10.x (``fa4_hd256_cases.py``; recorded by ``record_fa4_hd256.py``). From 0.29.0
FlashAttention asked for a model of head size 256 declares 128-token kernel pages
(``_get_fa4_hd256_block_size``): its preferred block is 128, a hybrid block a multiple of 128, and a
``--block-size`` not a multiple of 128 is refused; the model-level fallbacks (soft capping, a quantized
cache, decode context parallelism...) keep FlashAttention's 16-multiples, and sinks do not (they are
not asked there). 0.31+ also asks each layer's spec without the engine's config: a 256-wide sliding
layer starts at 128 tokens whatever the fallback. 0.27.1 / 0.28.0 have no such kernel. A drafter's
FlashAttention layers ask the target's head size (the engine's model config) without a spec and their own
with it. Nothing here needs vLLM."""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import fa4_hd256_cases as C

from dryboot.vllm import versions

pytestmark = pytest.mark.fidelity

_WORK = Path(tempfile.mkdtemp(prefix="fa4-hd256-"))
_MODELS = {name: H.materialize_file(_WORK, path) for name, path in C.MODELS.items()}

#: the KV cache lines compared (the oracle's ``kv_log`` less vLLM's "kv lcm" debug line)
_KV_MARKERS = ("block size", "Mamba cache mode", "mamba page size", "padding layers", "GPU KV cache size")

#: cases vLLM serves and dryboot refuses by name, and what it names (none at present)
REFUSED_BY_NAME: dict[tuple[str, str], str] = {}


def _recorded(version: str) -> dict[str, dict[str, Any]]:
    doc: dict[str, Any] = json.loads(C.record_path(version).read_text())
    assert doc["vllm"] == version
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases


def _keys() -> list[tuple[str, str]]:
    return [(v, c) for v in C.RELEASES for c in C.CASES] + [(v, c) for v in C.EARLIER for c in C.EARLIER_CASES]


def _run(version: str, cid: str) -> dict[str, Any]:
    model, _, _, _ = C.CASES[cid]
    case = H.Case(cid, "fa4-hd256", _MODELS[model], C.dryboot_flags(cid, _MODELS))
    return H.run_dryboot(case, version)


def _kv_lines(lines: Any) -> set[str]:
    return {m for m in lines or () if any(k in m for k in _KV_MARKERS) and not m.startswith("kv lcm")}


def _problems(version: str, cid: str, got: dict[str, Any]) -> list[str]:
    rec = _recorded(version)[cid]
    verdict = H.compare(rec, got)
    problems = [] if verdict["agree"] else [str(verdict["diffs"])]
    if rec.get("ok") and not got.get("refused") and _kv_lines(rec.get("kv_log")) != _kv_lines(got.get("log")):
        want, have = _kv_lines(rec.get("kv_log")), _kv_lines(got.get("log"))
        problems.append(f"log: vLLM printed {sorted(want - have)}, dryboot {sorted(have - want)}")
    return problems


def test_every_case_is_recorded() -> None:
    for version in C.RELEASES:
        assert list(_recorded(version)) == list(C.CASES), version
    for version in C.EARLIER:
        assert set(C.EARLIER_CASES) <= set(_recorded(version)), version


@pytest.mark.parametrize(("version", "cid"), _keys(), ids=[f"{v}-{c}" for v, c in _keys()])
def test_dryboot_agrees(version: str, cid: str) -> None:
    got = _run(version, cid)
    if (version, cid) in REFUSED_BY_NAME:
        assert got.get("refused") and REFUSED_BY_NAME[(version, cid)] in str(got.get("error")), got
        return
    problems = _problems(version, cid, got)
    assert not problems, f"{version} {cid} {C.dryboot_flags(cid, _MODELS)}\n" + "\n".join(problems)


#: (release, case, switch, flipped value): the switch each case pins
SWITCH_CASES = [
    ("0.29.0", "gemma3-fa", "fa4_hd256_block", None),
    ("0.33.0", "qwen35-fa", "fa4_hd256_block", None),
    ("0.31.0", "gemma2-fa-softcap", "fa4_hd256_layer_blocks", False),
    ("0.30.0", "gemma2-fa-softcap", "fa4_hd256_layer_blocks", True),
]


@pytest.mark.parametrize(("version", "cid", "switch", "flipped"), SWITCH_CASES)
def test_switch_is_needed(version: str, cid: str, switch: str, flipped: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = versions.rules_for(version)
    monkeypatch.setitem(versions.VERSIONS, version, dataclasses.replace(rules, **{switch: flipped}))
    versions.rules_for.cache_clear()
    try:
        assert _problems(version, cid, _run(version, cid)), f"flipping {switch} to {flipped!r} still matches {cid}"
    finally:
        versions.rules_for.cache_clear()
