"""The logged non-default args: read safely, mapped onto dryboot's flags, refused when unmodelled."""

from __future__ import annotations

import pytest

from dryboot.checklog.argmap import HARMLESS_PATTERNS, MAPPED, MEASURED, REFUSED, map_args, validate_logged
from dryboot.checklog.literal import Opaque, parse_args_text
from dryboot.errors import InputError

from .conftest import DATA

# vLLM 0.28.0's own output (log_non_default_args) for
#   --model Qwen/Qwen3-Next-80B-A3B-Thinking --max-model-len 262144 -tp 2 --attention-backend FLASHINFER
#   --speculative-config '{"method":"mtp","num_speculative_tokens":3}' --kv-cache-memory-bytes 40G
#   --compilation-config '{"mode":3}'
# (abridged inside compilation_config): its reprs of enums are not Python literals.
REAL_ARGS = (
    "{'model': 'Qwen/Qwen3-Next-80B-A3B-Thinking', 'max_model_len': 262144, 'attention_backend': 'FLASHINFER', "
    "'tensor_parallel_size': 2, 'kv_cache_memory_bytes': 42949672960, 'speculative_config': {'method': 'mtp', "
    "'num_speculative_tokens': 3}, 'compilation_config': {'mode': <CompilationMode.VLLM_COMPILE: 3>, "
    "'debug_dump_path': None, 'cache_dir': '', 'backend': 'inductor', 'custom_ops': [], 'dynamic_shapes_config': "
    "{'type': <DynamicShapesType.BACKED: 'backed'>, 'evaluate_guards': False}, 'static_all_moe_layers': []}}"
)


def test_real_args_with_enum_reprs() -> None:
    args = parse_args_text(REAL_ARGS)
    assert args["max_model_len"] == 262144
    assert args["speculative_config"] == {"method": "mtp", "num_speculative_tokens": 3}
    assert isinstance(args["compilation_config"], Opaque)
    m = map_args(args, "log")
    assert m.args.tensor_parallel_size == 2
    assert m.args.attention_backend == "FLASHINFER"
    assert m.args.kv_cache_memory_bytes == 42949672960
    assert m.model == "Qwen/Qwen3-Next-80B-A3B-Thinking"
    assert m.speculative == {"method": "mtp", "num_speculative_tokens": 3}
    assert any(n.startswith("ignored compilation_config") for n in m.notes)


def test_nothing_is_evaluated() -> None:
    args = parse_args_text("{'model': __import__('os').system('exit 3'), 'max_model_len': 4096}")
    assert isinstance(args["model"], Opaque)
    args = parse_args_text("{'x': <function f at 0x7f>, 'y': (lambda: 1)()}")
    assert isinstance(args["x"], Opaque) and isinstance(args["y"], Opaque)


def test_namespace() -> None:
    args = parse_args_text("Namespace(model_tag='org/m', max_model_len=4096, pipeline_parallel_size=1, host=None)")
    m = map_args(args, "log")
    assert m.args.max_model_len == 4096 and m.model == "org/m"


def test_every_logged_arg_of_the_real_logs_maps() -> None:
    for name in ("tp2", "oom", "mtp", "colour"):
        from dryboot.checklog.parse import read_log

        facts = read_log((DATA / f"{name}.log").read_text())
        assert facts.args_text is not None
        map_args(parse_args_text(facts.args_text), name)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("pipeline_parallel_size", 2),
        ("disable_sliding_window", True),
        ("hf_overrides", {"num_hidden_layers": 4}),
        ("kv_transfer_config", {"kv_connector": "NixlConnector"}),
        ("mamba_block_size", 256),
        ("enable_chunked_prefill", False),
    ],
)
def test_refused_keys(key: str, value: object) -> None:
    with pytest.raises(InputError) as exc:
        map_args({"model": "org/m", key: value}, "x.log")
    assert exc.value.where == key
    assert "dryboot cannot model it" in exc.value.line()


def test_neutral_values_of_refused_keys_pass() -> None:
    m = map_args({"pipeline_parallel_size": 1, "disable_sliding_window": False, "hf_overrides": {}}, "x.log")
    assert m.notes == ()


def test_bad_value_names_the_key() -> None:
    with pytest.raises(InputError) as exc:
        validate_logged(map_args({"kv_cache_dtype": "fp7"}, "x.log").args, "x.log")
    assert exc.value.where == "kv_cache_dtype"
    assert exc.value.line().startswith("x.log: non-default args: kv_cache_dtype: unknown KV cache dtype 'fp7'")


def test_spec_shorthands_and_conflict() -> None:
    m = map_args({"spec_method": "mtp", "spec_tokens": 2}, "x.log")
    assert m.speculative == {"method": "mtp", "num_speculative_tokens": 2}
    with pytest.raises(InputError):
        map_args({"spec_tokens": 2, "speculative_config": {"num_speculative_tokens": 3}}, "x.log")


def test_throughput_mode_doubles_the_default_batch() -> None:
    # vllm/engine/arg_utils.py: performance_mode == "throughput" doubles max_num_batched_tokens
    m = map_args({"performance_mode": "throughput"}, "x.log")
    assert m.args.max_num_batched_tokens == 2 * 8192  # H200 serve default 8192 (e2e-min case 12)


def test_vllm_serve_args_are_all_classified() -> None:
    """Every argument of vLLM 0.28.0's serve parser (written by vllm_log_writer.py) has a rule."""
    names = (DATA / "vllm-serve-args.txt").read_text().split()
    assert len(names) > 250
    special = {
        "model",
        "model_tag",
        "hf_config_path",
        "revision",
        "speculative_config",
        "attention_config",
        "spec_method",
        "spec_model",
        "spec_tokens",
        "performance_mode",
    }
    unknown = [
        n
        for n in names
        if n not in MAPPED
        and n not in REFUSED
        and n not in MEASURED
        and n not in special
        and not HARMLESS_PATTERNS.match(n)
    ]
    assert unknown == []


def test_a_named_mla_prefill_backend_is_refused() -> None:
    """``attention_config.mla_prefill_backend`` decides the SM 10.x prefill workspace in the weights
    (``dryboot.vllm.mla_prefill``): refused by name, not ignored as kernel tuning; ``None`` is vLLM's
    own choice."""
    with pytest.raises(InputError) as exc:
        map_args({"attention_config": {"mla_prefill_backend": "FLASH_ATTN"}}, "x.log")
    assert "mla_prefill_backend" in str(exc.value.line())
    assert map_args({"attention_config": {"mla_prefill_backend": None}}, "x.log").args is not None
