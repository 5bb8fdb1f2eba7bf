"""Sparse MLA models on an H200 where vLLM 0.30+ serves them with ``FLASHINFER_MLA_SPARSE_SM90``
(``sm90_sparse_mla_cases.py``, issue 33): dryboot's ``plan --gpu H200`` against each release's recorded
engine start (``record_sm90_sparse_mla.py``, ``data/sm90-sparse-mla/``): the KV geometry (block size,
groups, blocks) and tokens at a pinned pool, or the refusal in vLLM's kind."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import record_sm90_sparse_mla as R
import sm90_sparse_mla_cases as C

pytestmark = pytest.mark.fidelity

_WORK = Path(tempfile.mkdtemp(prefix="dryboot-sm90-sparse-"))


def dryboot(version: str, cid: str, r: dict[str, Any]) -> dict[str, Any]:
    case = H.Case(cid, "sm90-sparse", R.model_dir(_WORK, r["config"]), [*r["argv"], "--gpu", r["gpu"]])
    return H.run_dryboot(case, version)


def _kv_lines(lines: Any) -> set[str]:
    """The KV cache lines (the block size, the pool's tokens and concurrency)."""
    return {str(m) for m in lines or () if not str(m).startswith("kv lcm")}


def disagreements(version: str) -> tuple[int, list[str]]:
    """(cases, the cases where dryboot's answer is not vLLM's: its figures, its refusal's kind, the KV lines)."""
    rows = C.recorded(version)
    out = []
    for cid, r in rows.items():
        d = dryboot(version, cid, r)
        v = r["vllm"]
        lines = v["ok"] and _kv_lines(v.get("kv_log")) != _kv_lines(d.get("log"))
        if not H.compare(v, d)["agree"] or lines:
            out.append(f"{cid}\n    vLLM:    {H._answer(v, vllm=True)}\n    dryboot: {H._answer(d, vllm=False)}")
    return len(rows), out


def test_fp8_e4m3_rows_are_one_byte_a_value() -> None:
    """DeepSeek-V3.2's tiny config (4 layers) at 4 GiB: FLASHINFER_MLA_SPARSE_SM90 stores an fp8_e4m3 cache as
    plain rows of the 576-wide head (576 bytes a token, not FLASHMLA_SPARSE's 656-byte fp8_ds_mla), beside the
    indexer's 132 bytes, 64-token blocks: 4 GiB // (4 x 64 x 708 B) = 23,696 blocks on 0.30+; 0.29.0 has no
    sparse MLA backend for it."""
    for version in C.RELEASES:
        v = C.recorded(version)["dsv32:fp8_e4m3"]["vllm"]
        if version == "0.29.0":
            assert not v["ok"] and "No valid attention backend" in v["error"], v
            continue
        assert v["num_blocks"] == (4 << 30) // (4 * 64 * (576 + 132)) == 23696, version
        # the block line names every backend from 0.31.0 (0.30.0: the indexer's, the first built)
        named = (
            "DEEPSEEK_V32_INDEXER backend."
            if version == "0.30.0"
            else "DEEPSEEK_V32_INDEXER/FLASHINFER_MLA_SPARSE_SM90"
        )
        assert named in v["kv_log"][0], v["kv_log"]


def test_every_release_is_recorded() -> None:
    for version in C.RELEASES:
        assert list(C.recorded(version)) == list(C.cases(version)), version


@pytest.mark.parametrize("version", C.RELEASES)
def test_dryboot_matches_vllm_on_h200(version: str) -> None:
    n, problems = disagreements(version)
    assert not problems, f"{version}: {len(problems)}/{n} disagree:\n" + "\n".join(problems)
