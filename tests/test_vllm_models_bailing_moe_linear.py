"""Bailing-V2.5 (``BailingMoeV2_5ForCausalLM``, ``bailing_moe_linear.py``) read as transformers'
``BailingHybridConfig`` reads it: the layer pattern, the linear-attention state (its ``head_dim``
taken from ``qk_rope_head_dim``), and the refusals by name. The figures are checked against vLLM's
engine start in ``tests/fidelity/test_architectures.py`` (0.28.0) and
``tests/fidelity/test_release_architectures.py`` (every other release); these pin the rules one by one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from config_changes import changed
from dryboot.errors import InputError
from dryboot.vllm.config.hf import LayerKind, LinearAttention
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import linear_attention_state_shapes
from dryboot.vllm.kv_cache_spec import mamba_state
from dryboot.vllm.models.bailing_moe_linear import layer_kinds
from dryboot.vllm.transformers_utils.config import geometry_from_config
from dryboot.vllm.versions import rules_for

ARCH = "BailingMoeV2_5ForCausalLM"
TINY = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures" / f"{ARCH}.json"
L, M = LayerKind.LINEAR_ATTN, LayerKind.MLA


def _config(**changes: Any) -> dict[str, Any]:
    return changed(json.loads(TINY.read_text()), changes)


def test_every_layer_group_closes_with_an_mla_layer() -> None:
    """``is_linear_layer``: linear where ``(i + 1) % layer_group_size``; a group size of 0 makes
    every layer MLA."""
    assert layer_kinds(5, 4) == (L, L, L, M, L)
    assert layer_kinds(4, 2) == (L, M, L, M)
    assert layer_kinds(3, 0) == (M, M, M)


def test_state_head_dim_is_qk_rope_head_dim_whatever_head_dim_says() -> None:
    """``BailingHybridConfig.__post_init__`` sets ``head_dim`` to ``qk_rope_head_dim``."""
    model = geometry_from_config(_config())
    assert model.layer_kinds == (L, L, L, M, L)
    assert model.mamba.linear_attn == LinearAttention(16, 64)
    assert model.naming.layer_names == tuple(
        f"model.layers.{i}.self_attn" + (".attn" if i == 3 else "") for i in range(5)
    )
    assert model.use_mla and model.head_dim == 512 + 64


def test_state_shape_and_dtype_follow_the_mamba_cache_dtype() -> None:
    model = geometry_from_config(_config())
    rules = rules_for("0.28.0")
    kind, shapes, dtypes = mamba_state(model, EngineArgs(tensor_parallel_size=2), "bfloat16", rules) or (None, (), ())
    assert (kind, shapes, dtypes) == (L, ((8, 64, 64),), ("bfloat16",))
    args = EngineArgs(mamba_cache_dtype="float32", mamba_ssm_cache_dtype="float16")
    assert mamba_state(model, args, "bfloat16", rules) == (L, ((16, 64, 64),), ("float32",))
    with pytest.raises(ValueError, match="num_attention_heads"):
        linear_attention_state_shapes(3, 16, 64)


def test_defaults_are_bailing_hybrid_configs() -> None:
    """Absent keys take ``BailingHybridConfig``'s defaults: 42 layers in groups of 6, 32 heads,
    ``qk_rope_head_dim`` 64."""
    model = geometry_from_config(
        {"architectures": [ARCH], "model_type": "bailing_hybrid", "use_bias": False, "use_qkv_bias": False}
    )
    assert model.num_layers == 42 and model.layer_kinds.count(M) == 7
    assert model.mamba.linear_attn == LinearAttention(32, 64)


@pytest.mark.parametrize("key", ["use_bias", "use_qkv_bias"])
def test_a_missing_bias_key_is_refused(key: str) -> None:
    with pytest.raises(InputError, match=f"{key}.*AttributeError"):
        geometry_from_config(_config(**{key: None}))


def _plan(tmp_path: Path, config: dict[str, Any], *argv: str) -> dict[str, Any]:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent / "fidelity"))
    import e2e_harness as H

    (tmp_path / "config.json").write_text(json.dumps(config))
    case = H.Case("bailing", "bailing", str(tmp_path), ["--kv-cache-memory-bytes", "2000000000", *argv])
    return H.run_dryboot(case, argv[argv.index("--vllm-version") + 1] if "--vllm-version" in argv else None)


@pytest.mark.parametrize(("tp", "words"), [(8, "tp_size must be <= group_norm_size"), (3, "divisible")])
def test_tp_against_group_norm_size_is_refused(tmp_path: Path, tp: int, words: str) -> None:
    """``BailingMoELinearAttention`` asserts TP <= ``group_norm_size`` (4 here) and divides it (24
    heads at TP 3, so that the heads split and the second check is reached)."""
    config = _config(num_attention_heads=24 if tp == 3 else 16)
    got = _plan(tmp_path, config, "-tp", str(tp))
    assert got.get("refused") and "group_norm_size" in got["error"] and words in got["error"], got


def test_remote_config_class_is_not_verifiable_offline(tmp_path: Path) -> None:
    config = _config(auto_map={"AutoConfig": "configuration_bailing_moe_v2_5.BailingMoeV2_5Config"})
    assert _plan(tmp_path, config).get("tokens")
    got = _plan(tmp_path, config, "--trust-remote-code")
    assert got.get("refused") and "not verifiable offline" in got["error"], got


@pytest.mark.parametrize("version", ["0.27.1", "0.31.0", "0.32.0"])
def test_releases_whose_transformers_lacks_bailing_hybrid_refuse_the_config(tmp_path: Path, version: str) -> None:
    got = _plan(tmp_path, _config(), "--vllm-version", version)
    assert got.get("refused") and "`bailing_hybrid`" in got["error"], got


def test_the_mtp_module_is_an_mla_layer_after_the_targets(tmp_path: Path) -> None:
    """``bailing_moe_mtp.py``: ``num_nextn_predict_layers`` MLA layers (BailingHybridConfig's
    default 1), ``model.layers.<N + i>.self_attn.attn`` (recorded: ``test_bailing_linear.py``)."""
    model = geometry_from_config(_config(num_nextn_predict_layers=2))
    assert model.mtp.num_mtp_layers == 2 and model.mtp.mtp_kind is M
    assert model.mtp.mtp_layer_names == ("model.layers.5.self_attn.attn", "model.layers.6.self_attn.attn")
    assert geometry_from_config(_config()).mtp.num_mtp_layers == 1
    got = _plan(tmp_path, _config(), "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}')
    assert got.get("tokens"), got
