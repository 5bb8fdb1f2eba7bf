"""check-log refuses what contradicts the log (new user's trial, items 7-9 and 11): a --model of
another architecture than the log serves, a flag the complete args line contradicts (stated
otherwise, or absent so vLLM's default applied), and says what decided its exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dryboot.checklog.compare import describe_figures
from dryboot.checklog.parse import Kind

from .conftest import DATA, REPO
from .test_logs import dryboot

QWEN_NEXT = str(REPO / "examples" / "models" / "Qwen3-Next-80B-A3B-Thinking.config.json")
PUBLIC = DATA / "public"


def one_line(r) -> str:  # type: ignore[no-untyped-def]
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return str(lines[0])


def test_a_model_of_another_architecture_is_refused_by_name() -> None:
    """Before: colour.log (a Nemotron-H boot) with Qwen3-Next's config gave five 'differs' lines
    and exit 1, 'the tree differs from vLLM 0.28.0's rules'."""
    line = one_line(dryboot("check-log", str(DATA / "colour.log"), "--model", QWEN_NEXT))
    assert line == (
        f"dryboot: error: --model: {QWEN_NEXT}: is Qwen3NextForCausalLM; "
        "the log serves NemotronHForCausalLM (its line 9, APIServer)"
    )


def test_the_mamba_mode_line_shows_the_architecture_it_names() -> None:
    """Before: 'logged 'align', predicted 'align'' for two lines that differ in the model alone."""
    logged = "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled"
    assert describe_figures(Kind.MAMBA_MODE, [logged]) == "'align' for NemotronHForCausalLM"
    off = "Mamba cache mode is set to 'none' when prefix caching is disabled"
    assert describe_figures(Kind.MAMBA_MODE, [off]) == "'none'"


@pytest.mark.parametrize(
    ("log", "flags", "said"),
    [
        # tp2.log's complete args line has no kv_cache_dtype: auto applied
        ("tp2.log", ("--kv-cache-dtype", "fp8"), "--kv-cache-dtype fp8: the log's non-default args (line 7, APIServer) "
         "have no kv_cache_dtype: vLLM's default --kv-cache-dtype auto applied"),
        ("mtp.log", ("--tensor-parallel-size", "2"), "--tensor-parallel-size 2: the log's non-default args (line 7, "
         "APIServer) have no tensor_parallel_size: vLLM's default --tensor-parallel-size 1 applied"),
        # 0.28.0 turns prefix caching on for hybrid models by default
        ("mtp.log", ("--no-enable-prefix-caching",), "--no-enable-prefix-caching: the log's non-default args (line 7, "
         "APIServer) have no enable_prefix_caching: vLLM's default --enable-prefix-caching applied"),
        ("tp2.log", ("--tensor-parallel-size", "4"), "--tensor-parallel-size 4: the log's non-default args say "
         "--tensor-parallel-size 2 (line 7, APIServer)"),
        ("tp2.log", ("--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 3})),
         "--speculative-config: the log's non-default args (line 7, APIServer) have no speculative_config: vLLM ran "
         "without speculative decoding"),
        ("mtp.log", ("--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 2})),
         "--speculative-config: num_speculative_tokens: the log's non-default args say 3 (line 7, APIServer), given 2"),
    ],
)  # fmt: skip
def test_a_flag_a_complete_args_line_contradicts_is_refused(log: str, flags: tuple[str, ...], said: str) -> None:
    """Before: all but TP 4 on tp2.log were accepted as facts, then gave a wrong diagnosis."""
    line = one_line(dryboot("check-log", str(DATA / log), "--model", QWEN_NEXT, *flags))
    assert line == f"dryboot: error: {said}", line


@pytest.mark.parametrize(
    ("log", "flags"),
    [
        ("tp2.log", ("--kv-cache-dtype", "auto", "--tensor-parallel-size", "2", "--enable-prefix-caching")),
        ("mtp.log", ("--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 3}))),
        # the engine's config line states enable_prefix_caching=True: 'on' agrees
        ("mtp.log", ("--enable-prefix-caching",)),
    ],
)
def test_a_flag_equal_to_what_applied_is_consistent(log: str, flags: tuple[str, ...]) -> None:
    r = dryboot("check-log", str(DATA / log), "--model", QWEN_NEXT, *flags)
    assert r.returncode in (0, 1), r.stderr
    assert "given on the command line" in r.stdout
    assert "--enable-prefix-caching True" not in r.stdout and "False:" not in r.stdout


def test_a_given_flag_is_spelled_as_vllm_spells_it(tmp_path: Path) -> None:
    """Before: 'note: --enable-prefix-caching False: given on the command line'."""
    text = (DATA / "mtp.log").read_text()
    log = tmp_path / "noargs.log"
    # the args line and the engine's config line (which states enable_prefix_caching) removed
    log.write_text(
        "\n".join(ln for ln in text.split("\n") if "non-default args" not in ln and "with config:" not in ln)
    )
    r = dryboot("check-log", str(log), "--model", QWEN_NEXT, "--no-enable-prefix-caching")
    assert r.returncode != 2, r.stderr
    assert "note: --no-enable-prefix-caching: given on the command line (a known fact, not searched)" in r.stdout


def test_the_exit_line_says_what_decided_it() -> None:
    """Before: '0 match, 0 differ, 1 unchecked, 2 refused', then 'exit 1: some KV line differs
    (3 boots)': boot 2's lines were unexplained by every combination of the unknown flags."""
    config = str(PUBLIC / "configs" / "meta-llama--Meta-Llama-3.1-8B.config.json")
    r = dryboot("check-log", str(PUBLIC / "vllm-10517-llama31-8b-3090-three-boots.log"), "--model", config)
    assert r.returncode == 5, r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last == "exit 5: no combination of the unknown flags explains the lines (boot 2) — 3 boots"
    assert "differs" not in last


def test_no_note_names_options_check_log_has_not() -> None:
    """Before: 'No KV budget given (--kv-cache-memory-bytes, or --gpu-memory with --non-kv-memory)':
    plan's options; check-log reads the budget from the log alone."""
    config = str(PUBLIC / "configs" / "meta-llama--Meta-Llama-3.1-8B.config.json")
    r = dryboot("check-log", str(PUBLIC / "vllm-10517-llama31-8b-3090-three-boots.log"), "--model", config)
    assert "--non-kv-memory" not in r.stdout and "--kv-cache-memory-bytes" not in r.stdout
    assert "the log has no 'Available KV cache memory' line and the args no kv_cache_memory_bytes" in r.stdout
