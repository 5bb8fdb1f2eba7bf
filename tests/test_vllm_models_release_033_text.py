"""vLLM 0.33.0's new text models and drafters (issue 37): the five dryboot plans on that release
(``LATER_ARCHITECTURES``: Beam, ExaoneMoE under its second registry name, Granite-SWA,
Granite-MoE-SWA, Kolibri-1 through the Transformers backend), read as that release's model files and transformers
5.20's config classes build them, and refused on every other release; the others refused by what
they build, not the generic "its model file is not modelled". The planned ones' engine starts are
recorded in ``tests/fidelity/data/release-architectures/vllm-0.33.0.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dryboot.errors import InputError
from dryboot.vllm.config.hf import LayerKind
from dryboot.vllm.models import refusals
from dryboot.vllm.models.registry import LATER_ARCHITECTURES, absent_from_release, architecture_table
from dryboot.vllm.transformers_utils.config import geometry_from_config

TINY = Path(__file__).parent / "fidelity" / "data" / "architectures"
GENERIC = "its model file is not modelled"

#: the refused ones of this task, with the reason each takes
REFUSED = {
    "AliceAIForCausalLM": refusals.ALICE_AI,
    "DomynEdgeForCausalLM": refusals.DOMYN_EDGE,
    "DoryForCausalLM": refusals.DORY,
    "K2HorizonForCausalLM": refusals.K2_HORIZON,
    "NanbeigeForCausalLM": refusals.NANBEIGE,
    # drafters: in the words of the existing drafter refusals
    "DFlash2BeamDraftModel": refusals.SPEC_DFLASH,
    "DFlashQwen3XPressModel": refusals.SPEC_DFLASH,
    "LiLiCorrDraftModel": refusals.SPEC_DFLASH,
    "Qwen3XPressModel": refusals.SPEC_DFLASH,
    "DSparkV41DraftModel": refusals.SPEC_DSPARK,
    "Qwen3OmniDSparkModel": refusals.SPEC_DSPARK,
    "DeepseekV32MTPModel": refusals.SPEC_MTP,
    "HYV4MTPModel": refusals.SPEC_MTP,
    "ParseAuxMTPModel": refusals.SPEC_MTP,
}


def _tiny(arch: str, **changes: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads((TINY / f"{arch}.json").read_text())
    cfg.update(changes)
    return {k: v for k, v in cfg.items() if v is not None}


def test_0_33_rows() -> None:
    rows = {r.architecture: r for r in architecture_table("0.33.0")}
    for arch, reason in REFUSED.items():
        assert rows[arch].status == "refused" and rows[arch].reason == reason, arch
        assert GENERIC not in rows[arch].reason
    for arch in LATER_ARCHITECTURES:
        assert rows[arch].status == "verified", arch
        assert rows[arch].tiny_config == f"tests/fidelity/data/architectures/{arch}.json"


@pytest.mark.parametrize("version", ["0.27.1", "0.28.0", "0.29.0", "0.32.0"])
def test_later_architectures_are_refused_on_other_releases(version: str) -> None:
    rows = {r.architecture: r for r in architecture_table(version)}
    for arch, verified in LATER_ARCHITECTURES.items():
        if version in verified:
            assert absent_from_release(arch, version) is None and rows[arch].status == "verified"
            continue
        why = absent_from_release(arch, version)
        assert why is not None and f"vLLM {version}" in why
        if arch in rows:  # in that registry, not verified on it
            assert rows[arch].status == "refused" and "not verified" in rows[arch].reason
        else:
            assert "model registry" in why
    # an architecture of 0.28.0's registry is left to the release rules
    assert absent_from_release("GraniteForCausalLM", "0.30.0") is None


def test_plan_refuses_a_later_architecture_on_0_28(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from dryboot.cli import cli

    (tmp_path / "config.json").write_text(json.dumps(_tiny("GraniteSWAForCausalLM")))
    args = ["plan", "--model", str(tmp_path), "--kv-cache-memory-bytes", "2000000000", "--json"]
    res = CliRunner().invoke(cli, [*args, "--vllm-version", "0.28.0"])
    assert res.exit_code == 2
    assert "not in vLLM 0.28.0's model registry" in res.output
    ok = CliRunner().invoke(cli, [*args, "--vllm-version", "0.33.0"])
    assert ok.exit_code == 0, ok.output


def test_granite_swa_windows_and_sinks() -> None:
    """granite.py's granite_layer_attn_params: a sliding_attention layer of layer_types takes the
    window, every layer a sink unless ``attention_sinks`` is false."""
    model = geometry_from_config(_tiny("GraniteSWAForCausalLM"))
    assert model.layer_kinds == (LayerKind.FULL, LayerKind.SLIDING, LayerKind.SLIDING, LayerKind.SLIDING)
    assert model.sliding_window == 256 and model.attn.attention_sinks
    assert not geometry_from_config(_tiny("GraniteSWAForCausalLM", attention_sinks=False)).attn.attention_sinks
    # GraniteSWAConfig without layer_types: full when i % 4 == 0, window 128, 4 KV heads
    model = geometry_from_config(
        _tiny(
            "GraniteSWAForCausalLM",
            layer_types=None,
            sliding_window=None,
            num_key_value_heads=None,
            num_hidden_layers=5,
            layer_rope_theta=None,
        )
    )
    assert [k == LayerKind.FULL for k in model.layer_kinds] == [True, False, False, False, True]
    assert model.sliding_window == 128 and model.num_kv_heads == 4
    # a null window: no layer slides (Attention's per-layer window is None)
    model = geometry_from_config({**_tiny("GraniteSWAForCausalLM"), "sliding_window": None})
    assert set(model.layer_kinds) == {LayerKind.FULL}


def test_granite_moe_swa_head_size_and_sinks() -> None:
    model = geometry_from_config(_tiny("GraniteMoeSWAForCausalLM"))
    # granitemoe.py's attention: hidden_size // heads, whatever head_dim says
    assert model.head_dim == 64 and not model.attn.attention_sinks
    assert model.layer_kinds[-1] == LayerKind.FULL and model.sliding_window == 512
    assert geometry_from_config(_tiny("GraniteMoeSWAForCausalLM", head_dim=128)).head_dim == 64


def test_exaone_moe_second_name_reads_as_the_first() -> None:
    first = geometry_from_config({**_tiny("ExaoneMoEForCausalLM"), "architectures": ["ExaoneMoeForCausalLM"]})
    second = geometry_from_config(_tiny("ExaoneMoEForCausalLM"))
    assert second.layer_kinds == first.layer_kinds and second.sliding_window == first.sliding_window == 256
    assert (second.num_kv_heads, second.head_dim, second.attn) == (first.num_kv_heads, first.head_dim, first.attn)


def test_kolibri1_layer_types_and_window() -> None:
    model = geometry_from_config(_tiny("Kolibri1ForCausalLM", layer_types=None, num_hidden_layers=10))
    # Kolibri1Config: full when (i + 1) % 5 == 0; the Transformers backend names layers <i>.attn
    assert [i for i, k in enumerate(model.layer_kinds) if k == LayerKind.FULL] == [4, 9]
    with pytest.raises(InputError, match="positive `sliding_window`"):
        geometry_from_config({**_tiny("Kolibri1ForCausalLM"), "sliding_window": None})


#: the later architectures of this file: their weights are sized (``model_executor/models/``
#: ``exaone_moe.py``, ``granite_swa.py``, ``beam.py``, ``kolibri1.py``), checked byte for byte
#: against vLLM in ``fidelity/test_weights_later_text.py``
WEIGHTS_SIZED = sorted(
    {
        "BeamForCausalLM",
        "ExaoneMoEForCausalLM",
        "GraniteSWAForCausalLM",
        "GraniteMoeSWAForCausalLM",
        "Kolibri1ForCausalLM",
    }
)


@pytest.mark.parametrize("arch", WEIGHTS_SIZED)
def test_weights_are_sized(arch: str) -> None:
    """Each tiny config's weights on 0.33.0 come out (no refusal)."""
    import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families)
    from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

    assert rank_weights(_tiny(arch), Parallel(vllm_version="0.33.0")).param_bytes > 0


def test_beam_windows() -> None:
    """vllm/models/beam: a sliding_attention layer takes the window, a full one none; BeamConfig
    writes every layer sliding when layer_types is absent (window 4096, 4 KV heads)."""
    model = geometry_from_config(_tiny("BeamForCausalLM"))
    assert model.layer_kinds == (LayerKind.SLIDING, LayerKind.FULL, LayerKind.SLIDING, LayerKind.FULL)
    assert model.sliding_window == 512 and model.head_dim == 64
    model = geometry_from_config(
        _tiny("BeamForCausalLM", layer_types=None, sliding_window=None, num_key_value_heads=None, head_dim=None)
    )
    assert set(model.layer_kinds) == {LayerKind.SLIDING} and model.sliding_window == 4096
    assert model.num_kv_heads == 4 and model.head_dim == 64


@pytest.mark.parametrize("arch", ["GraniteForCausalLM", "GraniteMoeForCausalLM", "GraniteMoeSharedForCausalLM"])
@pytest.mark.parametrize("key", ["layer_types", "attention_sinks"])
def test_plain_granite_with_swa_keys_is_refused(arch: str, key: str) -> None:
    """0.29.0+'s granite_layer_attn_params reads them from any Granite config (0.27.1 / 0.28.0 do
    not): a silent answer would be one release's, so the plain architectures refuse them."""
    cfg = _tiny(arch)
    cfg[key] = ["full_attention"] * cfg["num_hidden_layers"] if key == "layer_types" else True
    with pytest.raises(InputError, match=r"vLLM 0\.29\.0\+'s Granite model classes"):
        geometry_from_config(cfg)
