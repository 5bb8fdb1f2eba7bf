"""``--speculative-config`` keys as vLLM 0.28.0 treats them (``VllmConfig.__post_init__``,
``SpeculativeConfig``): which change the KV cache, which do not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.planner.plan import plan
from dryboot.planner.runner import build_engine_args, load_drafter_and_k

GPT_OSS = str(Path(__file__).resolve().parents[1] / "examples" / "models" / "gpt-oss-20b.config.json")
FLAGS = {"max-model-len": "65536", "kv-cache-memory-bytes": "20000000000", "max-num-batched-tokens": "8192"}


def planned(spec: str, **extra: str) -> int:
    model, args = build_engine_args(GPT_OSS, {**FLAGS, **extra}, [])
    drafter, args = load_drafter_and_k(spec, None, args)
    p = plan(model, args, drafter=drafter)
    assert p.capacity is not None
    return p.capacity.kv_cache_size_tokens


def test_keys_without_kv_effect_are_ignored_with_a_note() -> None:
    # tests/data/e2e-min case 2: vLLM 0.28.0 logs 721,960 tokens for ngram k=3 (async off)
    assert planned('{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 5}') == 721_960
    model, args = build_engine_args(GPT_OSS, FLAGS, [])
    _, args = load_drafter_and_k('{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2}', None, args)
    from dryboot.planner.assumptions import assumptions

    ignored = [a for a in assumptions(plan(model, args)) if a.kind == "ignored"]
    assert [(a.flag, a.value) for a in ignored] == [("--speculative-config", "prompt_lookup_min")]


def test_unmodelled_key_is_refused_by_name() -> None:
    _, args = build_engine_args(GPT_OSS, FLAGS, [])
    with pytest.raises(InputError) as info:
        load_drafter_and_k('{"method": "ngram", "num_speculative_tokens": 3, "parallel_drafting": true}', None, args)
    assert info.value.where == "parallel_drafting" and "not modelled" in info.value.reason


def test_disable_padded_drafter_batch_turns_async_off() -> None:
    # ngram_gpu keeps async scheduling; disable_padded_drafter_batch turns it off, which gives
    # the one-batch-in-flight figure vLLM 0.28.0 logs for ngram (e2e-min case 2: 721,960)
    spec = '{"method": "ngram_gpu", "num_speculative_tokens": 3, "disable_padded_drafter_batch": true}'
    assert planned(spec) == 721_960
    assert planned(spec.replace("true", "false")) != 721_960
    model, args = build_engine_args(GPT_OSS, {**FLAGS, "async-scheduling": "true"}, [])
    _, args = load_drafter_and_k(spec, None, args)
    with pytest.raises(InputError, match="disable_padded_drafter_batch"):
        plan(model, args)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        # only extract_hidden_states reads draft_model_config here
        ('{"method": "ngram", "num_speculative_tokens": 1, "draft_model_config": {}}', "draft_model_config"),
        (
            '{"method": "extract_hidden_states", "num_speculative_tokens": 1, '
            '"draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": "3"}}}',
            "eagle_aux_hidden_state_layer_ids",
        ),
        (
            '{"method": "extract_hidden_states", "num_speculative_tokens": 1, "model": "x/"}',
            "model",
        ),
    ],
)
def test_extract_hidden_states_inputs_are_checked(spec: str, field: str) -> None:
    _, args = build_engine_args(GPT_OSS, FLAGS, [])
    with pytest.raises(InputError, match=field):
        load_drafter_and_k(spec, None, args)


def test_extract_hidden_states_refuses_disable_padded_drafter_batch() -> None:
    # ExtractHiddenStatesProposer: "disable_padded_drafter_batch is not supported with
    # extract_hidden_states method" (the e2e oracle raises it for vLLM 0.28.0)
    spec = (
        '{"method": "extract_hidden_states", "num_speculative_tokens": 1, "disable_padded_drafter_batch": true, '
        '"draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": [1, 2]}}}'
    )
    with pytest.raises(InputError, match="disable_padded_drafter_batch is not supported"):
        planned(spec)


DFLASH_SW2 = Path(__file__).resolve().parent / "fidelity" / "data" / "releases" / "dflash-sw2"
QWEN35_4L = str(Path(__file__).resolve().parent / "fidelity" / "data" / "releases" / "qwen35-4l")


def test_unregistered_eagle_head_is_refused_where_speculative_config_names_it() -> None:
    # vLLM names an EAGLE head of a DFlash drafter EagleDFlashDraftModel (no release has it) in
    # SpeculativeConfig, after ModelConfig's max_model_len and ParallelConfig's world size
    # (tests/fidelity/test_releases.py eagle-dflash*); the drafter comes back unread, its refusal carried
    spec = f'{{"method": "eagle", "num_speculative_tokens": 2, "model": "{DFLASH_SW2}"}}'
    refused = "Model architectures ['EagleDFlashDraftModel'] are not supported for now"
    flags = {"max-model-len": "4096", "kv-cache-memory-bytes": "2000000000"}
    for extra, says in (
        ({}, refused),
        ({"tensor-parallel-size": "4", "pipeline-parallel-size": "3"}, "World size (12)"),
        ({"max-model-len": "524288"}, "User-specified max_model_len (524288)"),
        ({"max-num-batched-tokens": "128", "max-num-seqs": "256"}, refused),  # SchedulerConfig comes after
    ):
        model, args = build_engine_args(QWEN35_4L, {**flags, **extra}, [])
        drafter, args = load_drafter_and_k(spec, None, args)
        assert drafter is None and args.drafter_refusal is not None
        with pytest.raises(InputError, match=re.escape(says)):
            plan(model, args)
    # a plan of another release (--compare-version) refuses it too, naming the release it was read for
    with pytest.raises(InputError, match=r"read for vLLM 0\.28\.0 only"):
        plan(model, args.evolve(vllm_version="0.33.0", max_num_batched_tokens=None, max_num_seqs=None))
    # a drafter read again replaces the refusal
    _, args = load_drafter_and_k('{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 5}', None, args)
    assert args.drafter_refusal is None


def test_engine_args_take_only_a_deferred_refusal() -> None:
    from dryboot.vllm.engine_args import DeferredRefusal, EngineArgs

    EngineArgs(drafter_refusal=DeferredRefusal("--speculative-config", None, "no", "0.28.0")).validate()
    with pytest.raises(InputError, match="drafter_refusal"):
        EngineArgs(drafter_refusal=("--speculative-config", None, "no", "0.28.0")).validate()  # type: ignore[arg-type]


def test_async_refusal_comes_after_the_world_size_and_the_scheduler() -> None:
    # VllmConfig.__post_init__ refuses an explicit --async-scheduling with ngram after ParallelConfig and
    # SchedulerConfig (tests/fidelity/test_releases.py ngram-async*; random audit s260293-352)
    spec = '{"method": "ngram", "num_speculative_tokens": 7, "prompt_lookup_max": 4}'
    flags = {"max-model-len": "4096", "kv-cache-memory-bytes": "2000000000", "async-scheduling": "true"}
    for extra, says in (
        ({}, "Currently, async scheduling is only supported"),
        ({"tensor-parallel-size": "4", "pipeline-parallel-size": "4"}, "World size (16)"),
        ({"max-num-batched-tokens": "128", "max-num-seqs": "256"}, "max_num_batched_tokens (128) must be greater"),
    ):
        model, args = build_engine_args(GPT_OSS, {**flags, **extra}, [])
        _, args = load_drafter_and_k(spec, None, args)
        with pytest.raises(InputError, match=re.escape(says)):
            plan(model, args)
