"""DeepSeek-V4 (``DeepseekV4ForCausalLM``, ``vllm/models/deepseek_v4/``): its fp8 cases.

vLLM 0.28.0 builds DeepSeek-V4 only with an fp8 KV cache, so few of the architecture tests' 24
flag sets (``test_architectures.py``, on ``data/architectures/DeepseekV4ForCausalLM.json``) are
served. These cases add fp8 flag sets (:data:`FP8_CASES`: tensor and pipeline parallelism, block
sizes, lengths, auto-fit, batch limits, prefix caching, MTP, hidden-state extraction, a block
override, decode context parallelism) on that config and on ``data/deepseek_v4/interleaved.json``
(6 layers, ratios 4/128/4/4/1/128, a 64-token window), ``c4_first.json`` (5 layers, all ratio 4)
and ``c128_only.json`` (ratios 128/1/128/128).
``data/deepseek_v4/recorded.json`` holds what vLLM 0.28.0 answered for each (written by
``record_deepseek_v4.py`` from ``src/dryboot/boot/engine_start.py``; nothing in it comes from dryboot); dryboot must
agree with every one.
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

ARCH = "DeepseekV4ForCausalLM"
DATA = Path(__file__).resolve().parent / "data" / "deepseek_v4"
RECORDED = DATA / "recorded.json"
#: config name -> file
CONFIGS = {
    "tiny": T.DATA / f"{ARCH}.json",
    "interleaved": DATA / "interleaved.json",
    "c4_first": DATA / "c4_first.json",
    "c128_only": DATA / "c128_only.json",
}

_MEM = ["--kv-cache-memory-bytes", "1000000000", "--kv-cache-dtype", "fp8"]
_MTP1 = json.dumps({"method": "mtp", "num_speculative_tokens": 1})
_MTP3 = json.dumps({"method": "mtp", "num_speculative_tokens": 3})


def _extract(layers: list[int]) -> str:
    return json.dumps(
        {
            "method": "extract_hidden_states",
            "num_speculative_tokens": 1,
            "draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": layers}},
        }
    )


_SETS: list[list[str]] = [
    [],
    ["--max-model-len", "8192"],
    ["--max-model-len", "4096", "-tp", "2"],
    ["--max-model-len", "8192", "-tp", "4"],
    ["--max-model-len", "8192", "-pp", "2"],
    ["--max-model-len", "8192", "--block-size", "128"],
    ["--max-model-len", "8192", "--block-size", "512"],
    ["--max-model-len", "8192", "--block-size", "16"],
    ["--max-model-len", "8192", "--block-size", "64"],
    ["--max-model-len", "8192", "--block-size", "256"],
    ["--max-model-len", "-1"],
    ["--max-model-len", "1000"],
    ["--max-model-len", "65536", "-tp", "2", "--enable-prefix-caching"],
    ["--max-model-len", "8192", "--max-num-seqs", "8"],
    ["--max-model-len", "8192", "--max-num-batched-tokens", "2048"],
    ["--max-model-len", "8192", "--enable-prefix-caching"],
    ["--max-model-len", "8192", "--no-enable-prefix-caching"],
    ["--max-model-len", "8192", "--speculative-config", _MTP1],
    ["--max-model-len", "4096", "-tp", "2", "--speculative-config", _MTP3],
    ["--max-model-len", "8192", "--num-gpu-blocks-override", "100"],
    ["--max-model-len", "8192", "--kv-cache-dtype", "fp8_e4m3"],
    ["--max-model-len", "8192", "--kv-cache-dtype", "fp8_ds_mla"],
    ["--max-model-len", "8192", "--dtype", "float16"],
    ["--max-model-len", "8192", "--max-num-seqs", "1", "--max-num-batched-tokens", "8192"],
    ["--max-model-len", "2048", "--no-async-scheduling"],
    ["--max-model-len", "8192", "-dcp", "2", "-tp", "2"],
    ["--max-model-len", "16384", "--block-size", "128", "--max-num-seqs", "32"],
    ["--max-model-len", "3000", "-pp", "2", "--block-size", "512"],
]
_MORE: list[list[str]] = [
    ["--max-model-len", "8192", "--speculative-config", _extract([0, 2])],
    ["--max-model-len", "4096", "--dtype", "float16", "--speculative-config", _extract([1])],
    ["--max-model-len", "8192", "-pp", "2", "--speculative-config", _MTP1],
    ["--max-model-len", "8192", "--num-gpu-blocks-override", "5000"],
    ["--max-model-len", "-1", "--kv-cache-memory-bytes", "20000000"],
    ["--max-model-len", "65536", "--kv-cache-memory-bytes", "30000000"],
    ["--max-model-len", "8192", "--attention-backend", "FLASHMLA"],
    ["--max-model-len", "8192", "-tp", "3"],
    ["--max-model-len", "8192", "--attention-backend", "FLASHINFER_MLA_SPARSE"],
    ["--max-model-len", "8192", "--attention-backend", "FLASHMLA_SPARSE", "-tp", "2"],
]
#: (config name, flag set); vLLM 0.28.0 builds DeepSeek-V4 only with an fp8 KV cache
FP8_CASES: list[tuple[str, list[str]]] = [
    *(("tiny", _MEM + s) for s in _SETS + _MORE),
    *(("interleaved", _MEM + s) for s in _SETS[:7] + _SETS[10:19] + _MORE[:6]),
    *(
        (name, _MEM + s)
        for name in ("c4_first", "c128_only")
        for s in [_SETS[1], _SETS[4], _SETS[5], _SETS[10], _SETS[17]]
    ),
]


def make_case(index: int, config: str, argv: list[str]) -> H.Case:
    model = T.materialize(ARCH, CONFIGS[config])
    return H.Case(id=f"{ARCH}:{config}#{index}", family=f"arch:{ARCH}", model=model, argv=argv, source=config)


def recorded() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(RECORDED.read_text())["cases"]
    return rows


def test_recorded_cases_are_this_modules_cases() -> None:
    assert [(r["config"], r["argv"]) for r in recorded()] == [(c, T.portable(a)) for c, a in FP8_CASES]


def test_vllm_serves_enough_distinct_fp8_cases() -> None:
    served = [r for r in recorded() if r["vllm"]["ok"]]
    assert len(served) >= 20


#: recorded cases dryboot answers otherwise today (strict: a known case that agrees fails the test):
#: (config, flags) -> why
KNOWN: dict[tuple[str, str], str] = {}


def _known(row: dict[str, Any]) -> str | None:
    flags = " ".join(row["argv"])
    return next((why for (config, f), why in KNOWN.items() if row["config"] == config and f in flags), None)


def test_dryboot_matches_recorded_oracle() -> None:
    problems = []
    rows = recorded()
    for i, row in enumerate(rows):
        case = make_case(i, row["config"], T.local(row["argv"]))
        d = H.run_dryboot(case, "0.28.0")
        verdict = H.compare(row["vllm"], d)
        known = _known(row)
        if known is not None:
            if verdict["agree"]:
                problems.append(f"{case.id} now agrees: remove it from KNOWN ({known})")
            continue
        if not verdict["agree"]:
            answers = f"vLLM:    {H._answer(row['vllm'], vllm=True)}\n    dryboot: {H._answer(d, vllm=False)}"
            problems.append(f"{case.command('0.28.0')}\n    {answers}")
    assert not problems, f"{len(problems)}/{len(rows)} disagree:\n" + "\n".join(problems)


#: release planned -> what dryboot's KV cache refusal of the auto KV dtype names: the releases whose
#: ``_resolve_dsv4_kv_cache_dtype`` asserts fp8 (0.27.1-0.29.0) refuse the dtype as that release
#: does; 0.30.0+ take ``auto`` as fp8 there, so dryboot refuses the release (only 0.28.0's packed
#: KV cache is modelled), naming it
_AUTO_DTYPE_REFUSALS = {
    "0.27.1": ("--kv-cache-dtype", "vLLM 0.27.1 builds it only with an fp8 KV cache (AssertionError"),
    "0.28.0": ("--kv-cache-dtype", "vLLM 0.28.0 builds it only with an fp8 KV cache (AssertionError"),
    "0.29.0": ("--kv-cache-dtype", "vLLM 0.29.0 builds it only with an fp8 KV cache (AssertionError"),
    "0.30.0": ("--vllm-version", "KV cache on vLLM 0.30.0 is not modelled"),
    "0.33.0": ("--vllm-version", "KV cache on vLLM 0.33.0 is not modelled"),
}


@pytest.mark.parametrize("version", sorted(_AUTO_DTYPE_REFUSALS))
def test_kv_refusal_names_the_release_planned(version: str) -> None:
    """The auto-KV-dtype case is refused on every release, by what that release does, in words that
    name the release planned (not 0.28.0's assertion on every release)."""
    flag, words = _AUTO_DTYPE_REFUSALS[version]
    case = make_case(0, "interleaved", ["--kv-cache-memory-bytes", "1000000000", "--max-model-len", "8192"])
    got = H.run_dryboot(case, version)
    assert got.get("refused"), got
    error = str(got["error"])
    assert f"error: {flag}" in error and words in error, error
    if version != "0.28.0":
        assert "vLLM 0.28.0 builds" not in error, error
