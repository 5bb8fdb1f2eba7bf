"""Model families and the architecture registry (``dryboot.vllm.models``).

Expected values are facts of vLLM 0.28.0 and the config classes it reads with: the registry's
table sizes (``model_executor/models/registry.py``: 131 text-generation, 119 multimodal, 56
speculative-decoding architectures) and the config classes' defaults and layer rules, each
named where it is asserted.
"""

from __future__ import annotations

from collections import Counter

import pytest

from dryboot.errors import InputError
from dryboot.vllm.config.hf import LayerKind, geometry_from_config
from dryboot.vllm.models.registry import ARCHITECTURES, architecture_table


def test_table_covers_vllm_registry() -> None:
    rows = architecture_table()
    assert Counter(r.kind for r in rows) == {"text-generation": 131, "multimodal": 119, "speculative-decoding": 56}
    modelled = {r.architecture for r in rows if r.status == "verified"}
    assert modelled == set(ARCHITECTURES)  # every family architecture is a real vLLM 0.28.0 name


def test_unknown_architecture_is_refused_by_name() -> None:
    with pytest.raises(InputError) as info:
        geometry_from_config({"architectures": ["KimiLinearForCausalLM"], "num_hidden_layers": 4}, "kimi.json")
    assert info.value.where == "architectures"
    assert "KimiLinearForCausalLM is not modelled" in info.value.reason


def llama(**extra: object) -> dict[str, object]:
    return {"num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 1024, **extra}


def test_llama_config_class_defaults() -> None:
    m = geometry_from_config({"architectures": ["LlamaForCausalLM"], "model_type": "llama", **llama()})
    assert m.max_position_embeddings == 2048  # LlamaConfig
    assert (m.num_kv_heads, m.head_dim) == (8, 128)  # KV heads = heads, head_dim = hidden // heads


def test_mistral_default_window_makes_every_layer_sliding() -> None:
    m = geometry_from_config({"architectures": ["MistralForCausalLM"], "model_type": "mistral", **llama()})
    assert m.layer_kinds == (LayerKind.SLIDING,) * 4 and m.sliding_window == 4096  # MistralConfig
    explicit_none = geometry_from_config(
        {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "sliding_window": None, **llama()}
    )
    assert explicit_none.layer_kinds == (LayerKind.FULL,) * 4


@pytest.mark.parametrize(
    ("extra", "kinds"),
    [
        ({}, (LayerKind.FULL,) * 4),  # use_sliding_window defaults to False: window dropped
        ({"sliding_window": 1024}, (LayerKind.FULL,) * 4),
        ({"sliding_window": 1024, "use_sliding_window": True, "max_window_layers": 0}, (LayerKind.SLIDING,) * 4),
        # all layers below max_window_layers: layer_types all full, no model-level window
        ({"sliding_window": 1024, "use_sliding_window": True}, (LayerKind.FULL,) * 4),
    ],
)
def test_qwen3_window_rules(extra: dict[str, object], kinds: tuple[LayerKind, ...]) -> None:
    cfg = llama(**{**extra, "hidden_size": 4096})
    m = geometry_from_config({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", **cfg})
    assert m.layer_kinds == kinds
    assert m.head_dim == 128  # Qwen3Config's head_dim default, not hidden_size // heads (512)


def test_qwen3_partial_window_is_refused_as_vllm_does() -> None:
    cfg = llama(sliding_window=1024, use_sliding_window=True, max_window_layers=2)
    with pytest.raises(InputError, match="Sliding window for some but all layers is not supported"):
        geometry_from_config({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", **cfg})


def test_gemma3_pattern_and_gemma2_alternation() -> None:
    g3 = geometry_from_config(
        {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", **llama(num_hidden_layers=12)}
    )
    # Gemma3TextConfig: sliding_window_pattern 6 -> layers 6 and 12 are global
    assert [i for i, k in enumerate(g3.layer_kinds) if k is LayerKind.FULL] == [5, 11]
    g2 = geometry_from_config({"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", **llama()})
    assert g2.layer_kinds == (LayerKind.SLIDING, LayerKind.FULL) * 2


def test_gpt_oss_parity_ignores_layer_types() -> None:
    m = geometry_from_config(
        {
            "architectures": ["GptOssForCausalLM"],
            "model_type": "gpt_oss",
            **llama(layer_types=["full_attention"] * 4),
        }
    )
    assert m.layer_kinds == (LayerKind.SLIDING, LayerKind.FULL) * 2  # gpt_oss.py: layer_idx % 2 == 0


def test_qwen3_next_every_fourth_layer_whatever_the_interval() -> None:
    base = {
        "architectures": ["Qwen3NextForCausalLM"],
        "model_type": "qwen3_next",
        "full_attention_interval": 2,
        **llama(num_hidden_layers=8),
    }
    m = geometry_from_config(base)
    assert [i for i, k in enumerate(m.layer_kinds) if k is LayerKind.FULL] == [3, 7]
    assert m.num_mtp_layers == 1  # qwen3_next_mtp.py: num_nextn_predict_layers default 1


def test_yarn_scaling_extends_the_derived_length() -> None:
    from dryboot.plan import plan
    from dryboot.vllm.engine_args import EngineArgs

    # _get_and_verify_max_len: yarn -> original_max_position_embeddings x factor
    rope = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 262144}
    cfg = {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        **llama(max_position_embeddings=262144, rope_scaling=rope),
    }
    m = geometry_from_config(cfg)
    assert m.max_position_embeddings == 1_048_576
    assert plan(m, EngineArgs(max_model_len=1_048_576)).max_model_len == 1_048_576
    with pytest.raises(InputError, match=r"max_position_embeddings=1048576"):
        plan(m, EngineArgs(max_model_len=1_048_577))
    # llama3-type scaling does not extend it
    cfg["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0}
    assert geometry_from_config(cfg).max_position_embeddings == 262144


def test_longrope_defaults_to_the_original_length() -> None:
    from dryboot.plan import plan

    rope = {"rope_type": "longrope", "long_factor": [1.0], "short_factor": [1.0]}
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        **llama(max_position_embeddings=131072, original_max_position_embeddings=4096, rope_scaling=rope),
    }
    assert plan(geometry_from_config(cfg)).max_model_len == 4096


def test_hf_overrides_apply_before_reading() -> None:
    from pathlib import Path

    from dryboot.plan import plan
    from dryboot.runner import build_engine_args

    qwen3_next = str(Path(__file__).resolve().parents[1] / "examples/models/Qwen3-Next-80B-A3B-Thinking.config.json")
    rope = '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 262144}}'
    flags = {"max-model-len": "1048576", "kv-cache-memory-bytes": "40G"}
    with pytest.raises(InputError, match="max_position_embeddings=262144"):
        model, args = build_engine_args(qwen3_next, flags, [])
        plan(model, args)
    model, args = build_engine_args(qwen3_next, flags, [], rope)
    assert plan(model, args).max_model_len == 1_048_576  # 262,144 x yarn factor 4
    with pytest.raises(InputError, match="--hf-overrides"):
        build_engine_args(qwen3_next, flags, [], "[1]")


def test_eagle_drafter_architecture_must_exist_in_vllm() -> None:
    from dryboot.vllm.models.registry import drafter_architecture

    # transformers_utils/configs/eagle.py names the drafter Eagle<arch> / Eagle3<arch> / DFlash<arch>
    assert drafter_architecture("eagle", "LlamaForCausalLM", "d.json") == "EagleLlamaForCausalLM"
    assert drafter_architecture("eagle3", "Qwen3ForCausalLM", "d.json") == "Eagle3Qwen3ForCausalLM"
    assert drafter_architecture("dflash", "DFlashDraftModel", "d.json") == "DFlashDraftModel"
    with pytest.raises(InputError, match=r"\['EagleDFlashDraftModel'\] are not supported"):
        drafter_architecture("eagle", "DFlashDraftModel", "d.json")
