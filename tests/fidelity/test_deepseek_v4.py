"""DeepSeek-V4 (``DeepseekV4ForCausalLM``, ``vllm/models/deepseek_v4/``): refused by name, on the
evidence of what vLLM 0.28.0 itself does with it.

``data/deepseek_v4/DeepseekV4ForCausalLM.json`` is a tiny config (4 layers, ``compress_ratios``
0/4/128/4 plus the MTP layer's, a 128-token window). Its cases are the architecture tests' 24
flag sets (:func:`test_architectures.flag_sets`, mostly without an fp8 KV cache) and
:data:`FP8_FLAG_SETS` (fp8: tensor and pipeline parallelism, block sizes, lengths, auto-fit,
batch limits, prefix caching, MTP, a block override, decode context parallelism).
``data/deepseek_v4/recorded.json`` holds what vLLM 0.28.0 answered for each (written by
``record_deepseek_v4.py`` from ``e2e_oracle.py``; nothing in it comes from dryboot).

dryboot does not plan this architecture (its packed multi-group KV cache is not modelled: see
``NOT_MODELLED`` in ``dryboot/vllm/models/registry.py``); these tests check that it refuses every
recorded case by name (exit 2), and that the facts its refusal states are what vLLM answered.
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
CONFIG = DATA / f"{ARCH}.json"
RECORDED = DATA / "recorded.json"

_MEM = ["--kv-cache-memory-bytes", "1000000000", "--kv-cache-dtype", "fp8"]
_MTP1 = json.dumps({"method": "mtp", "num_speculative_tokens": 1})
_MTP3 = json.dumps({"method": "mtp", "num_speculative_tokens": 3})
#: fp8 flag sets (vLLM 0.28.0 builds DeepSeek-V4 only with an fp8 KV cache)
FP8_FLAG_SETS: list[list[str]] = [
    _MEM + extra
    for extra in (
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
    )
]


def flag_sets() -> list[list[str]]:
    """The architecture tests' flag sets for this config, then :data:`FP8_FLAG_SETS`."""
    return [*T.flag_sets(ARCH, CONFIG), *FP8_FLAG_SETS]


def make_case(index: int, argv: list[str]) -> H.Case:
    model = T.materialize(ARCH, CONFIG)
    return H.Case(id=f"{ARCH}#{index}", family=f"arch:{ARCH}", model=model, argv=argv, source=CONFIG.name)


def recorded() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(RECORDED.read_text())["cases"]
    return rows


def _fp8(argv: list[str]) -> bool:
    dtypes = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--kv-cache-dtype"]
    return bool(dtypes) and dtypes[-1].startswith("fp8")


def _block(argv: list[str]) -> int | None:
    sizes = [int(argv[i + 1]) for i, a in enumerate(argv[:-1]) if a == "--block-size"]
    return sizes[-1] if sizes else None


def test_recorded_cases_are_this_modules_flag_sets() -> None:
    assert [r["argv"] for r in recorded()] == [T.portable(a) for a in flag_sets()]


def test_dryboot_refuses_every_recorded_case() -> None:
    problems = []
    for i, row in enumerate(recorded()):
        case = make_case(i, T.local(row["argv"]))
        d = H.run_dryboot(case, "0.28.0")
        error = str(d.get("error") or "")
        # what vLLM serves is refused by name; what it refuses, dryboot refuses too (by name, or a flag
        # it does not take: -dcp)
        named = f"{ARCH} is not modelled" in error and "fp8" in error
        if d.get("rc") != 2 or not (named or not row["vllm"]["ok"]):
            problems.append(f"{case.command('0.28.0')}\n    dryboot: rc={d.get('rc')} {error[:200]}")
    assert not problems, "\n".join(problems)


def test_vllm_serves_it_only_with_an_fp8_kv_cache() -> None:
    """The refusal says vLLM 0.28.0 builds it only with an fp8 KV cache."""
    rows = recorded()
    for row in rows:
        if not _fp8(row["argv"]):
            assert not row["vllm"]["ok"], row["argv"]
    # the model's attention layer asserts it (the other refusals come before the model is built)
    assert any("only supports fp8 kv-cache" in str(r["vllm"].get("error")) for r in rows if not _fp8(r["argv"]))
    served = [r for r in rows if r["vllm"]["ok"]]
    assert len(served) >= 20
    assert len({json.dumps(r["argv"]) for r in served}) == len(served)


def test_vllm_fails_below_block_128_and_with_dcp() -> None:
    """The refusal says vLLM 0.28.0 fails below ``--block-size`` 128 (a C128 layer's storage
    block, block / 128, is 0 tokens) and with decode context parallelism."""
    for row in recorded():
        argv, v = row["argv"], row["vllm"]
        block = _block(argv)
        if _fp8(argv) and block is not None and block < 128:
            assert not v["ok"] and "ZeroDivisionError" in v["error"], argv
        if _fp8(argv) and "-dcp" in argv:
            assert not v["ok"] and "DCP not support sliding window" in v["error"], argv


def test_vllm_groups_are_the_kinds_the_refusal_names() -> None:
    """Served cases: one MLA group (compressed MLA layers and indexer key caches at the cache
    block) and sliding-window MLA groups (per-layer windows, compressor states), as the refusal
    describes."""
    for row in recorded():
        v = row["vllm"]
        if not v["ok"]:
            continue
        kinds = [g[0] for g in v["groups"]]
        assert kinds[0] == "MLAAttention" and kinds.count("MLAAttention") == 1, row["argv"]
        assert set(kinds[1:]) == {"SlidingWindowMLA"}, row["argv"]
        assert v["groups"][0][1] == v["block_size"], row["argv"]
