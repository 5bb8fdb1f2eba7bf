"""Fields only vLLM's own config class defaulted: 0.33.0 reads AFMoE and Hunyuan V3 configs with
transformers' classes (its ``transformers_utils/configs`` no longer has ``afmoe.py`` or ``hy_v3.py``),
which define no ``score_func`` / ``first_k_dense_replace``..., so a file without them fails while the
model is built. vLLM's words, from its own engine start on each release's tree (the tiny configs of
``tests/fidelity/data/architectures`` without those fields, ``record_pp.py --single``, 2026-12-05):
0.30.0 serves both, 0.33.0 raises the errors below."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dryboot.errors import InputError
from dryboot.vllm.config.resolve import create_engine_config
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.transformers_utils.config import load_model

AFMOE: dict[str, Any] = {
    "architectures": ["AfmoeForCausalLM"],
    "model_type": "afmoe",
    "num_hidden_layers": 4,
    "hidden_size": 512,
    "intermediate_size": 1024,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "max_position_embeddings": 16384,
    "vocab_size": 1024,
    "torch_dtype": "bfloat16",
    "head_dim": 64,
    "sliding_window": 1024,
    "layer_types": ["sliding_attention"] * 3 + ["full_attention"],
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "num_shared_experts": 1,
    "num_dense_layers": 1,
    "moe_intermediate_size": 256,
}
#: what the published Trinity configs (arcee-ai/Trinity-Mini, -Nano) set
AFMOE_ROUTER = {"score_func": "sigmoid", "route_norm": True, "n_group": 1, "topk_group": 1}
HYV3: dict[str, Any] = {
    "architectures": ["HYV3ForCausalLM"],
    "model_type": "hy_v3",
    "num_hidden_layers": 3,
    "hidden_size": 512,
    "intermediate_size": 1024,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "max_position_embeddings": 32768,
    "vocab_size": 1024,
    "torch_dtype": "bfloat16",
    "head_dim": 64,
    "num_experts": 4,
    "num_experts_per_tok": 2,
}
#: what tencent/Hy3's config sets (route_norm: true in vLLM's own HYV3Config default); without
#: qk_norm 0.33.0 builds no q/k norms (hy_v3.py getattr default False): refused as not modelled
HYV3_MOE = {"first_k_dense_replace": 1, "expert_hidden_dim": 256, "route_norm": True, "qk_norm": True}

#: (config, fields 0.33.0 needs, vLLM 0.33.0's error without the first of them)
CASES = {
    "AfmoeForCausalLM": (AFMOE, AFMOE_ROUTER, "AttributeError: 'AfmoeConfig' object has no attribute 'score_func'"),
    "HYV3ForCausalLM": (HYV3, HYV3_MOE, "ValueError: first_k_dense_replace not exist,please check config"),
}


def _plan(tmp_path: Path, config: dict[str, Any], version: str) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config))
    args = EngineArgs(kv_cache_memory_bytes=2_000_000_000, max_num_batched_tokens=4096, vllm_version=version)
    create_engine_config(load_model(tmp_path), args, None)


@pytest.mark.parametrize("architecture", sorted(CASES))
def test_unset_fields_refused_on_0_33_0(tmp_path: Path, architecture: str) -> None:
    config, _, error = CASES[architecture]
    with pytest.raises(InputError) as exc:
        _plan(tmp_path, config, "0.33.0")
    assert error in str(exc.value), str(exc.value)


@pytest.mark.parametrize("architecture", sorted(CASES))
def test_unset_fields_planned_on_0_30_0(tmp_path: Path, architecture: str) -> None:
    config, _, _ = CASES[architecture]
    _plan(tmp_path, config, "0.30.0")


@pytest.mark.parametrize("architecture", sorted(CASES))
@pytest.mark.parametrize("missing", [0, 1, 2, 3])
def test_each_field_named_on_0_33_0(tmp_path: Path, architecture: str, missing: int) -> None:
    config, given, _ = CASES[architecture]
    key = list(given)[missing]
    full = {**config, **given}
    _plan(tmp_path, full, "0.33.0")
    del full[key]
    with pytest.raises(InputError) as exc:
        _plan(tmp_path, full, "0.33.0")
    assert exc.value.args and key in str(exc.value), str(exc.value)


#: the verification config of Hunyuan MoE V1 before it set head_dim (attention_head_dim only)
HUNYUAN: dict[str, Any] = {
    "architectures": ["HunYuanMoEV1ForCausalLM"],
    "model_type": "hunyuan_v1_moe",
    "vocab_size": 1024,
    "hidden_size": 1024,
    "intermediate_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "attention_head_dim": 128,
    "max_position_embeddings": 32768,
    "use_qk_norm": True,
    "num_experts": 8,
    "moe_topk": [2] * 4,
    "moe_intermediate_size": [512] * 4,
    "use_mixed_mlp_moe": True,
    "num_shared_expert": [1] * 4,
    "torch_dtype": "bfloat16",
}


@pytest.mark.parametrize(
    ("version", "refused"), [("0.28.0", False), ("0.29.0", True), ("0.30.0", True), ("0.33.0", True)]
)
def test_hunyuan_without_head_dim_per_release(tmp_path: Path, version: str, refused: bool) -> None:
    """0.28.0's own HunYuanAttention falls back to attention_head_dim; from 0.29.0 the Transformers
    backend's attention reads head_dim alone (vLLM 0.30.0 and 0.33.0: TypeError while building)."""
    if not refused:
        _plan(tmp_path, HUNYUAN, version)
        return
    with pytest.raises(InputError) as exc:
        _plan(tmp_path, HUNYUAN, version)
    assert "head_dim" in str(exc.value) and "NoneType" in str(exc.value), str(exc.value)
    _plan(tmp_path, {**HUNYUAN, "head_dim": 128}, version)
