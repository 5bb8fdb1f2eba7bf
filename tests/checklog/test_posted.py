"""check-log on logs as posted (issue 28): vLLM's flags a post states given on check-log's
command line are known facts, not searched; a logged max_model_len above the config's limit
means VLLM_ALLOW_LONG_MAX_MODEL_LEN was set; values read from the log are said to be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import DATA, REPO
from .public_verdicts import body
from .test_logs import dryboot

POSTED = "club3090-642-qwen36-27b-2x3090-args-cut.log"
CONFIG = str(REPO / "examples" / "models" / "Qwen3.5-27B.config.json")


def _posted(tmp_path: Path) -> str:
    log = tmp_path / POSTED
    log.write_bytes(body(POSTED))
    return str(log)


@pytest.mark.parametrize(("k", "code"), [(3, 4), (1, 5)])
def test_given_speculative_config_is_a_fact_not_searched(tmp_path: Path, k: int, code: int) -> None:
    """Before: MTP k=1..5 were searched whatever the post said (k=1 given: 'explained by MTP
    k=3'). Given, only that k is planned: k=3 explains the lines, k=1 does not (exit 5: the
    flags still unknown explain nothing; no line the log states is contradicted)."""
    spec = json.dumps({"method": "mtp", "num_speculative_tokens": k})
    r = dryboot(
        "check-log", _posted(tmp_path), "--model", CONFIG, "--kv-cache-dtype", "fp8", "--speculative-config", spec,
        env={"HF_HUB_CACHE": str(tmp_path / "hub")},
    )  # fmt: skip
    assert r.returncode == code, r.stdout + r.stderr
    assert "--speculative-config: given on the command line (a known fact, not searched)" in r.stdout
    assert "unknown flags: enable_prefix_caching, tensor_parallel_size" in r.stdout
    assert ("explained by: prefix caching on, TP 2" in r.stdout) == (k == 3)


def test_a_given_flag_the_log_contradicts_is_refused(hf_cache: Path) -> None:
    r = dryboot("check-log", str(DATA / "tp2.log"), "--tensor-parallel-size", "4")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "--tensor-parallel-size 4: the log's non-default args say --tensor-parallel-size 2 (line 7" in r.stderr


def test_a_logged_length_above_the_config_means_the_variable_was_set(tmp_path: Path, hf_cache: Path) -> None:
    """Before: refused ('vLLM refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1'), though the
    log shows vLLM started with it."""
    text = (DATA / "tp2.log").read_text().replace("'max_model_len': 262144", "'max_model_len': 300000")
    log = tmp_path / "long.log"
    log.write_text(text)
    r = dryboot("check-log", str(log))
    assert r.returncode != 2, r.stderr
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, so that was set" in r.stdout


def test_a_cut_num_speculative_tokens_is_searched_with_the_drafter_read(tmp_path: Path) -> None:
    """mtp.log (vLLM 0.28.0 wrote it, MTP with 3 tokens) with its args cut inside
    speculative_config, before num_speculative_tokens' value: the method is kept and the count
    is an unknown flag to search, not a dropped speculative config."""
    text = (DATA / "mtp.log").read_text()
    start = text.index("'num_speculative_tokens': 3}")
    cut = text[:start] + "'num_speculative_tok" + text[text.index("\n", start) :]
    # the engine's config line states every flag (test below): removed here
    cut = "\n".join(ln for ln in cut.split("\n") if "with config:" not in ln)
    log = tmp_path / "cut.log"
    log.write_text(cut)
    model = str(REPO / "examples" / "models" / "Qwen3-Next-80B-A3B-Thinking.config.json")
    r = dryboot("check-log", str(log), "--model", model, env={"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert r.returncode == 4, r.stdout + r.stderr
    unknown = "kv_cache_dtype, enable_prefix_caching, tensor_parallel_size, num_speculative_tokens"
    assert f"unknown flags: {unknown}" in r.stdout
    assert "explained by: --kv-cache-dtype auto, prefix caching on, TP 1, num_speculative_tokens 3" in r.stdout


def test_a_log_without_a_version_says_which_releases_fit(tmp_path: Path) -> None:
    """tp2.log (vLLM 0.28.0 wrote it) without its version lines and with its source lines
    blurred: no release is named, so every release's rules are tried and those that give every
    line are listed (0.28.0 among them), not 0.28.0's silently."""
    import re

    lines = [ln for ln in (DATA / "tp2.log").read_text().split("\n") if "version" not in ln and "LLM engine" not in ln]
    log = tmp_path / "noversion.log"
    log.write_text(re.sub(r"\.py:\d+\]", ".py:1]", "\n".join(lines)))
    model = str(REPO / "examples" / "models" / "Qwen3-Next-80B-A3B-Thinking.config.json")
    r = dryboot("check-log", str(log), "--model", model, env={"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert r.returncode == 0, r.stdout + r.stderr
    fit = re.search(r"the releases whose rules give every checked line as logged: ([\d., ]+)", r.stdout)
    assert fit is not None and "0.28.0" in fit[1].split(", ")


def test_the_workers_logging_a_budget_count_as_ranks() -> None:
    """Workers of one TP 8 boot each log their own 'Available KV cache memory' line, with
    different figures: eight ranks, each budget read (the smallest decides), never 'at least 4'
    from the four prefixes a post happened to keep."""
    from dryboot.checklog.parse import iter_boots, iter_log_lines

    gib = ["61.2", "61.5", "61.5", "61.4", "61.5", "61.5", "61.3", "61.6"]
    lines = [
        f"(Worker pid={100 + i}) INFO 07-08 15:38:03 [gpu_worker.py:508] Available KV cache memory: {g} GiB"
        for i, g in enumerate(gib)
    ]
    lines.append("(Worker_TP3 pid=103) INFO 07-08 15:38:04 [kv_cache_utils.py:1] GPU KV cache size: 1,000 tokens")
    (boot,) = list(iter_boots(iter_log_lines("\n".join(lines))))
    assert boot.tp_ranks == 8
    assert [a.gib for a in boot.available] == gib
    pp = "(Worker_PP1_TP0 pid=7) INFO 07-08 15:38:03 [gpu_worker.py:508] Available KV cache memory: 1 GiB"
    (staged,) = list(iter_boots(iter_log_lines("\n".join([lines[0], pp]))))
    assert staged.tp_ranks is None  # a pipeline stage's worker is not another tensor-parallel rank


def test_a_refused_value_read_from_the_log_is_named_as_read_from_the_log(tmp_path: Path, hf_cache: Path) -> None:
    """Before: '--tensor-parallel-size: 3: ...', as if the user had given the flag."""
    log = tmp_path / "tp3.log"
    log.write_text((DATA / "tp2.log").read_text().replace("'tensor_parallel_size': 2", "'tensor_parallel_size': 3"))
    r = dryboot("check-log", str(log))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"{log}: tensor_parallel_size 3 read from the log (line 7, APIServer): " in r.stderr
    assert "--tensor-parallel-size" not in r.stderr


def test_the_engine_config_line_states_the_flags_a_cut_args_line_hides(tmp_path: Path) -> None:
    """mtp.log with its args cut before num_speculative_tokens: the engine's 'Initializing a V1
    LLM engine ... with config:' line states the KV dtype, TP, prefix caching and the MTP
    config (num_spec_tokens=3), so nothing is left to search: every line matches as logged.
    Before: 'unknown flags: kv_cache_dtype, enable_prefix_caching, tensor_parallel_size,
    num_speculative_tokens' and exit 4."""
    text = (DATA / "mtp.log").read_text()
    start = text.index("'num_speculative_tokens': 3}")
    log = tmp_path / "cut.log"
    log.write_text(text[:start] + "'num_speculative_tok" + text[text.index("\n", start) :])
    model = str(REPO / "examples" / "models" / "Qwen3-Next-80B-A3B-Thinking.config.json")
    r = dryboot("check-log", str(log), "--model", model, env={"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert "\nunknown flags:" not in r.stdout, r.stdout  # no search (the note lists what the args hid)
    assert "tensor_parallel_size 1 read from the log ('tensor_parallel_size=1', line 17, EngineCore)" in r.stdout
    assert "stated: num_speculative_tokens 3 (line 17, EngineCore: 'num_spec_tokens=3')" in r.stdout
    assert r.returncode == 0, r.stdout
