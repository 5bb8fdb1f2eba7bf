"""Issues 33 and 37: ``Qwen3_5MoeForCausalLM``, the text-only Qwen3.5 / 3.6 MoE (``qwen3_5.py``:
``Qwen3_5ForCausalLMBase`` over a ``qwen3_5_moe_text`` config). Planned through the Qwen3.5 text
rules; its weights are the Qwen3.5-MoE language model's (the wrapper's walk without its tower) on a
plain rotary table (weight-only integer exports too); fp8 exports and a dense config under this
class refused by name. vLLM's own figures are in the fidelity records (``recorded*.json``,
``quant-recorded-moe-*.json``); these tests pin the reuse and the refusals."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights
from dryboot.vllm.models.registry import architecture_table
from dryboot.vllm.transformers_utils.config import geometry_from_config

TESTS = Path(__file__).resolve().parent
TEXT_ONLY = TESTS / "fidelity" / "data" / "weights" / "configs" / "Qwen--Qwen3.6-35B-A3B+text-only" / "config.json"
WRAPPER = TESTS / "data" / "configs" / "public" / "Qwen--Qwen3.6-35B-A3B" / "config.json"


def _load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def test_planned_on_every_release() -> None:
    for version in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):
        row = next(r for r in architecture_table(version) if r.architecture == "Qwen3_5MoeForCausalLM")
        assert row.status == "verified", (version, row.reason)


def test_cache_layout_is_the_wrappers_text_model() -> None:
    """The text-only class and the wrapper's language model have the same layers and state."""
    text_only = geometry_from_config(_load(TEXT_ONLY))
    wrapper = geometry_from_config(_load(WRAPPER))
    assert text_only.architecture == "Qwen3_5MoeForCausalLM"
    assert text_only.config_class.hf_model_type == "qwen3_5_moe_text"
    # vLLM's is_hybrid reads layer_types from the top-level config: the text-only class has the
    # attribute, the wrapper's class does not (resolve.is_hybrid); every other field agrees
    assert text_only.mamba is not None and text_only.mamba.hf_layer_types
    assert wrapper.mamba is not None and not wrapper.mamba.hf_layer_types
    mamba = replace(text_only.mamba, hf_layer_types=False)
    same = replace(text_only, architecture=wrapper.architecture, config_class=wrapper.config_class, mamba=mamba)
    assert same == wrapper


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_weights_are_the_wrappers_language_model_on_0_33_0(tp: int) -> None:
    """On 0.32+ the wrapper's M-RoPE table covers max_position_embeddings only, as the text-only
    class's plain table does: the two walks agree to the byte with the tower dropped."""
    par = Parallel(tp=tp, vllm_version="0.33.0")
    text_only = rank_weights(_load(TEXT_ONLY), par)
    wrapper = rank_weights(_load(WRAPPER), par, language_model_only=True)
    assert text_only.allocated_bytes == wrapper.allocated_bytes


def test_rotary_table_is_plain_before_0_32() -> None:
    """0.27.1-0.31.0 wrappers cache the M-RoPE table four times as long; the text-only class's
    config hook drops the M-RoPE fields (Qwen3_5ForCausalLMConfig): 3 x 262,144 positions x 64
    rotary dims (cos and sin) x 2 bytes (the model's bfloat16) fewer."""
    par = Parallel(tp=2, vllm_version="0.28.0")
    text_only = rank_weights(_load(TEXT_ONLY), par)
    wrapper = rank_weights(_load(WRAPPER), par, language_model_only=True)
    assert wrapper.allocated_bytes - text_only.allocated_bytes == 3 * 262_144 * 64 * 2


def test_autoround_export_is_the_wrappers_language_model_on_0_33_0() -> None:
    """An AutoRound W4A16 text-only export (layers named ``model.layers.N``) is sized as the
    wrapper's language model under the same object (named ``model.language_model.layers.N``):
    both recorded against vLLM (quant-recorded-moe-*.json)."""
    moe = TESTS / "fidelity" / "data" / "weights" / "quant-configs-moe"
    text_only = _load(moe / "Qwen--Qwen3.6-35B-A3B+text-only+AutoRound-W4A16" / "config.json")
    wrapper = _load(moe / "Qwen--Qwen3.6-35B-A3B+AutoRound-W4A16" / "config.json")
    par = Parallel(tp=2, capability=(8, 6), vllm_version="0.33.0")
    got = rank_weights(text_only, par).allocated_bytes
    assert got == rank_weights(wrapper, par, language_model_only=True).allocated_bytes


def test_fp8_export_is_refused_by_name() -> None:
    """Plain fp8 layouts after loading are recorded for the wrapper, not the text-only class."""
    quant = {"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic"}
    config = {**_load(TEXT_ONLY), "quantization_config": quant}
    with pytest.raises(InputError, match="not qwen3_5_moe_text"):
        rank_weights(config, Parallel(tp=1, capability=(8, 9), vllm_version="0.28.0"))


def test_dense_config_under_the_moe_class_is_refused() -> None:
    """vLLM builds dense MLPs from a qwen3_5_text model type and set_moe_parameters raises."""
    config = {**_load(TEXT_ONLY), "model_type": "qwen3_5_text"}
    with pytest.raises(InputError, match="set_moe_parameters"):
        geometry_from_config(config)


def test_dense_class_over_a_moe_config_builds_the_moe_layers() -> None:
    """``Qwen3_5ForCausalLM`` over a ``qwen3_5_moe_text`` config: vLLM's decoder layer picks its
    MLP by model type (recorded: variant-configs/Qwen3_5ForCausalLMMoeText.json)."""
    config = _load(TEXT_ONLY)
    par = Parallel(tp=2, vllm_version="0.28.0")
    dense_class = rank_weights({**config, "architectures": ["Qwen3_5ForCausalLM"]}, par)
    assert dense_class.allocated_bytes == rank_weights(config, par).allocated_bytes
