"""``SchedulerConfig.verify_max_model_len``'s refusal (vLLM 0.27.1-0.33.0 ``config/scheduler.py``).

The expected message is vLLM 0.28.0's own, recorded by building ``SchedulerConfig(max_model_len=32768,
is_encoder_decoder=False, max_num_batched_tokens=100, max_num_seqs=256)`` in the boot environment:
``max_num_batched_tokens (100) must be greater than or equal to max_num_seqs (256).``
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.vllm.config.scheduler import scheduler_limits, verify_max_model_len
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import parse_gpu

REPO = Path(__file__).resolve().parents[1]
QWEN3_8B = str(REPO / "tests" / "data" / "configs" / "public" / "Qwen--Qwen3-8B" / "config.json")
VLLM_MESSAGE = "max_num_batched_tokens (100) must be greater than or equal to max_num_seqs (256)"


def test_fewer_batched_tokens_than_sequences_is_refused_with_vllms_reason() -> None:
    with pytest.raises(InputError, match=r"^--max-num-batched-tokens: " + re.escape(VLLM_MESSAGE)):
        verify_max_model_len(EngineArgs(max_num_batched_tokens=100, max_num_seqs=256), 32768)


def test_default_sequences_are_capped_at_the_batched_tokens() -> None:
    # _set_default_max_num_seqs_and_batched_tokens_args: a default max_num_seqs is min(1024, 10)
    args = EngineArgs(max_num_batched_tokens=10)
    assert scheduler_limits(args, 32768) == (10, 10)
    verify_max_model_len(args, 32768)


def test_explicit_sequences_above_the_gpus_default_batch_name_max_num_seqs() -> None:
    # RTX 3090: the serve default is 2048 batched tokens; 4096 sequences do not fit in one step
    args = EngineArgs(max_num_seqs=4096, gpu=parse_gpu("RTX 3090"))
    with pytest.raises(InputError, match=r"^--max-num-seqs: max_num_batched_tokens \(2048\) must be greater"):
        verify_max_model_len(args, 32768)


def test_equal_limits_pass() -> None:
    verify_max_model_len(EngineArgs(max_num_batched_tokens=256, max_num_seqs=256), 32768)


@pytest.mark.parametrize("version", ["0.27.1", "0.28.0", "0.33.0"])
def test_plan_refuses_it_exit_2_for_every_release(version: str) -> None:
    r = subprocess.run(
        [
            *(sys.executable, "-m", "dryboot", "plan", "--model", QWEN3_8B, "--max-model-len", "32768"),
            *("--kv-cache-memory", "10G", "--max-num-batched-tokens", "100", "--max-num-seqs", "256"),
            *("--vllm-version", version),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert r.returncode == 2, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--max-num-batched-tokens" in lines[0] and VLLM_MESSAGE in lines[0]


def test_a_serve_lines_long_prefill_threshold_above_max_model_len_is_refused() -> None:
    # SchedulerConfig.verify_max_model_len (0.27.1-0.33.0): "long_prefill_token_threshold (40000)
    # cannot be greater than the max_model_len (32768)."
    from click.testing import CliRunner  # at call: the one CLI test here

    from dryboot.cli import cli  # at call: as above

    line = "vllm serve x --max-model-len 32768 --long-prefill-token-threshold {}"
    common = ["plan", "--model", QWEN3_8B, "--kv-cache-memory", "10G", "--serve"]
    r = CliRunner().invoke(cli, [*common, line.format(40000)])
    assert r.exit_code == 2
    assert "--serve: long_prefill_token_threshold: long_prefill_token_threshold (40000) cannot be greater" in r.output
    assert CliRunner().invoke(cli, [*common, line.format(32768)]).exit_code == 0


def test_encoder_decoder_default_budget_is_at_least_max_model_len() -> None:
    # _set_default_max_num_seqs_and_batched_tokens_args without chunked prefill (Whisper; recorded in
    # tests/fidelity/data/architectures/recorded.json): max(max_model_len, 8192), capped at seqs x length
    from dryboot.vllm.config.scheduler import encoder_decoder_batched_tokens

    h200 = parse_gpu("H200")
    assert encoder_decoder_batched_tokens(EngineArgs(gpu=h200), 448).max_num_batched_tokens == 8192
    assert encoder_decoder_batched_tokens(EngineArgs(gpu=h200), 10000).max_num_batched_tokens == 10000
    small = encoder_decoder_batched_tokens(EngineArgs(gpu=h200, max_num_seqs=8), 200)
    assert small.max_num_batched_tokens == 1600


def test_encoder_decoder_budget_below_max_model_len_is_refused_with_vllms_reason() -> None:
    from dryboot.vllm.config.scheduler import encoder_decoder_batched_tokens

    with pytest.raises(
        InputError, match=r"^--max-num-batched-tokens: 1024: max_num_batched_tokens \(1024\) is smaller"
    ):
        encoder_decoder_batched_tokens(EngineArgs(max_num_batched_tokens=1024), 4096)
    assert encoder_decoder_batched_tokens(EngineArgs(max_num_batched_tokens=4096), 4096).max_num_batched_tokens == 4096
