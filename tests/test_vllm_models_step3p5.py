"""Step-3.5 read by either config class: vLLM's own ``Step3p5Config`` (0.28-0.32) and transformers'
``Step3p7TextConfig`` (0.33), and LongCat-Flash's fields transformers' ``LongcatFlashConfig`` lacks
(0.32+). The figures each reading gives are checked against the releases' own engine starts in
``tests/fidelity/test_release_architectures.py``; these pin the readings' rules one by one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from config_changes import changed
from dryboot.errors import InputError
from dryboot.vllm.config.hf import LayerKind
from dryboot.vllm.config.resolve import for_release
from dryboot.vllm.models.registry import family_of
from dryboot.vllm.transformers_utils.config import geometry_from_config
from dryboot.vllm.versions import rules_for

ARCHS = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures"


def _config(arch: str, **changes: Any) -> dict[str, Any]:
    return changed(json.loads((ARCHS / f"{arch}.json").read_text()), changes)


def test_own_class_slides_the_other_setting_heads_and_checks_the_config_heads() -> None:
    model = for_release(geometry_from_config(_config("Step3p5ForCausalLM")), rules_for("0.32.0"))
    assert model.layer_kinds == (LayerKind.FULL, LayerKind.SLIDING, LayerKind.SLIDING, LayerKind.SLIDING)
    assert model.num_attention_heads == 8 and model.parallel.extra_attention_heads == (12,)


def test_transformers_class_checks_the_largest_layers_heads() -> None:
    """``ModelArchitectureConfig.from_layers`` collapses the per-layer head counts with max: TP 8
    is refused against 12 heads at config time on 0.33.0, as recorded."""
    model = for_release(geometry_from_config(_config("Step3p5ForCausalLM")), rules_for("0.33.0"))
    assert model.num_attention_heads == 12 and model.parallel.extra_attention_heads == (8,)
    assert model.layer_kinds == (LayerKind.FULL, LayerKind.SLIDING, LayerKind.SLIDING, LayerKind.SLIDING)


def test_transformers_class_defaults_every_layer_full_and_moe_from_layer_3() -> None:
    config = _config("Step3p5ForCausalLM", layer_types=None, moe_layers_enum=None)
    own = for_release(geometry_from_config(config), rules_for("0.32.0"))
    hf = for_release(geometry_from_config(config), rules_for("0.33.0"))
    assert own.layer_kinds == (LayerKind.SLIDING, LayerKind.FULL) * 2 and own.parallel.first_moe_layer == 1
    assert hf.layer_kinds == (LayerKind.FULL,) * 4 and hf.parallel.first_moe_layer == 3


def test_layer_types_of_another_length_refused_by_transformers_class_only() -> None:
    config = _config("Step3p5ForCausalLM", layer_types=["full_attention"] * 6)
    for_release(geometry_from_config(config), rules_for("0.32.0"))
    with pytest.raises(InputError, match=r"6 layer types for 4 layers.*validate_layer_type"):
        for_release(geometry_from_config(config), rules_for("0.33.0"))


@pytest.mark.parametrize("version", ["0.28.0", "0.33.0"])
def test_router_bias_off_is_refused_on_every_release(version: str) -> None:
    config = _config("Step3p5ForCausalLM", use_moe_router_bias=False, need_fp32_gate=True, norm_expert_weight=True)
    with pytest.raises(InputError, match="Only support use_moe_router_bias is true"):
        for_release(geometry_from_config(config), rules_for(version))


@pytest.mark.parametrize(
    ("arch", "version", "missing", "words"),
    [
        ("Step3p5ForCausalLM", "0.33.0", "use_moe_router_bias", "'Step3p7TextConfig' object has no attribute"),
        ("LongcatFlashForCausalLM", "0.32.0", "mla_scale_q_lora", "'LongcatFlashConfig' object has no attribute"),
        ("LongcatFlashForCausalLM", "0.33.0", "mla_scale_q_lora", "'LongcatFlashConfig' object has no attribute"),
    ],
)
def test_fields_transformers_class_lacks_refused_where_it_reads_the_config(
    arch: str, version: str, missing: str, words: str
) -> None:
    model = for_release(geometry_from_config(_config(arch)), rules_for(version))
    with pytest.raises(InputError, match=words) as info:
        family_of(model).verify_release(model, rules_for(version))
    assert info.value.where == missing
    earlier = for_release(geometry_from_config(_config(arch)), rules_for("0.30.0"))
    family_of(earlier).verify_release(earlier, rules_for("0.30.0"))  # vLLM's own config class defaults them
