"""The facts a log states outside its args line (dryboot.checklog.facts): read with their line,
used as known flags and as the GPU, and a flag given to check-log that contradicts one refused
naming both. The lines quoted are vLLM's wording as posted (sources in the comments)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from dryboot.checklog.check import LogReport, check_lines
from dryboot.checklog.facts import read_facts
from dryboot.checklog.parse import LogLine, iter_boots, iter_numbered_log_lines, iter_relevant_lines, read_log

from .conftest import DATA, REPO
from .public_verdicts import PUBLIC, body

QWEN_NEXT = str(REPO / "examples" / "models" / "Qwen3-Next-80B-A3B-Thinking.config.json")
QWEN3_8B = str(PUBLIC / "configs" / "Qwen--Qwen3-8B.config.json")
LINE = LogLine(1, "EngineCore", 1, "INFO", None, "")


def facts_of(message: str) -> dict[str, str]:
    return {f.name: f.value for f in read_facts(message, LINE)}


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        # vLLM's config/cache.py, as posted in vllm-project/vllm #25350's thread and club-3090 logs
        ("Using fp8 data type to store kv cache. It reduces the GPU memory footprint and boosts the performance. "
         "Meanwhile, it may cause accuracy drop without a proper scaling factor", {"kv_cache_dtype": "fp8"}),
        # FlashInfer on a DGX Spark (vLLM 0.27.2rc1, as a posted note quotes it)
        ("FlashInfer resolved query dtypes: prefill=bfloat16, decode=bfloat16, decode_backend=xqa, "
         "kv_cache_dtype=torch.float8_e4m3fn, arch=sm121", {"kv_cache_dtype": "fp8", "gpu_capability": "12.1"}),
        ("Enabling num_speculative_tokens > 1 will run multiple times of forward on same MTP layer,which may result "
         "in lower acceptance rate", {"num_speculative_tokens_over_1": "mtp"}),
        ("Using FLASHINFER attention backend out of potential backends: ['FLASHINFER', 'TRITON_ATTN'].",
         {"attention_backend": "FLASHINFER"}),
        ("Using AttentionBackendEnum.FLASHINFER backend.", {"attention_backend": "FLASHINFER"}),
        ("Using Flash Attention backend on V1 engine.", {"attention_backend": "Flash Attention"}),
        ("Free memory on device (112.62/121.69 GiB) on startup. Desired GPU memory utilization is (0.3, 36.51 GiB).",
         {"gpu_total_gib": "121.69"}),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.98 GiB. GPU 0 has a total capacity of "
         "23.56 GiB of which 1.02 GiB is free.", {"failure": "CUDA out of memory", "gpu_total_gib": "23.56"}),
    ],
)  # fmt: skip
def test_a_line_states_its_facts(message: str, expected: dict[str, str]) -> None:
    assert facts_of(message) == expected


def test_the_engine_config_line_even_abridged() -> None:
    """Each key is read on its own: a document that abridged the line with '…' keeps the keys
    it shows (the keys and values as vLLM 0.28.0 prints them in tests/data/checklog/mtp.log)."""
    line = (
        "Initializing a V1 LLM engine (v0.28.0) with config: model='Qwen/Qwen3-Next-80B-A3B-Thinking', "
        "speculative_config=SpeculativeConfig(method='mtp', model='Qwen/Qwen3-Next-80B-A3B-Thinking', "
        "num_spec_tokens=3), … dtype=torch.bfloat16, max_seq_len=262144, … tensor_parallel_size=4, "
        "pipeline_parallel_size=1, … quantization=fp8, enforce_eager=False, kv_cache_dtype=auto, … "
        "enable_prefix_caching=True, …"
    )
    assert facts_of(line) == {
        "speculative_method": "mtp",
        "num_speculative_tokens": "3",
        "dtype": "bfloat16",
        "max_model_len": "262144",
        "tensor_parallel_size": "4",
        "pipeline_parallel_size": "1",
        "quantization": "fp8",
        "kv_cache_dtype": "auto",
        "enable_prefix_caching": "true",
    }


def test_a_rewrapped_engine_config_line_is_read_whole() -> None:
    """mtp.log's engine config line, re-flowed at blanks to 70 columns: the keys after the
    first break are still read (the line is rejoined before its facts are read)."""
    import textwrap

    text = (DATA / "mtp.log").read_text()
    out = []
    for ln in text.split("\n"):
        out.extend(
            textwrap.wrap(ln, 70, break_long_words=False, drop_whitespace=False) if "with config:" in ln else [ln]
        )
    numbered = iter_relevant_lines(io.BytesIO("\n".join(out).encode()))
    (facts,) = [f for f in iter_boots(iter_numbered_log_lines(numbered)) if f.is_vllm_log]
    stated = {f.name: f.value for f in facts.stated}
    assert stated["tensor_parallel_size"] == "1" and stated["enable_prefix_caching"] == "true"
    assert stated["num_speculative_tokens"] == "3"


def test_the_posted_flashinfer_line_names_the_gpu() -> None:
    """club-3090 #747 (an RTX 3090 box): FlashInfer's 'arch=sm86' and the fp8 KV dtype are read."""
    facts = read_log(body("club3090-747-thinkingcap-fp8-mtp5-padding.log").decode())
    stated = {f.name: f.value for f in facts.stated}
    assert stated["gpu_capability"] == "8.6" and stated["kv_cache_dtype"] == "fp8"


def _check(text: str, **options: object) -> LogReport:
    boots = tuple(check_lines(iter_relevant_lines(io.BytesIO(text.encode())), source="t", **options))
    return LogReport("t", boots)


#: the lines' wording as a GB10 boot prints them (the FlashInfer line as posted); the figures are this test's
GB10_LOG = (
    "(EngineCore pid=547870) INFO 08-23 12:04:10 [gpu_worker.py:440] Free memory on device (112.62/121.69 GiB) on "
    "startup.\n"
    "(EngineCore pid=547870) INFO 08-23 12:06:02 [gpu_worker.py:578] Available KV cache memory: 14.92 GiB\n"
    "(EngineCore pid=547870) INFO 08-23 12:06:03 [flashinfer.py:824] FlashInfer resolved query dtypes: "
    "prefill=torch.bfloat16, decode=torch.bfloat16, decode_backend=flashinfer-native, "
    "kv_cache_dtype=torch.float8_e4m3fn, arch=sm121\n"
    "(EngineCore pid=547870) INFO 08-23 12:06:03 [kv_cache_utils.py:1869] GPU KV cache size: 195,584 tokens, "
    "Maximum concurrency for 40,960 tokens per request: 4.78x\n"
)


def test_a_log_that_names_its_gpu_is_checked_on_it() -> None:
    """The FlashInfer 'arch=sm121' and the 121.69 GiB total are the GB10's: the boot is checked
    on it, not on an assumed H200; the fp8 KV dtype is known, not searched."""
    (boot,) = _check(GB10_LOG, model_path=QWEN3_8B).boots
    assert boot.report is not None
    assert boot.report.args.gpu is not None and boot.report.args.gpu.name == "GB10"
    assert any("the GPU: GB10 (SM 12.1" in n for n in boot.report.notes)
    assert boot.report.args.kv_cache_dtype == "fp8"
    assert boot.report.search is not None and "kv_cache_dtype" not in boot.report.search.unknown


def dryboot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dryboot", *args], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--kv-cache-dtype", "auto"), "--kv-cache-dtype auto: the log states 'kv_cache_dtype=torch.float8_e4m3fn' "
         "(line 3, EngineCore), which contradicts it"),
        (("--gpu", "H200"), "--gpu H200: the log states 'arch=sm121' (line 3, EngineCore, SM 12.1): not the "
         "capability of the GPU given (SM 9.0)"),
    ],
)  # fmt: skip
def test_a_given_flag_a_stated_fact_contradicts_is_refused_naming_both(
    tmp_path: Path, flags: tuple[str, ...], said: str
) -> None:
    log = tmp_path / "gb10.log"
    log.write_text(GB10_LOG)
    r = dryboot("check-log", str(log), "--model", QWEN3_8B, *flags)
    assert r.returncode == 2, r.stdout
    assert r.stderr.strip().splitlines() == [f"dryboot: error: {said}"]


def test_the_mtp_warning_limits_the_search_to_k_above_1() -> None:
    """mtp.log without its args and engine config lines: its 'num_speculative_tokens > 1' warning
    (line 13) leaves MTP k = 2-16 to search, and k = 3 explains the lines."""
    text = (DATA / "mtp.log").read_text()
    text = "\n".join(ln for ln in text.split("\n") if "non-default args" not in ln and "with config:" not in ln)
    (boot,) = _check(text, model_path=QWEN_NEXT).boots
    assert boot.report is not None and boot.report.search is not None
    assert "speculative_config: MTP k=2 … MTP k=16 (15 values)" in boot.report.search.space
    assert any("MTP k=3" in c.describe() for c in boot.report.search.explaining)


def test_a_negative_budget_is_a_failed_boot_not_a_refusal() -> None:
    """vllm-omni #469's line: 'Available KV cache memory: -2.77 GiB' (a boot that failed). Before:
    refused blaming kv_cache_memory_bytes, a field the log does not contain. With vLLM's error
    line, the boot is checked at a budget of 0 B, where vLLM raises the same error."""
    neg = "(EngineCore_DP0 pid=563) INFO 12-23 23:34:23 [gpu_worker.py:298] Available KV cache memory: -2.77 GiB\n"
    (boot,) = _check(neg).boots
    assert boot.status == "unchecked" and boot.reason is not None
    assert boot.reason.startswith("the boot failed: 'Available KV cache memory: -2.77 GiB' (line 1, EngineCore_DP0)")
    error = (
        "(EngineCore_DP0 pid=563) ERROR 12-23 23:34:23 [core.py:708] ValueError: No available memory for the cache "
        "blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n"
    )
    (boot,) = _check(neg + error, model_path=QWEN3_8B).boots
    assert boot.report is not None and boot.report.budget is not None
    assert (boot.report.budget.lo, boot.report.budget.hi) == (0, 0)
    assert [c.status for c in boot.report.comparison.checks] == ["matches"]


def test_a_cuda_oom_in_load_model_is_checked_against_the_weights() -> None:
    """torch's out-of-memory error in load_model on a 23.56 GiB card (an RTX 3090's CUDA total):
    Qwen3-8B's 15.27 GiB of weights fit, so dryboot does not predict it and says so."""
    text = (
        '(EngineCore_DP0 pid=6880) ERROR 10-31 15:07:49 [core.py:708]   File "/usr/local/lib/python3.12/dist-packages/'
        'vllm/v1/worker/gpu_model_runner.py", line 2635, in load_model\n'
        "(EngineCore_DP0 pid=6880) ERROR 10-31 15:07:49 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 1.98 GiB. GPU 0 has a total capacity of 23.56 GiB of which 1.02 GiB is free.\n"
    )
    (boot,) = _check(text, model_path=QWEN3_8B).boots
    assert boot.status == "unchecked" and boot.reason is not None
    assert "in load_model (line 1, EngineCore_DP0)" in boot.reason
    assert "dryboot does not predict it on the RTX 3090" in boot.reason


def test_a_draft_model_without_its_token_count_is_searched_not_refused(tmp_path: Path) -> None:
    """Before: '--speculative-config: num_speculative_tokens: required with a draft model' (exit
    2). vLLM requires the count with a draft model, so the boot had one: it is searched (1-16)."""
    log = tmp_path / "lmcache-1739.log"
    log.write_bytes(body("lmcache-1739-qwen3-14b.log"))
    spec = '{"method": "draft_model", "model": "' + QWEN3_8B + '"}'
    r = dryboot("check-log", str(log), "--model", str(PUBLIC / "configs" / "Qwen--Qwen3-14B.config.json"),
                "--speculative-config", spec)  # fmt: skip
    assert r.returncode != 2, r.stderr
    assert "num_speculative_tokens" in next(ln for ln in r.stdout.splitlines() if ln.startswith("unknown flags:"))


def test_a_refused_stated_flag_names_the_line_that_states_it() -> None:
    """No args line: a refusal of a flag the log states (the attention backend chosen) names
    that line and its words, not "its lines"."""
    from dryboot.checklog.check import _as_read_from_log
    from dryboot.errors import InputError

    text = (
        "(EngineCore pid=1) INFO 01-01 00:00:00 [cuda.py:1] Using FLASHINFER attention backend out of"
        " potential backends: ['FLASHINFER', 'TRITON_ATTN'].\n"
        "(EngineCore pid=1) INFO 01-01 00:00:01 [kv_cache_utils.py:1] GPU KV cache size: 1,000 tokens\n"
    )
    (facts,) = tuple(iter_boots(iter_numbered_log_lines(iter_relevant_lines(io.BytesIO(text.encode()), "x.log"))))
    exc = _as_read_from_log(InputError("--attention-backend", None, "no backend"), facts, "x.log", None)
    assert exc.where == (
        "attention_backend read from the log ('Using FLASHINFER attention backend out of potential backends', "
        "line 1, EngineCore)"
    )
