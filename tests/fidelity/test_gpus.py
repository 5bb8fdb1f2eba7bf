"""Per-GPU verification: dryboot's ``--gpu`` against vLLM's own engine start on that GPU.

``data/gpus/vllm-X.json`` holds what vLLM X answered, for each GPU of :data:`GPUS`, on the
recorded flag sets of :data:`ARCHITECTURES` (``data/architectures/recorded.json``'s argv: the
cases ``test_architectures.py`` checks on the H200), written by ``record_gpus.py`` through
``tests/data/gpus/run_oracle_as.py`` (the e2e oracle answering as that row of ``gpus.toml``:
capability, NVML name and totals, SM count faked; FlashInfer arm ``cubin``, as on vLLM's
images). Nothing recorded comes from dryboot. The default run compares dryboot (``plan --gpu``,
in-process) with every recorded answer.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm.versions import VersionRules

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T

pytestmark = pytest.mark.fidelity

DATA = Path(__file__).resolve().parent / "data" / "gpus"
#: GPUs recorded on 0.28.0 (other releases: a subset): SM 8.6 twice, 8.0, 8.9 twice, SM 9.0 twice,
#: SM 10.0 and SM 12.0
GPUS = ("RTX 3090", "A10G", "A100-80GB", "RTX 4090", "L40S", "H100", "H200", "B200", "RTX 5090")
#: Architectures whose engine start the GPU changes in different ways; a MoE model first (vLLM
#: creates its expert-parallel group only when the first model a process builds is MoE).
ARCHITECTURES = (
    "Qwen3MoeForCausalLM",
    "LlamaForCausalLM",
    "Qwen3ForCausalLM",
    "MistralForCausalLM",
    "Qwen3NextForCausalLM",
    "NemotronHForCausalLM",
    "FalconH1ForCausalLM",
    "GptOssForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM",
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "Phi3ForCausalLM",
    # DeepSeek-V2 without MLA (plain attention; DeepSeek-OCR's language model): 0.28.0 and 0.33.0
    "DeepseekOCRForCausalLM",
    # DeepSeek-OCR's wrapper on RSWAAttention: FlashAttention 4 on SM 9.x-11.x, Triton elsewhere
    # (A100-80GB and H100, 0.28.0 and 0.33.0)
    "UnlimitedOCRForCausalLM",
    # lightning-attention states beside MLA layers: the MLA backend (and so the hybrid block) per GPU
    # (A100-80GB, L40S, B200 and RTX 5090 on 0.28.0; A100-80GB and B200 on 0.33.0)
    "BailingMoeV2_5ForCausalLM",
)


def recorded_path(version: str) -> Path:
    return DATA / f"vllm-{version}.json"


def cases() -> list[tuple[H.Case, list[str]]]:
    """Every architecture's recorded flag sets as cases (and their portable argv)."""
    rec = T.load_recorded()
    out = []
    for arch in ARCHITECTURES:
        # generating the flag sets writes the drafter configs they name into the work directory
        T.flag_sets(arch, T.tiny_configs()[arch])
        for i, r in enumerate(rec[arch]):
            out.append((T.make_case(arch, i, T.local(r["argv"])), r["argv"]))
    return out


_WRITTEN: set[str] = set()


def _drafters(arch: str) -> None:
    """Write the drafter configs ``arch``'s flag sets name (once per process)."""
    if arch not in _WRITTEN:
        T.flag_sets(arch, T.tiny_configs()[arch])
        _WRITTEN.add(arch)


def load(version: str = "0.28.0") -> dict[str, dict[str, dict[str, Any]]]:
    """GPU -> case id -> {argv, vllm} of ``data/gpus/vllm-<version>.json``."""
    path = recorded_path(version)
    if not path.exists():
        return {}
    data: dict[str, dict[str, dict[str, Any]]] = json.loads(path.read_text())["gpus"]
    return data


def _case(gpu: str, case_id: str, argv: list[str]) -> H.Case:
    arch, i = case_id.split("#")
    _drafters(arch)
    case = T.make_case(arch, int(i), T.local(argv))
    case.argv = [*case.argv, "--gpu", gpu]
    return case


#: Recorded cases dryboot is known to answer differently, by (release or "*", GPU, case id), with
#: the reason:
#: each must still disagree (an agreement means it is fixed and the entry goes).
#: The oracle's own limit, not vLLM's answer: with an nvfp4 KV cache on SM 10.x, FlashInfer's TRT-LLM
#: path allocates a CUDA tensor while the model is built, which the CPU oracle cannot
#: ("AssertionError: Torch not compiled with CUDA enabled"; 0.33: "Found no NVIDIA driver"); a
#: real B200 with flashinfer-cubin serves it on FLASHINFER (the recorded backend matrix), which is
#: what dryboot plans.
_NVFP4_ON_CPU = "the CPU oracle cannot build FlashInfer's nvfp4 TRT-LLM path (a CUDA tensor at model build)"
#: not a GPU rule (the same on every GPU, the H200 included): 0.27.1 stores int4_per_token_head
#: one byte per element (a release rule dryboot's 0.27.1 table lacks)
#: Recorded cases dryboot is known to answer differently, by (release, GPU, case id), with the
#: reason: each must still disagree (an agreement means it is fixed and the entry goes).
KNOWN: dict[tuple[str, str, str], str] = {
    ("0.27.1", "B200", "Gemma3ForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.27.1", "B200", "Gemma3ForCausalLM#22"): _NVFP4_ON_CPU,
    ("0.27.1", "B200", "GptOssForCausalLM#12"): _NVFP4_ON_CPU,
    ("0.27.1", "B200", "LlamaForCausalLM#9"): _NVFP4_ON_CPU,
    ("0.27.1", "B200", "Qwen3ForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.27.1", "B200", "Qwen3MoeForCausalLM#16"): _NVFP4_ON_CPU,
    ("0.27.1", "B200", "Qwen3MoeForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.28.0", "B200", "Gemma3ForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.28.0", "B200", "Gemma3ForCausalLM#22"): _NVFP4_ON_CPU,
    ("0.28.0", "B200", "GptOssForCausalLM#12"): _NVFP4_ON_CPU,
    ("0.28.0", "B200", "LlamaForCausalLM#9"): _NVFP4_ON_CPU,
    ("0.28.0", "B200", "MistralForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.28.0", "B200", "Qwen3ForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.28.0", "B200", "Qwen3MoeForCausalLM#16"): _NVFP4_ON_CPU,
    ("0.28.0", "B200", "Qwen3MoeForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.29.0", "B200", "Gemma3ForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.29.0", "B200", "Gemma3ForCausalLM#22"): _NVFP4_ON_CPU,
    ("0.29.0", "B200", "GptOssForCausalLM#12"): _NVFP4_ON_CPU,
    ("0.29.0", "B200", "LlamaForCausalLM#9"): _NVFP4_ON_CPU,
    ("0.29.0", "B200", "MistralForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.29.0", "B200", "Qwen3ForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.29.0", "B200", "Qwen3MoeForCausalLM#16"): _NVFP4_ON_CPU,
    ("0.29.0", "B200", "Qwen3MoeForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.30.0", "B200", "Gemma3ForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.30.0", "B200", "Gemma3ForCausalLM#22"): _NVFP4_ON_CPU,
    ("0.30.0", "B200", "GptOssForCausalLM#12"): _NVFP4_ON_CPU,
    ("0.30.0", "B200", "LlamaForCausalLM#9"): _NVFP4_ON_CPU,
    ("0.30.0", "B200", "MistralForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.30.0", "B200", "Qwen3ForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.30.0", "B200", "Qwen3MoeForCausalLM#16"): _NVFP4_ON_CPU,
    ("0.30.0", "B200", "Qwen3MoeForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.31.0", "B200", "Gemma3ForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.31.0", "B200", "Gemma3ForCausalLM#22"): _NVFP4_ON_CPU,
    ("0.31.0", "B200", "GptOssForCausalLM#12"): _NVFP4_ON_CPU,
    ("0.31.0", "B200", "LlamaForCausalLM#9"): _NVFP4_ON_CPU,
    ("0.31.0", "B200", "MistralForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.31.0", "B200", "Qwen3ForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.31.0", "B200", "Qwen3MoeForCausalLM#16"): _NVFP4_ON_CPU,
    ("0.31.0", "B200", "Qwen3MoeForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.32.0", "B200", "Gemma3ForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.32.0", "B200", "Gemma3ForCausalLM#22"): _NVFP4_ON_CPU,
    ("0.32.0", "B200", "GptOssForCausalLM#12"): _NVFP4_ON_CPU,
    ("0.32.0", "B200", "LlamaForCausalLM#9"): _NVFP4_ON_CPU,
    ("0.32.0", "B200", "MistralForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.32.0", "B200", "Qwen3ForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.32.0", "B200", "Qwen3MoeForCausalLM#16"): _NVFP4_ON_CPU,
    ("0.32.0", "B200", "Qwen3MoeForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.33.0", "B200", "Gemma3ForCausalLM#21"): _NVFP4_ON_CPU,
    ("0.33.0", "B200", "Gemma3ForCausalLM#22"): _NVFP4_ON_CPU,
    ("0.33.0", "B200", "GptOssForCausalLM#12"): _NVFP4_ON_CPU,
    ("0.33.0", "B200", "LlamaForCausalLM#9"): _NVFP4_ON_CPU,
    ("0.33.0", "B200", "MistralForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.33.0", "B200", "Qwen3ForCausalLM#13"): _NVFP4_ON_CPU,
    ("0.33.0", "B200", "Qwen3MoeForCausalLM#16"): _NVFP4_ON_CPU,
    ("0.33.0", "B200", "Qwen3MoeForCausalLM#21"): _NVFP4_ON_CPU,
}


def disagreements(gpu: str, version: str = "0.28.0") -> tuple[int, list[str]]:
    """(cases, the disagreements outside :data:`KNOWN` and the KNOWN entries that now agree)."""
    rows = load(version)[gpu]
    out = []
    for case_id, r in rows.items():
        c = _case(gpu, case_id, r["argv"])
        d = H.run_dryboot(c, version)
        verdict = H.compare(r["vllm"], d)
        if (version, gpu, case_id) in KNOWN:
            if verdict["agree"]:
                out.append(f"{gpu} {case_id} now agrees: remove it from KNOWN")
            continue
        if not verdict["agree"]:
            answers = f"vLLM:    {H._answer(r['vllm'], vllm=True)}\n    dryboot: {H._answer(d, vllm=False)}"
            out.append(f"{c.command(version)}\n    {answers}")
    return len(rows), out


def test_recorded_gpus_cover_the_issue() -> None:
    """>= 2,000 cases over >= 8 GPUs, >= 3 of them SM 8.x and >= 1 SM 10.x (issue 21)."""
    from dryboot.vllm.gpus import gpu_table

    rec = load()
    assert sum(len(v) for v in rec.values()) >= 2000
    majors = [gpu_table()[g].capability[0] for g in rec]
    assert len(rec) >= 8 and majors.count(8) >= 3 and 10 in majors


#: every release recorded (``data/gpus/vllm-X.json``)
VERSIONS = sorted(p.stem.removeprefix("vllm-") for p in DATA.glob("vllm-*.json"))


@pytest.mark.parametrize(("version", "gpu"), [(v, g) for v in VERSIONS for g in sorted(load(v))])
def test_dryboot_matches_vllm_on_gpu(version: str, gpu: str) -> None:
    n, problems = disagreements(gpu, version)
    assert not problems, f"{gpu} on {version}: {len(problems)}/{n} disagree:\n" + "\n".join(problems)


def test_sparse_mla_pool_row_aligned_switch_is_needed(flip_rules: Callable[..., VersionRules]) -> None:
    """Flipping ``sparse_mla_pool_row_aligned`` off for 0.31.0 loses vLLM's 27,383 blocks for
    DeepSeek-V3.2's tiny config on a B200 (FLASHINFER_MLA_SPARSE: the pool's 328,704 bytes per
    block rounded up to 1,152-byte rows; 27,447 unrounded, as 0.30 and 0.32 give)."""
    cid, gpu = "DeepseekV32ForCausalLM#0", "B200"
    r = load("0.31.0")[gpu][cid]
    assert r["vllm"]["num_blocks"] == 27383
    c = _case(gpu, cid, r["argv"])
    assert H.compare(r["vllm"], H.run_dryboot(c, "0.31.0"))["agree"]
    flip_rules("0.31.0", sparse_mla_pool_row_aligned=False)
    assert not H.compare(r["vllm"], H.run_dryboot(c, "0.31.0"))["agree"]
