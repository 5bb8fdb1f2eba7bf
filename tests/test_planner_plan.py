"""The acceptance figures of issue 2: vLLM 0.28.0 rules and its planner's own output."""

import builtins
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from dryboot.errors import InputError
from dryboot.planner.plan import plan
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.transformers_utils.config import geometry_from_config, load_model

GIB = 2**30
BUDGET = 42_949_672_960


@pytest.fixture
def qwen35(models_dir: Path):
    return load_model(models_dir / "Qwen3.5-27B.config.json")


@pytest.fixture
def qwen3_next(models_dir: Path):
    return load_model(models_dir / "Qwen3-Next-80B-A3B-Thinking.config.json")


def test_qwen35_bf16_block_and_padding(qwen35) -> None:
    p = plan(qwen35, EngineArgs())
    assert p.block_size == 784
    assert (
        "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal."
        in p.log
    )
    assert (
        "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size." in p.log
    )


def test_qwen35_fp8_block(qwen35) -> None:
    assert plan(qwen35, EngineArgs(kv_cache_dtype="fp8")).block_size == 1568


def test_qwen3_next_pages(qwen3_next) -> None:
    p = plan(qwen3_next, EngineArgs())
    assert p.mamba_page_size_bytes == 1_097_728
    assert p.block_size == 544
    assert p.block_decision is not None and p.block_decision.mamba_page_size_padded == 1_114_112
    assert plan(qwen3_next, EngineArgs(mamba_ssm_cache_dtype="float32")).block_size == 1056


def test_qwen3_next_capacity(qwen3_next) -> None:
    p = plan(qwen3_next, EngineArgs(max_model_len=262144, kv_cache_memory_bytes=BUDGET))
    assert p.grouping is not None
    assert [len(g.layer_names) for g in p.grouping.groups] == [12, 12, 12, 12]
    assert p.capacity is not None
    assert p.capacity.num_blocks == 3212
    assert p.capacity.total_blocks_per_request == 488
    assert p.capacity.request_bytes == 6_524_239_872
    assert "GPU KV cache size: 1,725,423 tokens, Maximum concurrency for 262,144 tokens per request: 6.58x" in p.log
    assert p.ok


def test_qwen3_next_does_not_fit_in_2gib(qwen3_next) -> None:
    p = plan(qwen3_next, EngineArgs(max_model_len=262144, kv_cache_memory_bytes=2 * GIB))
    assert p.memory_error is not None
    assert p.memory_error.estimated_max_model_len == 83_776
    assert p.memory_error.needed == 6_524_239_872
    assert "the estimated maximum model length is 83776" in str(p.memory_error)
    assert not p.ok


def sliding_model():
    kinds = (["sliding_attention"] * 5 + ["full_attention"]) * 6
    return geometry_from_config(
        {
            "architectures": ["Gemma3ForCausalLM"],
            "model_type": "gemma3_text",
            "num_hidden_layers": 36,
            "layer_types": kinds,
            "sliding_window": 1024,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "max_position_embeddings": 131072,
            "torch_dtype": "bfloat16",
        },
        "sliding-36.json",
    )


def test_sliding_window_int8_per_token_head() -> None:
    p = plan(
        sliding_model(),
        EngineArgs(
            kv_cache_dtype="int8_per_token_head",
            attention_backend="TRITON_ATTN",
            max_model_len=131072,
            max_num_batched_tokens=8192,
            async_scheduling=True,
            kv_cache_memory_bytes=BUDGET,
        ),
    )
    assert {lp.spec.page_size_bytes for lp in p.layers} == {33_792}
    assert p.grouping is not None and [len(g.layer_names) for g in p.grouping.groups] == [6] * 6
    assert p.capacity is not None and p.capacity.num_blocks == 211_833
    per = dict.fromkeys(p.capacity.blocks_per_request)
    assert sorted(per) == [1089, 8192]
    assert sorted(p.capacity.blocks_per_request) == [1089] * 5 + [8192]
    assert "GPU KV cache size: 2,036,032 tokens, Maximum concurrency for 131,072 tokens per request: 15.53x" in p.log


@pytest.mark.parametrize(
    ("k", "kv", "backend", "block", "pct"),
    [
        (7, "auto", None, 448, "3.23"),
        (15, "auto", None, 480, "1.27"),
        (7, "int8_per_token_head", "TRITON_ATTN", 864, "1.09"),
    ],
)
def test_section7_target_speculative_tokens(qwen35, k, kv, backend, block, pct) -> None:
    p = plan(
        qwen35,
        EngineArgs(
            mamba_ssm_cache_dtype="float16",
            num_speculative_tokens=k,
            kv_cache_dtype=kv,
            attention_backend=backend,
        ),
    )
    assert p.block_size == block
    assert (
        f"Padding mamba page size by {pct}% to ensure that mamba page size and attention page size are exactly equal."
        in p.log
    )


def test_gpu_memory_budget(qwen3_next) -> None:
    # ceil(80 GiB * 0.92) - 60 GiB of weights/activations
    args = EngineArgs(max_model_len=262144, gpu_memory_bytes=80 * GIB, non_kv_memory_bytes=60 * GIB)
    p = plan(qwen3_next, args)
    assert p.capacity is not None
    assert p.capacity.available_bytes == -(-80 * GIB * 92 // 100) - 60 * GIB


def test_num_gpu_blocks_override(qwen3_next) -> None:
    p = plan(qwen3_next, EngineArgs(max_model_len=262144, kv_cache_memory_bytes=BUDGET, num_gpu_blocks_override=1000))
    assert p.capacity is not None and p.capacity.num_blocks == 1000
    assert "Overriding num_gpu_blocks=3212 with num_gpu_blocks_override=1000" in p.log


def test_prefix_caching_off_uses_mode_none(qwen3_next) -> None:
    p = plan(qwen3_next, EngineArgs(max_model_len=262144, kv_cache_memory_bytes=BUDGET, enable_prefix_caching=False))
    assert p.capacity is not None
    # mode none: one state page per request per mamba group (1 + 0 speculative)
    assert sorted(p.capacity.blocks_per_request) == [1, 1, 1, 482]


def test_per_token_head_needs_triton(qwen3_next) -> None:
    # flash_attn.py's supported_kv_cache_dtypes has no per-token-head entry; triton_attn.py's has
    with pytest.raises(InputError, match=r"FLASH_ATTN is not valid .*kv_cache_dtype not supported"):
        plan(qwen3_next, EngineArgs(kv_cache_dtype="int8_per_token_head", attention_backend="FLASH_ATTN"))
    assert plan(qwen3_next, EngineArgs(kv_cache_dtype="int8_per_token_head")).backend.name == "TRITON_ATTN"


@pytest.mark.parametrize(
    ("kv_cache_dtype", "backend"),
    [("auto", "FLASH_ATTN"), ("fp8", "FLASH_ATTN"), ("fp8_e5m2", "FLASHINFER")],
)
def test_default_backend_is_vllms_first_valid_on_sm90(qwen3_next, kv_cache_dtype: str, backend: str) -> None:
    # _get_backend_priorities (SM90): FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLEX_ATTENTION; FLASH_ATTN
    # serves auto/fp8/fp8_e4m3 only, FLASHINFER adds fp8_e5m2 and nvfp4
    assert plan(qwen3_next, EngineArgs(kv_cache_dtype=kv_cache_dtype)).backend.name == backend


@pytest.mark.parametrize("kv_cache_dtype", ["nvfp4", "nvfp4_4over6"])
def test_nvfp4_has_no_backend_on_sm90(qwen3_next, kv_cache_dtype: str) -> None:
    # vLLM 0.28.0 on an H200 (the e2e oracle): "No valid attention backend found for cuda with
    # AttentionSelectorConfig(..., kv_cache_dtype=nvfp4, ...)": FlashInfer takes nvfp4 only on SM100
    with pytest.raises(InputError, match="No valid attention backend"):
        plan(qwen3_next, EngineArgs(kv_cache_dtype=kv_cache_dtype))


def test_tp_must_divide_heads(qwen3_next) -> None:
    with pytest.raises(InputError) as info:
        plan(qwen3_next, EngineArgs(tensor_parallel_size=3))
    assert info.value.source == "--tensor-parallel-size"


def test_max_model_len_above_derived(qwen3_next, monkeypatch) -> None:
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    with pytest.raises(InputError, match="max_position_embeddings=262144"):
        plan(qwen3_next, EngineArgs(max_model_len=300000))


def test_auto_fit_max_model_len(qwen3_next) -> None:
    p = plan(qwen3_next, EngineArgs(max_model_len=-1, kv_cache_memory_bytes=2 * GIB))
    assert p.max_model_len == 83_776


def test_not_enough_memory_message_is_vllms(qwen3_next) -> None:
    # vLLM formats GiB with round(x, 2): 2 GiB prints as "2.0", 6.076 GiB as "6.08"
    p = plan(qwen3_next, EngineArgs(max_model_len=262144, kv_cache_memory_bytes=2 * GIB))
    assert p.memory_error is not None
    assert str(p.memory_error).startswith(
        "To serve at least one request with the model's max seq len (262144), (6.08 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (2.0 GiB). Based on the available "
        "memory, the estimated maximum model length is 83776. "
    )


def test_tp_must_divide_attention_heads(models_dir: Path) -> None:
    # gpt-oss-20b: 64 attention heads, 8 KV heads; vLLM refuses TP 3 (64 % 3 != 0)
    gpt_oss = load_model(models_dir / "gpt-oss-20b.config.json")
    with pytest.raises(InputError, match=r"attention heads \(64\) must be divisible by the tensor parallel size \(3\)"):
        plan(gpt_oss, EngineArgs(tensor_parallel_size=3))
    # TP 16 with 8 KV heads: gpt-oss never replicates KV heads (vLLM's GptOssAttention)
    with pytest.raises(InputError, match="splits its 8 KV heads"):
        plan(gpt_oss, EngineArgs(tensor_parallel_size=16, nnodes=2))
    # on one 8-GPU node vLLM's ParallelConfig refuses 16 ranks first
    with pytest.raises(InputError, match=r"World size \(16\) is larger than the number of available GPUs \(8\)"):
        plan(gpt_oss, EngineArgs(tensor_parallel_size=16))
    # a Llama-style model replicates them: 16 ranks, 8 KV heads -> 1 KV head per rank
    dense = geometry_from_config(
        {
            "architectures": ["LlamaForCausalLM"],
            "num_hidden_layers": 2,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "hidden_size": 4096,
        }
    )
    p = plan(dense, EngineArgs(tensor_parallel_size=16, nnodes=2, max_model_len=2048))
    assert {lp.initial.num_kv_heads for lp in p.layers} == {1}  # type: ignore[union-attr]


def test_hybrid_gdn_fields_take_the_config_class_defaults(models_dir: Path, tmp_path: Path) -> None:
    data = json.loads((models_dir / "Qwen3-Next-80B-A3B-Thinking.config.json").read_text())
    del data["linear_num_value_heads"]  # vLLM's Qwen3NextConfig defaults it to 32
    data["linear_key_head_dim"] = "128"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        load_model(path)
    assert (info.value.where, info.value.reason) == ("linear_key_head_dim", 'must be an integer, got "128"')
    del data["linear_key_head_dim"]  # default 128
    path.write_text(json.dumps(data))
    gdn = load_model(path).mamba.gdn
    assert gdn is not None and (gdn.num_v_heads, gdn.head_k_dim) == (32, 128)


def test_padding_layer_warnings_are_logged(qwen35, models_dir: Path) -> None:
    from dryboot.planner.plan import Drafter

    drafter = Drafter(load_model(models_dir / "dflash2-drafter-sw5.config.json"))
    p = plan(
        qwen35,
        EngineArgs(
            num_speculative_tokens=7,
            mamba_ssm_cache_dtype="float16",
            max_model_len=65536,
            kv_cache_memory_bytes=40 * GIB,
        ),
        drafter=drafter,
    )
    # upstream grouping of 48 GDN / 16 full / 5 sliding layers: group_size 5 -> 50 and 20 slots
    assert "Add 2 padding layers, may waste at most 4.17% KV cache memory" in p.log
    assert "Add 4 padding layers, may waste at most 25.00% KV cache memory" in p.log


def test_unknown_version_is_planned_with_nearest_rules_and_said(qwen3_next) -> None:
    p = plan(qwen3_next, EngineArgs(vllm_version="0.30.2"))
    assert p.rules.version == "0.30.0"
    from dryboot.planner.assumptions import assumptions

    [a] = [a for a in assumptions(p) if a.flag == "--vllm-version"]
    assert "no rule table for vLLM 0.30.2: planned with those of 0.30.0" in a.reason


def test_plan_repeats_no_once_per_process_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan reads no file and decodes no JSON once the first plan has run: the registry's
    architecture table and the release rules are built once per process (counted, not timed;
    bench/sweep_speed.py times it)."""
    from dryboot.planner.sweep import Arm, Space, planner_inputs
    from dryboot.vllm.models import registry

    space = Space()
    arm = Arm("promote-granular")
    inputs = [planner_inputs(space.point(i)) for i in space.sample(40, 3)]

    def run_all() -> None:
        for model, args, drafter in inputs:
            with contextlib.suppress(InputError):
                plan(model, args, drafter=drafter, policies=arm.policies)

    run_all()
    counts = {"json.loads": 0, "open": 0, "read_text": 0}

    def counted(name: str, real: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            counts[name] += 1
            return real(*a, **k)

        return wrapper

    monkeypatch.setattr(json, "loads", counted("json.loads", json.loads))
    monkeypatch.setattr(builtins, "open", counted("open", builtins.open))
    monkeypatch.setattr(Path, "read_text", counted("read_text", Path.read_text))
    run_all()
    assert counts == {"json.loads": 0, "open": 0, "read_text": 0}
    assert registry._registry.cache_info().misses == 1
