"""DeepSeek-V4 (``DeepseekV4ForCausalLM``, ``vllm/models/deepseek_v4/``): its fp8 cases.

vLLM 0.27.1-0.29.0 build DeepSeek-V4 only with an fp8 KV cache, so few of the architecture tests' 24
flag sets (``test_architectures.py``, on ``data/architectures/DeepseekV4ForCausalLM.json``) are
served. These cases add fp8 flag sets (:data:`FP8_CASES`: tensor and pipeline parallelism, block
sizes, lengths, auto-fit, batch limits, prefix caching, MTP, hidden-state extraction, a block
override, decode context parallelism) on that config and on ``data/deepseek_v4/interleaved.json``
(6 layers, ratios 4/128/4/4/1/128, a 64-token window), ``c4_first.json`` (5 layers, all ratio 4)
and ``c128_only.json`` (ratios 128/1/128/128).
``data/deepseek_v4/recorded.json`` holds what vLLM 0.28.0 answered for each, ``recorded-<release>.json``
what each other release of :data:`RELEASES` answered (written by ``record_deepseek_v4.py`` from
``src/dryboot/boot/engine_start.py``; nothing in them comes from dryboot); dryboot must agree with every one.
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
#: the releases recorded (each one's answers to every case of :data:`FP8_CASES`)
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")


def record_path(version: str) -> Path:
    """Where ``record_deepseek_v4.py`` keeps ``version``'s answers (0.28.0's first: ``recorded.json``)."""
    return RECORDED if version == "0.28.0" else DATA / f"recorded-{version}.json"


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


def recorded(version: str = "0.28.0") -> list[dict[str, Any]]:
    doc = json.loads(record_path(version).read_text())
    assert doc["vllm"] == version
    rows: list[dict[str, Any]] = doc["cases"]
    return rows


@pytest.mark.parametrize("version", RELEASES)
def test_recorded_cases_are_this_modules_cases(version: str) -> None:
    assert [(r["config"], r["argv"]) for r in recorded(version)] == [(c, T.portable(a)) for c, a in FP8_CASES]


@pytest.mark.parametrize("version", RELEASES)
def test_vllm_serves_enough_distinct_fp8_cases(version: str) -> None:
    served = [r for r in recorded(version) if r["vllm"]["ok"]]
    assert len(served) >= 50


#: recorded cases dryboot answers otherwise today (strict: a known case that agrees fails the test):
#: (config, flags) -> why
KNOWN: dict[tuple[str, str], str] = {}


def _known(row: dict[str, Any]) -> str | None:
    flags = " ".join(row["argv"])
    return next((why for (config, f), why in KNOWN.items() if row["config"] == config and f in flags), None)


@pytest.mark.parametrize("version", RELEASES)
def test_dryboot_matches_recorded_oracle(version: str) -> None:
    problems = []
    rows = recorded(version)
    for i, row in enumerate(rows):
        case = make_case(i, row["config"], T.local(row["argv"]))
        d = H.run_dryboot(case, version)
        verdict = H.compare(row["vllm"], d)
        known = _known(row)
        if known is not None:
            if verdict["agree"]:
                problems.append(f"{case.id} now agrees: remove it from KNOWN ({known})")
            continue
        if not verdict["agree"]:
            answers = f"vLLM:    {H._answer(row['vllm'], vllm=True)}\n    dryboot: {H._answer(d, vllm=False)}"
            problems.append(f"{case.command(version)}\n    {answers}")
    assert not problems, f"{len(problems)}/{len(rows)} disagree:\n" + "\n".join(problems)


#: releases whose ``_resolve_dsv4_kv_cache_dtype`` (``models/deepseek_v4/attention.py``) asserts an
#: fp8 KV cache; 0.30.0+ take ``auto`` as fp8 there and refuse any other dtype (ValueError)
_FP8_ASSERTED = ("0.27.1", "0.28.0", "0.29.0")


@pytest.mark.parametrize("version", RELEASES)
def test_auto_kv_dtype_as_the_release_planned_takes_it(version: str) -> None:
    """The auto KV dtype is refused where that release asserts fp8, in words that name the release
    planned (not 0.28.0's assertion on every release); 0.30.0+ plan it as the fp8 case."""
    mem = ["--kv-cache-memory-bytes", "1000000000", "--max-model-len", "8192"]
    got = H.run_dryboot(make_case(0, "interleaved", mem), version)
    if version in _FP8_ASSERTED:
        assert got.get("refused"), got
        error = str(got["error"])
        assert "error: --kv-cache-dtype" in error, error
        assert f"vLLM {version} builds it only with an fp8 KV cache (AssertionError" in error, error
        return
    fp8 = H.run_dryboot(make_case(0, "interleaved", [*mem, "--kv-cache-dtype", "fp8"]), version)
    assert not got.get("refused") and not fp8.get("refused"), (got, fp8)
    assert H.compare({**fp8, "ok": True}, got)["agree"], (got, fp8)


@pytest.mark.parametrize("version", [v for v in RELEASES if v not in _FP8_ASSERTED])
def test_a_float_kv_dtype_is_refused_as_vllm_refuses_it(version: str) -> None:
    """0.30.0+ build the fp8_ds_mla layout only from an fp8 (or auto) KV cache dtype: ``bfloat16``
    is refused with vLLM's words (``_resolve_dsv4_kv_cache_dtype``'s ValueError)."""
    argv = ["--kv-cache-memory-bytes", "1000000000", "--max-model-len", "8192", "--kv-cache-dtype", "bfloat16"]
    got = H.run_dryboot(make_case(0, "interleaved", argv), version)
    assert got.get("refused"), got
    assert "DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got bfloat16" in str(got["error"]), got


@pytest.mark.parametrize("version", RELEASES)
def test_a_vision_tower_is_planned_as_the_text_models_cache(version: str) -> None:
    """0.30.0+ serve a ``DeepseekV4ForCausalLM`` config with ``vision_n_layers > 0`` as
    ``DeepseekV4ForConditionalGeneration``, whose KV cache is the text model's (recorded in
    ``test_deepseek_v4_vl.py``): planned as the config without the tower, except on 0.33.0, whose
    config class (transformers') defines none of the tower's other keys (AttributeError: refused by
    name). Earlier releases read no vision field and build the text model."""
    config = json.loads(CONFIGS["interleaved"].read_text())
    model = H._write_config(H.default_workdir(), "dsv4-vision", {**config, "vision_n_layers": 2})
    plain = H.Case(id="plain", family=f"arch:{ARCH}", model=T.materialize(ARCH, CONFIGS["interleaved"]), argv=_MEM)
    got = H.run_dryboot(H.Case(id="vision", family=f"arch:{ARCH}", model=model, argv=_MEM), version)
    if version == "0.33.0":
        assert got.get("refused") and "has no attribute 'vision_dim'" in str(got["error"]), got
        return
    assert H.compare({**H.run_dryboot(plain, version), "ok": True}, got)["agree"], got
