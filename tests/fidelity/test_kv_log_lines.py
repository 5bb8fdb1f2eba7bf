"""The KV cache lines dryboot prints against the ones vLLM printed (issue 37): for every committed
fidelity record that kept vLLM's KV log (the oracle's ``kv_log``, ``engine_start.KV_LOG_MARKERS``)
and where both vLLM and dryboot start the engine, the lines both model (the block-size setting line
naming the backends, the attention block size / mamba page padding lines, "GPU KV cache size",
"Maximum concurrency", the auto-fit line, the Mamba cache mode) must be vLLM's to the character, as
a set (each pipeline stage's worker logs its own block line; :data:`NOT_MODELLED` is left out).
``e2e_harness.compare`` checks the figures only; the family tests that compared lines
(``test_releases.py``, ``test_inkling.py``, ``test_hy_v4.py``, ``test_sm90_composite.py``) cover a
few sets. Nothing here needs vLLM: the records were written by each set's recorder
(``record_*.py``)."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import deepseek_v4_gpu_cases as DSV4
import dots3_note_cases as DOTS3
import e2e_harness as H
import frontier_cases as F
import glm5next_cases as GLM5N
import hy_v4_cases as HYV4
import inkling_cases as INK
import newest_cases as N
import pp_cases as P
import record_sm12_mla as R12
import sm12_mla_cases as SM12
import sm90_composite_cases as S90
from test_frontier import dryboot_answer
from test_releases import _kv_lines

pytestmark = pytest.mark.fidelity

_WORK = Path(tempfile.mkdtemp(prefix="dryboot-kvlog-"))

#: one recorded case: (case id, vLLM's answer, a thunk giving dryboot's answer)
Row = tuple[str, dict[str, Any], Callable[[], dict[str, Any]]]


def _config_case(family: str, cid: str, config: dict[str, Any], argv: list[str], gpu: str | None) -> H.Case:
    model = H._write_config(_WORK / family, cid, config)
    return H.Case(cid, family, model, [*argv, *(["--gpu", gpu] if gpu else [])])


def _frontier_like(cases: list[dict[str, Any]], rec: dict[str, dict[str, Any]], version: str) -> Iterator[Row]:
    for case in cases:
        if case["id"] in rec:
            yield case["id"], rec[case["id"]]["vllm"], partial(dryboot_answer, case, version)


def _frontier(version: str) -> Iterator[Row]:
    yield from _frontier_like(F.cases(), F.recorded(version), version)


def _newest(version: str) -> Iterator[Row]:
    yield from _frontier_like(N.cases(), N.recorded(version), version)


def _minimax_m3(version: str) -> Iterator[Row]:
    yield from _frontier_like(P.minimax_cases(), P.minimax_recorded(version), version)


def _sm90(version: str) -> Iterator[Row]:
    yield from _frontier_like([c for gpu, _ in S90.RECORDED_ON for c in S90.cases(gpu)], S90.recorded(version), version)


def _inkling(version: str) -> Iterator[Row]:
    rows = {r["id"]: r for r in json.loads(INK.record_path(version).read_text())["cases"]}
    for case in INK.cases():
        if case["id"] not in rows:
            continue
        gpu = ["--gpu", case["gpu"]] if case.get("gpu") else []

        def run(case: dict[str, Any] = case, gpu: list[str] = gpu) -> dict[str, Any]:
            c = H.Case(id=case["id"], family="inkling", model=INK.materialize(case), argv=[*case["argv"], *gpu])
            return H.run_dryboot(c, version)

        yield case["id"], rows[case["id"]]["vllm"], run


def _named_configs(
    family: str,
    version: str,
    cases: dict[str, tuple[str, list[str], str | None]],
    config: Callable[[str], dict[str, Any]],
    rec: dict[str, dict[str, Any]],
) -> Iterator[Row]:
    """The recorded cases of a set whose cases are (config name, flags, GPU or ``None``)."""
    for cid, (name, argv, gpu) in cases.items():
        if cid in rec:
            c = _config_case(family, cid, config(name), argv, gpu)
            yield cid, rec[cid]["vllm"], partial(H.run_dryboot, c, version)


def _deepseek_v4(version: str) -> Iterator[Row]:
    yield from _named_configs("deepseek-v4", version, dict(DSV4.CASES), DSV4.config, DSV4.recorded(version))


def _glm5next(version: str) -> Iterator[Row]:
    yield from _named_configs("glm5next", version, GLM5N.CASES, GLM5N.config, GLM5N.recorded(version))


def _hy_v4(version: str) -> Iterator[Row]:
    yield from _named_configs("hy-v4", version, HYV4.CASES, HYV4.config, HYV4.recorded(version))


def _dots3_note(version: str) -> Iterator[Row]:
    rec = DOTS3.recorded()
    for cid, (name, argv, gpu) in DOTS3.CASES.items():
        if cid not in rec:
            continue
        d = Path(H._write_config(_WORK / "dots3-note", cid, DOTS3.config(name)))
        (d / "added_tokens.json").write_text(json.dumps(DOTS3.ADDED_TOKENS))
        c = H.Case(cid, "dots3-note", str(d), [*argv, *(["--gpu", gpu] if gpu else [])])
        yield cid, rec[cid]["vllm"], partial(H.run_dryboot, c, version)


def _sm12_mla(version: str) -> Iterator[Row]:
    for cid, r in SM12.recorded(version).items():
        c = H.Case(cid, "sm12", R12.model_dir(_WORK / "sm12", r["config"]), [*r["argv"], "--gpu", r["gpu"]])
        yield cid, r["vllm"], partial(H.run_dryboot, c, version)


#: Lines vLLM prints that hold a KV marker ("block size") but belong to the attention backend's selection,
#: which dryboot reports as the backend chosen (``attention_backend``), not as these warnings: the platform's
#: "--block-size N precluded higher-priority backend(s) X" (``platforms/cuda.py``) and FlashAttention's
#: "FA4's Blackwell ... kernel does not support a KV cache block size of N, defaulting to FA version 2"
#: (``v1/attention/backends/flash_attn.py``); not modelled, so not compared.
NOT_MODELLED = ("precluded higher-priority backend(s)", "defaulting to FA version 2")


def kv_lines(log: Any) -> set[str]:
    """The KV cache lines of ``log`` compared (``test_releases._kv_lines``, less :data:`NOT_MODELLED`)."""
    return {m for m in _kv_lines(log) if not any(k in m for k in NOT_MODELLED)}


def _versions(paths: list[Path]) -> list[str]:
    return sorted(p.stem.removeprefix("vllm-") for p in paths)


#: record set -> (its releases recorded, its cases on one release)
SETS: dict[str, tuple[list[str], Callable[[str], Iterator[Row]]]] = {
    "frontier": (list(F.VERSIONS), _frontier),
    "newest": ([v for v in N.VERSIONS if N.recorded(v)], _newest),
    "minimax-m3-pp": (_versions(list(P.MINIMAX_DATA.glob("vllm-*.json"))), _minimax_m3),
    "sm90-composite": ([v for v in S90.RELEASES if S90.recorded(v)], _sm90),
    "inkling": ([INK.RELEASE], _inkling),
    "deepseek-v4-gpus": (list(DSV4.RELEASES), _deepseek_v4),
    # 0.30.0 / 0.31.0: the block line names the plain indexer backend's 64 tokens (0.31.0: every backend)
    "glm5next": (sorted({*GLM5N.EVERY_CASE, *GLM5N.EARLIER}), _glm5next),
    "hy-v4": (list(HYV4.RELEASES), _hy_v4),
    "dots3-note": ([DOTS3.VERSION], _dots3_note),
    "sm12-mla": ([v for v in SM12.RELEASES if SM12.recorded(v)], _sm12_mla),
}


def compared(set_name: str, version: str) -> tuple[int, int, list[str]]:
    """(cases compared, lines compared, one line per disagreement) of one record set on one release:
    every case vLLM started and dryboot answers with figures."""
    n = compared_lines = 0
    out: list[str] = []
    for cid, v, run in SETS[set_name][1](version):
        if not v.get("ok") or not v.get("kv_log"):
            continue
        d = run()
        if d.get("refused") or (not d.get("log") and "load_model" in str(d.get("log_note"))):
            continue
        want, have = kv_lines(v["kv_log"]), kv_lines(d.get("log"))
        n += 1
        compared_lines += len(want)
        if want != have:
            out.append(f"{cid}: vLLM {sorted(want - have)}\n    dryboot {sorted(have - want)}")
    return n, compared_lines, out


@pytest.mark.parametrize(
    ("set_name", "version"), [(s, v) for s, (versions, _) in SETS.items() for v in versions], ids=str
)
def test_kv_lines_are_vllms(set_name: str, version: str) -> None:
    n, _, wrong = compared(set_name, version)
    assert n, f"no case of {set_name} on {version} starts in both vLLM and dryboot"
    assert not wrong, f"{len(wrong)}/{n} disagree:\n" + "\n".join(wrong)
