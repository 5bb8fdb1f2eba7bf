"""Multimodal models vLLM serves through its Transformers modeling backend
(``TransformersMultiModalForCausalLM``, ``transformers/multimodal.py``): Emu3 and VibeVoice-ASR, read
on ``text_config`` with its config class's defaults (``dense.BACKEND_MULTIMODAL``); their engine
starts are recorded on every release (``tests/fidelity/data/architectures/recorded.json`` for 0.28.0,
``data/release-architectures/vllm-<release>.json`` for the others).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dryboot.errors import InputError
from dryboot.vllm.config.hf import LayerKind
from dryboot.vllm.models.dense import BACKEND_MULTIMODAL
from dryboot.vllm.models.registry import architecture_table
from dryboot.vllm.transformers_utils.config import geometry_from_config

TINY = Path(__file__).parent / "fidelity" / "data" / "architectures"
ARCHS = sorted(BACKEND_MULTIMODAL)
#: releases whose engine start is not recorded for them (refused by name there)
UNRECORDED: tuple[str, ...] = ()


def _tiny(arch: str, **text: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads((TINY / f"{arch}.json").read_text())
    cfg["text_config"] = {k: v for k, v in {**cfg["text_config"], **text}.items() if v is not None}
    return cfg


@pytest.mark.parametrize("arch", ARCHS)
def test_read_on_text_config(arch: str) -> None:
    model = geometry_from_config(_tiny(arch))
    text = _tiny(arch)["text_config"]
    assert model.architecture == arch
    assert model.num_decoder_layers == text["num_hidden_layers"]
    assert model.num_kv_heads == text["num_key_value_heads"]
    assert model.head_dim == text["hidden_size"] // text["num_attention_heads"]
    assert set(model.layer_kinds) == {LayerKind.FULL}


def test_text_config_class_defaults() -> None:
    # Emu3TextConfig: 8 KV heads, 9216 positions; Qwen2Config: as many KV heads as heads (32)
    emu3 = geometry_from_config(_tiny("Emu3ForConditionalGeneration", num_key_value_heads=None))
    assert emu3.num_kv_heads == 8
    vv = geometry_from_config(
        _tiny("VibeVoiceAsrForConditionalGeneration", num_key_value_heads=None, num_attention_heads=None)
    )
    assert vv.num_kv_heads == 32
    # Qwen2Config keeps sliding_window only under use_sliding_window
    plain = geometry_from_config(_tiny("VibeVoiceAsrForConditionalGeneration", sliding_window=131072))
    assert set(plain.layer_kinds) == {LayerKind.FULL}


@pytest.mark.parametrize(
    ("arch", "text"),
    [
        ("Emu3ForConditionalGeneration", {"sliding_window": 512}),
        ("Emu3ForConditionalGeneration", {"layer_types": ["full_attention"] * 4}),
        ("VibeVoiceAsrForConditionalGeneration", {"use_sliding_window": True, "sliding_window": 512}),
        ("VibeVoiceAsrForConditionalGeneration", {"layer_types": ["sliding_attention"] + ["full_attention"] * 3}),
        ("VibeVoiceAsrForConditionalGeneration", {"num_hidden_layers": None}),
    ],
)
def test_refused_by_name(arch: str, text: dict[str, Any]) -> None:
    with pytest.raises(InputError, match=arch):
        geometry_from_config(_tiny(arch, **text))


@pytest.mark.parametrize("arch", ARCHS)
def test_without_text_config_refused(arch: str) -> None:
    cfg = _tiny(arch)
    cfg = {
        **{k: v for k, v in cfg.items() if k != "text_config"},
        **cfg["text_config"],
        "model_type": cfg["model_type"],
    }
    with pytest.raises(InputError, match="text_config"):
        geometry_from_config(cfg)


@pytest.mark.parametrize("version", ["0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_planned_where_recorded(version: str) -> None:
    """Verified on the releases whose engine start is recorded, refused by name on the others."""
    rows = {r.architecture: r for r in architecture_table(version)}
    for arch in ARCHS:
        assert rows[arch].status == ("refused" if version in UNRECORDED else "verified"), (version, arch)


def test_emu3_vq_heads_split_over_tp() -> None:
    """The backend fuses Emu3's VQ-VAE q/k/v into one QKVParallelLinear of vq_config.num_attention_heads
    (Emu3VQVAEConfig: 1): TP must divide them (vLLM's AssertionError, recorded on 0.28.0 and 0.33.0)."""
    from dryboot.vllm.models.dense import verify

    cfg = _tiny("Emu3ForConditionalGeneration")
    verify(geometry_from_config(cfg), 8)  # the tiny config's 8 VQ heads
    default = {**cfg, "vq_config": {"codebook_size": 64}}
    verify(geometry_from_config(default), 1)
    with pytest.raises(InputError, match="1 is not divisible by tensor parallel size 2"):
        verify(geometry_from_config(default), 2)
    with pytest.raises(InputError, match="not divisible by 3 heads"):
        geometry_from_config({**cfg, "vq_config": {"num_attention_heads": 3}})


def test_0_27_1_builds_the_vq_attention_whole() -> None:
    """0.27.1's backend builds Emu3's VQ-VAE attention whole (``backend_splits_encoder_qkv`` off: TP 2 and 4
    over one VQ head recorded served), 0.28+ split it."""
    from dryboot.vllm.models.dense import for_release, verify
    from dryboot.vllm.versions import rules_for

    model = geometry_from_config({**_tiny("Emu3ForConditionalGeneration"), "vq_config": {"codebook_size": 64}})
    verify(for_release(model, rules_for("0.27.1")), 4)
    for version in ("0.28.0", "0.29.0", "0.33.0"):
        with pytest.raises(InputError, match="not divisible by tensor parallel size 4"):
            verify(for_release(model, rules_for(version)), 4)
