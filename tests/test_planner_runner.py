"""``--speculative-config`` keys as vLLM 0.28.0 treats them (``VllmConfig.__post_init__``,
``SpeculativeConfig``): which change the KV cache, which do not."""

from __future__ import annotations

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
