"""Sparse and dense MLA models on the SM 12.x GPUs (``sm12_mla_cases.py``): dryboot's ``plan --gpu``
against each release's recorded engine start (``record_sm12_mla.py``, ``data/sm12-mla/``), every
release 0.27.1-0.33.0 where the architecture is registered, KV cache ``auto``, fp8 and bfloat16."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import record_sm12_mla as R
import sm12_mla_cases as C

pytestmark = pytest.mark.fidelity

_WORK = Path(tempfile.mkdtemp(prefix="dryboot-sm12-"))


def dryboot(version: str, cid: str, r: dict[str, Any]) -> dict[str, Any]:
    case = H.Case(cid, "sm12", R.model_dir(_WORK, r["config"]), [*r["argv"], "--gpu", r["gpu"]])
    return H.run_dryboot(case, version)


#: Where dryboot refuses by name while vLLM serves (or refuses in other words): config name ->
#: (releases, the reason). Never a served answer: every case dryboot serves must agree.
KNOWN: dict[str, tuple[tuple[str, ...], str]] = {
    "step5": (
        ("0.33.0",),
        "Step5's DSA layers choose their backend themselves; dryboot refuses SM 12.x by name, vLLM in its own words "
        "(Step5 DSA requires SM90, SM100 or SM103; FlashAttention 2 stores no fp8)",
    ),
    "longcat": (
        ("0.27.1", "0.31.0"),
        "vLLM 0.27.1 / 0.31.0 build LongCat-Flash with transformers' default 56 layers whatever num_layers says "
        "(the tiny config's): dryboot refuses that config by name on every GPU "
        "(VersionRules.longcat_hidden_layers_field)",
    ),
}


def disagreements(version: str) -> tuple[int, list[str]]:
    """(cases, the problems): a disagreement not in :data:`KNOWN`, any answer dryboot serves that
    disagrees, or a KNOWN entry of ``version`` with no disagreement left (fixed: the entry goes)."""
    rows = C.recorded(version)
    out = []
    still: set[str] = set()
    for cid, r in rows.items():
        d = dryboot(version, cid, r)
        if H.compare(r["vllm"], d)["agree"]:
            continue
        if version in KNOWN.get(r["config"], ((), ""))[0] and d.get("refused"):
            still.add(r["config"])
            continue
        out.append(f"{cid}\n    vLLM:    {H._answer(r['vllm'], vllm=True)}\n    dryboot: {H._answer(d, vllm=False)}")
    recorded = {r["config"] for r in rows.values()}
    for name, (releases, _) in KNOWN.items():
        if version in releases and name in recorded and name not in still:
            out.append(f"{name} on {version} agrees everywhere now: remove it from KNOWN")
    return len(rows), out


def test_every_release_is_recorded() -> None:
    for version in C.RELEASES:
        assert list(C.recorded(version)) == list(C.cases(version)), version


@pytest.mark.parametrize("version", C.RELEASES)
def test_dryboot_matches_vllm_on_sm12(version: str) -> None:
    n, problems = disagreements(version)
    assert not problems, f"{version}: {len(problems)}/{n} disagree:\n" + "\n".join(problems)


def test_sm120_stores_auto_as_fp8_ds_mla() -> None:
    """DeepSeek-V3.2's tiny config with index_topk 2048 on an RTX 5090, 2 GiB: 4 layers of an indexer
    page (132 B a token) beside an fp8_ds_mla one (656 B, not the 1,152 B of a bfloat16 latent),
    64-token blocks: 2 GiB // 201,728 B = 10,645 blocks on every release (bfloat16 too: DeepSeek-V3.2's
    config hook takes it as auto)."""
    for version in C.RELEASES:
        for kv in ("auto", "fp8", "bfloat16"):
            v = C.recorded(version)[f"dsv32-2048@rtx-5090:{kv}"]["vllm"]
            assert v["num_blocks"] == (2 << 30) // (4 * 64 * (132 + 656)) == 10645, (version, kv)


def test_without_flashinfer_cubin_sm120_sparse_mla_is_refused_by_name() -> None:
    """Without flashinfer-cubin vLLM's FlashInfer check asks for nvcc on PATH, which dryboot cannot
    see: refused by name, never planned."""
    r = C.recorded("0.33.0")["dsv32-2048@rtx-5090:auto"]
    case = H.Case("no-cubin", "sm12", R.model_dir(_WORK, r["config"]), [*r["argv"], "--gpu", r["gpu"]])
    case.argv.append("--no-flashinfer-cubin")
    d = H.run_dryboot(case, "0.33.0")
    assert d.get("refused") and "not modelled by dryboot" in str(d["error"]), d
