"""DeepSeek-V4 (``DeepseekV4ForCausalLM``) off SM 9.0 agrees with vLLM's engine start, or is refused by
name: FlashMLA's sparse layers on SM 10.x (B200, B300; vLLM's ``_select_dsv4_attn_cls`` gives them to
every CUDA GPU but SM 12.x), FlashInfer's SM120 attention (SM 12.x's default: RTX 5090, RTX PRO 6000
Blackwell) and FlashInfer's TRT-LLM-gen attention (``FLASHINFER_MLA_SPARSE_DSV4`` named on SM 10.x: the
plain row of the KV cache dtype, fp8 / bfloat16 / auto, with 512-byte pages). The cases
(``deepseek_v4_gpu_cases.py``) are recorded on every release by ``record_deepseek_v4_gpus.py`` through
``tests/data/gpus/run_oracle_as.py`` (``data/deepseek_v4/gpus-<release>.json``); nothing recorded comes
from dryboot."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import deepseek_v4_gpu_cases as C
import e2e_harness as H

pytestmark = pytest.mark.fidelity

#: case id -> why dryboot refuses by name what vLLM serves (the same on every release recorded)
REFUSED_SERVED = {
    "rtx5090-flashmla": "FlashMLA's layers named on SM 12.x (its kernels are built for SM 9.0 / 10.x): not verified",
}


@pytest.mark.parametrize("version", C.RELEASES)
def test_every_case_is_recorded(version: str) -> None:
    rec = C.recorded(version)
    assert list(rec) == list(C.CASES)
    for cid, row in rec.items():
        assert (row["config"], row["argv"], row["gpu"]) == C.CASES[cid], cid


@pytest.mark.parametrize("version", C.RELEASES)
@pytest.mark.parametrize("cid", list(C.CASES))
def test_dryboot_agrees_or_refuses_by_name(tmp_path: Path, version: str, cid: str) -> None:
    name, argv, gpu = C.CASES[cid]
    v = C.recorded(version)[cid]["vllm"]
    case = H.Case(cid, "deepseek-v4", H._write_config(tmp_path, cid, C.config(name)), [*argv, "--gpu", gpu])
    d = H.run_dryboot(case, version)
    if cid in REFUSED_SERVED and v.get("ok"):
        assert d.get("refused"), (cid, d)
        return
    verdict = H.compare(v, d)
    assert verdict["agree"], (verdict["diffs"], d.get("error"))
    if v.get("ok"):
        # the block line: which backends vLLM names choosing the block (FlashInfer's SM120 layers on SM 12.x)
        setting = [ln for ln in v["kv_log"] if ln.startswith("Setting kv cache block size")][:1]
        assert [ln for ln in d["log"] if ln.startswith("Setting kv cache block size")][:1] == setting, cid
