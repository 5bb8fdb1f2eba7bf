"""The oracle drives vLLM 0.28.0 correctly: it reproduces the acceptance figures that vLLM
0.28.0 itself produced (Qwen3-Next-80B-A3B hybrid, a sliding-window int8-per-token-head model)
and vLLM's NotImplementedError when a page cannot be unified.

Skipped unless DRYBOOT_VLLM_PYTHON points at the venv built by scripts/fidelity-env.sh.
All cases run in one oracle process (module-scoped fixture).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.fidelity

GIB = 1024**3
AVAILABLE_40G = 42_949_672_960
QWEN3_NEXT = "Qwen3-Next-80B-A3B-Thinking.config.json"
GDN_SHAPES = [[3, 8192], [32, 128, 128]]  # only for the no-align unify cases below


def _qwen3_next_layers(backend: str, *, explicit_mamba: bool = False) -> dict[str, dict[str, Any]]:
    """48 layers, every 4th full attention (2 KV heads x 256, bf16), the rest Gated DeltaNet.

    Without ``explicit_mamba`` the mamba layers take shapes, dtypes, block size and padded page
    from vLLM (the model class via the case's "align" request, then cache_config)."""
    layers: dict[str, dict[str, Any]] = {}
    for i in range(48):
        if (i + 1) % 4 == 0:
            layers[f"model.layers.{i}.self_attn.attn"] = {
                "type": "full",
                "backend": backend,
                "total_num_kv_heads": 2,
                "head_size": 256,
                "dtype": "bfloat16",
            }
        else:
            mamba: dict[str, Any] = {"type": "mamba", "mamba_type": "GDN_ATTN"}
            if explicit_mamba:
                mamba.update(shapes=GDN_SHAPES, dtypes=["bfloat16", "bfloat16"], block_size=16)
            layers[f"model.layers.{i}.linear_attn"] = mamba
    return layers


def _sliding_layers() -> dict[str, dict[str, Any]]:
    """30 sliding-window layers (window 1024) + 6 full, 8 KV heads x 128, int8 per token-head."""
    common = {
        "backend": "TRITON_ATTN",
        "num_kv_heads": 8,
        "head_size": 128,
        "dtype": "bfloat16",
        "kv_cache_dtype": "int8_per_token_head",
        "block_size": 16,
    }
    layers: dict[str, dict[str, Any]] = {}
    for i in range(36):
        if i % 6 == 5:
            layers[f"model.layers.{i}.self_attn.attn"] = {"type": "full", **common}
        else:
            layers[f"model.layers.{i}.self_attn.attn"] = {"type": "sliding", "sliding_window": 1024, **common}
    return layers


@pytest.fixture(scope="module")
def results(vllm_oracle: Any, models_dir: Path) -> dict[str, dict[str, Any]]:
    hf = json.loads((models_dir / QWEN3_NEXT).read_text())
    qwen_align = {"backend": "FLASH_ATTN", "architecture": "Qwen3NextForCausalLM", "hf_config": hf}
    qwen_config = {"max_model_len": 262_144, "enable_prefix_caching": True, "tensor_parallel_size": 1}
    cases = [
        {
            "id": "qwen3-next-40g",
            "config": qwen_config,
            "layers": _qwen3_next_layers("FLASH_ATTN"),
            "align": qwen_align,
            "available_memory": AVAILABLE_40G,
        },
        {
            "id": "qwen3-next-2g",
            "config": qwen_config,
            "layers": _qwen3_next_layers("FLASH_ATTN"),
            "align": qwen_align,
            "available_memory": 2 * GIB,
        },
        {
            "id": "sliding-int8pth",
            "config": {
                "max_model_len": 131_072,
                "max_num_batched_tokens": 8192,
                "async_scheduling": True,
                "block_size": 16,
            },
            "layers": _sliding_layers(),
            "available_memory": AVAILABLE_40G,
        },
        {
            "id": "qwen3-next-calculator",
            "config": qwen_config,
            "layers": _qwen3_next_layers("FLASH_ATTN"),
            "align": {
                "backend": "FLASH_ATTN",
                "architecture": "Qwen3NextForCausalLM",
                "hf_config": hf,
                "mamba_state": {
                    "calculator": "gated_delta_net",
                    "shape_args": {
                        "num_k_heads": hf["linear_num_key_heads"],
                        "num_v_heads": hf["linear_num_value_heads"],
                        "head_k_dim": hf["linear_key_head_dim"],
                        "head_v_dim": hf["linear_value_head_dim"],
                        "conv_kernel_size": hf["linear_conv_kernel_dim"],
                    },
                },
            },
            "available_memory": AVAILABLE_40G,
        },
        # No hybrid alignment (block 16 everywhere): the attention page (32 KiB) does not
        # divide the mamba page (1,097,728 B). CPU_ATTN does not index KV by block stride, so
        # unify must raise; FLASH_ATTN does, so its layers are padded instead.
        {
            "id": "unify-cpu-attn",
            "config": {"max_model_len": 4096, "enable_prefix_caching": False},
            "layers": _qwen3_next_layers("CPU_ATTN", explicit_mamba=True),
            "available_memory": AVAILABLE_40G,
        },
        {
            "id": "unify-flash-attn",
            "config": {"max_model_len": 4096, "enable_prefix_caching": False},
            "layers": _qwen3_next_layers("FLASH_ATTN", explicit_mamba=True),
            "available_memory": AVAILABLE_40G,
        },
    ]
    return {r["id"]: r for r in vllm_oracle(cases)}


def test_qwen3_next_align(results: dict[str, dict[str, Any]]) -> None:
    r = results["qwen3-next-40g"]
    assert r["error"] is None, r["error"]
    align = r["align"]
    assert align["mamba_shapes"] == [[3, 8192], [32, 128, 128]]  # vLLM's GDN shape calculator
    assert align["mamba_dtypes"] == ["bfloat16", "bfloat16"]
    assert align["mamba_page_size"] == 1_097_728
    assert align["attn_page_size_1_token"] == 2048
    assert align["block_size"] == 544
    assert align["mamba_block_size"] == 544
    assert align["mamba_page_size_padded"] == 1_114_112
    assert align["mamba_cache_mode"] == "align"
    assert (
        "Setting attention block size to 544 tokens to ensure that attention page size is "
        ">= mamba page size." in align["log"]
    )
    # 100 * 16384 / 1097728 = 1.4925...
    assert (
        "Padding mamba page size by 1.49% to ensure that mamba page size and attention page "
        "size are exactly equal." in align["log"]
    )


def test_qwen3_next_capacity(results: dict[str, dict[str, Any]]) -> None:
    r = results["qwen3-next-40g"]
    assert r["error"] is None, r["error"]
    groups = r["groups"]
    assert [len(g["layer_names"]) for g in groups] == [12, 12, 12, 12]
    assert sorted(g["spec_type"] for g in groups) == ["FullAttentionSpec"] + ["MambaSpec"] * 3
    assert {g["page_size_bytes"] for g in groups} == {1_114_112}
    assert {g["block_size"] for g in groups} == {544}
    # Blocks one full-length request needs: full attention cdiv(262144, 544) = 482; each
    # mamba group in "align" mode 2 (+ num_speculative_tokens).
    per_req = {g["spec_type"]: g["blocks_per_request"] for g in groups}
    assert per_req == {"FullAttentionSpec": 482, "MambaSpec": 2}
    full = next(g for g in groups if g["spec_type"] == "FullAttentionSpec")
    assert full["supports_block_size"] == {"FLASH_ATTN": True}
    assert r["num_blocks"] == 3212
    assert r["kv_cache_size_tokens"] == 1_725_423
    assert round(r["max_concurrency"], 2) == 6.58
    assert "GPU KV cache size: 1,725,423 tokens, Maximum concurrency for 262,144 tokens per request: 6.58x" in r["log"]
    assert (r["scheduler_block_size"], r["hash_block_size"]) == (544, 544)


def test_qwen3_next_not_enough_memory(results: dict[str, dict[str, Any]]) -> None:
    r = results["qwen3-next-2g"]
    err = r["error"]
    assert err is not None and err["type"] == "ValueError"
    assert err["stage"] == "get_kv_cache_configs"
    assert "the estimated maximum model length is 83776." in err["message"]
    assert "(6.08 GiB KV cache is needed" in err["message"]
    assert "available KV cache memory (2.0 GiB)" in err["message"]
    # The per-layer legacy check_enough_kv_cache_memory agrees here.
    assert "the estimated maximum model length is 83776." in r["check_enough_kv_cache_memory"]["message"]


def test_sliding_window_int8_per_token_head(results: dict[str, dict[str, Any]]) -> None:
    r = results["sliding-int8pth"]
    assert r["error"] is None, r["error"]
    # TritonAttentionBackend.customize_spec: 8 heads * (2 * 128 * 1 B + 2 fp32 scales) * 16 tokens
    assert {s["page_size_bytes"] for s in r["specs"].values()} == {33_792}
    assert {s["state_content_bytes"] for s in r["specs"].values()} == {264}
    assert all(s["indexes_kv_by_block_stride"] for s in r["specs"].values())
    groups = r["groups"]
    assert [len(g["layer_names"]) for g in groups] == [6] * 6
    assert sorted(g["spec_type"] for g in groups) == ["FullAttentionSpec"] + ["SlidingWindowSpec"] * 5
    per_req = {g["spec_type"]: g["blocks_per_request"] for g in groups}
    # sliding: cdiv(min(1024 - 1 + 2 * 8192, 131072), 16) + 1 with async scheduling
    assert per_req == {"FullAttentionSpec": 8192, "SlidingWindowSpec": 1089}
    assert r["num_blocks"] == 211_833
    assert r["kv_cache_size_tokens"] == 2_036_032
    assert round(r["max_concurrency"], 2) == 15.53
    assert any("GPU KV cache size: 2,036,032 tokens" in line and "15.53x" in line for line in r["log"])


def test_unify_raises_without_block_stride_indexing(results: dict[str, dict[str, Any]]) -> None:
    r = results["unify-cpu-attn"]
    attn = [s for s in r["specs"].values() if s["type"] == "FullAttentionSpec"]
    assert attn and not any(s["indexes_kv_by_block_stride"] for s in attn)  # CPU_ATTN's own answer
    assert r["unify_error"]["type"] == "NotImplementedError"
    assert r["error"]["type"] == "NotImplementedError"
    assert r["error"]["stage"] == "get_kv_cache_configs"


def test_unify_pads_with_block_stride_indexing(results: dict[str, dict[str, Any]]) -> None:
    r = results["unify-flash-attn"]
    assert r["error"] is None, r["error"]
    assert r["unify_error"] is None
    unified = r["unified"]
    assert {u["page_size_bytes"] for u in unified.values()} == {1_097_728}
    attn = [name for name, s in r["specs"].items() if s["type"] == "FullAttentionSpec"]
    assert {unified[n]["block_size"] for n in attn} == {16}  # padded, block unchanged


def test_calculator_stand_in_matches_model_class(results: dict[str, dict[str, Any]]) -> None:
    """vLLM's MambaStateShapeCalculator fed with HF numbers == vLLM's Qwen3-Next class."""
    real, calc = results["qwen3-next-40g"], results["qwen3-next-calculator"]
    assert calc["error"] is None, calc["error"]
    for key in ("block_size", "mamba_page_size", "mamba_page_size_padded", "mamba_shapes", "mamba_dtypes"):
        assert calc["align"][key] == real["align"][key]
    assert (calc["num_blocks"], calc["kv_cache_size_tokens"]) == (real["num_blocks"], real["kv_cache_size_tokens"])
