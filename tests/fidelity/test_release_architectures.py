"""Architectures whose model class or config class one release changed, against that release's own
engine start: dryboot ``--vllm-version X`` on the tiny config (``data/architectures/<Arch>.json``)
under the flag sets ``test_architectures`` records on 0.28.0, and on the config with every
defaultable key left out (``data/architectures/defaults/``, where there is one) under
``DEFAULTS_FLAG_SETS``. ``record_release_architectures.py PYTHON`` records a release into
``data/release-architectures/vllm-X.json``; nothing there comes from dryboot. Needs no vLLM.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T

pytestmark = pytest.mark.fidelity

DATA = Path(__file__).resolve().parent / "data" / "release-architectures"

#: release -> the architectures recorded on it, each with why
ARCHITECTURES: dict[str, dict[str, str]] = {
    "0.27.1": {
        # a wrapper planned through its text model (Llama here), recorded on 0.28.0; 0.27.1 has the
        # same hyperclovax_vision.py and HCXVisionConfig
        "HCXVisionForCausalLM": "a wrapper of a text model dryboot plans",
        # DeepSeek-OCR's wrapper on RSWAAttention: the same config hook and RSWASpec as 0.28.0
        "UnlimitedOCRForCausalLM": "its RSWA layers on the backend its config hook picks",
    },
    "0.30.0": {
        # gone from the registry and the config registry: vLLM refuses its model_type
        "HCXVisionForCausalLM": "absent from this release: refused as vLLM refuses it",
        # the last release reading MuseGlimmer with vLLM's own config class (no_rope_layers)
        "MuseGlimmerForCausalLM": "its sliding layers read from no_rope_layers",
        "MuseGlimmerForConditionalGeneration": "its sliding layers read from no_rope_layers",
    },
    "0.31.0": {
        # gone from the registry (_PREVIOUSLY_SUPPORTED_MODELS: 0.28.0): vLLM refuses it
        "HCXVisionForCausalLM": "absent from this release: refused as vLLM refuses it",
        # muse_glimmer.py still slides the no_rope_layers' RoPE layers, vLLM's own config class
        "MuseGlimmerForCausalLM": "its sliding layers read from no_rope_layers",
        "MuseGlimmerForConditionalGeneration": "its sliding layers read from no_rope_layers",
        "MellumForCausalLM": "its own model class (mellum.py), as on 0.30.0",
        "HCXVisionV2ForCausalLM": "a wrapper of a text model dryboot plans",
    },
    "0.32.0": {
        "HCXVisionForCausalLM": "absent from this release: refused as vLLM refuses it",
        "MuseGlimmerForCausalLM": "its sliding layers read from no_rope_layers",
        "MuseGlimmerForConditionalGeneration": "its sliding layers read from no_rope_layers",
        # registry.py maps it to the Transformers backend (TransformersMoEForCausalLM)
        "MellumForCausalLM": "served by the Transformers backend",
        # mimo_v2.py passes the cache config to its attention layers (--kv-cache-dtype applies)
        "MiMoV2FlashForCausalLM": "its attention layers take the cache config",
        "HCXVisionV2ForCausalLM": "a wrapper of a text model dryboot plans",
    },
    "0.33.0": {
        # registry.py maps it to the Transformers backend (TransformersMoEForCausalLM) and vLLM's
        # own MellumConfig is gone: transformers' class reads the file
        "MellumForCausalLM": "served by the Transformers backend, config read by transformers' MellumConfig",
        # mimo_v2.py passes the cache config to its attention layers (--kv-cache-dtype applies)
        "MiMoV2FlashForCausalLM": "its attention layers take the cache config",
        # a wrapper planned through its text model (HyperCLOVAX), first planned with this release
        "HCXVisionV2ForCausalLM": "a wrapper of a text model dryboot plans",
        # gone from the registry and the config registry: vLLM refuses its model_type
        "HCXVisionForCausalLM": "absent from this release: refused as vLLM refuses it",
        # transformers' MuseGlimmerTextConfig reads the file and the model class slides the
        # layer_types' sliding layers (0.28-0.30: vLLM's own class, no_rope_layers)
        "MuseGlimmerForCausalLM": "its sliding layers read from layer_types",
        "MuseGlimmerForConditionalGeneration": "its sliding layers read from layer_types",
        # DeepSeek-OCR's wrapper on RSWAAttention (one RSWA group, prefix caching off), without
        # --gpu: dryboot's H200, FlashAttention 4 as the config hook picks it
        "UnlimitedOCRForCausalLM": "its RSWA layers on the backend its config hook picks",
        # wrappers of planned text models recorded in `boot-env --with-mm-extras`'s 0.33.0-mm (timm)
        # or with the engine start's torchaudio stand-in (FunASR, MiDashengLM). Not Gemma-3n's
        # wrapper: on 0.33.0 its model fails on the meta device, as Gemma3nForCausalLM's does (18 of 24
        # cases: "RuntimeError: Tensor.item() cannot be called on meta tensors"), so 0.33.0 does not check it
        **dict.fromkeys(
            (
                "DeepseekVLV2ForCausalLM",
                "OpenVLAForActionPrediction",
                "FunASRForConditionalGeneration",
                "MiDashengLMModel",
            ),
            "a wrapper of a text model dryboot plans, recorded in the -mm environment",
        ),
    },
}


#: (release, case id) -> why dryboot's answer differs from the record; each must still differ
KNOWN: dict[tuple[str, str], str] = {
    (v, "MiMoV2FlashForCausalLM#8"): (
        "dryboot refuses by name: vLLM builds MiMo's FLASH_ATTN_DIFFKV layers with an nvfp4_4over6 cache "
        "unchecked (pages of one byte an element, no FlashInfer layout); not modelled"
    )
    for v in ("0.32.0", "0.33.0")
}


def record_path(version: str) -> Path:
    return DATA / f"vllm-{version}.json"


def cases(architecture: str) -> list[H.Case]:
    """The tiny config's cases (ids ``<Arch>#i``), then the defaults config's (``<Arch>@defaults#i``)."""
    path = T.tiny_configs()[architecture]
    out = [T.make_case(architecture, i, argv) for i, argv in enumerate(T.flag_sets(architecture, path))]
    if architecture in T.defaults_configs():
        out += [T.defaults_case(architecture, i, argv) for i, argv in enumerate(T.DEFAULTS_FLAG_SETS)]
    return out


def _record(version: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(record_path(version).read_text())
    assert doc["vllm"] == version
    return doc


PAIRS = [(v, a) for v, archs in ARCHITECTURES.items() for a in archs]

#: (release, architecture) that release's registry lacks or whose config it cannot read: vLLM refuses
#: every case, and dryboot must too
ABSENT = frozenset(
    {(v, "HCXVisionForCausalLM") for v in ("0.30.0", "0.31.0", "0.32.0", "0.33.0")}
    # the transformers of 0.31.0's environment has no hyperclovax_vision_v2 config class
    | {("0.31.0", "HCXVisionV2ForCausalLM")}
)


@pytest.mark.parametrize(("version", "architecture"), PAIRS)
def test_every_listed_architecture_is_recorded_with_todays_flag_sets(version: str, architecture: str) -> None:
    rows = _record(version)["architectures"][architecture]
    assert [r["argv"] for r in rows] == [c.argv for c in cases(architecture)]
    served = sum(1 for r in rows if r["vllm"].get("ok"))
    if (version, architecture) in ABSENT:
        assert served == 0, "a release without the architecture served it"
    else:
        assert served >= 12, "too few cases vLLM serves"


@pytest.mark.parametrize(("version", "architecture"), PAIRS)
def test_dryboot_matches_the_release(version: str, architecture: str) -> None:
    rows = _record(version)["architectures"][architecture]
    problems = []
    for c, row in zip(cases(architecture), rows, strict=True):
        got = H.run_dryboot(c, version)
        agree = H.compare(row["vllm"], got)["agree"]
        if (version, c.id) in KNOWN:
            if agree:
                problems.append(f"{c.id} on {version} now agrees: remove it from KNOWN")
            continue
        if not agree:
            problems.append(
                f"{c.command(version)}\n    vLLM:    {H._answer(row['vllm'], vllm=True)}\n"
                f"    dryboot: {H._answer(got, vllm=False)}"
            )
    assert not problems, f"{len(problems)}/{len(rows)} disagree:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("version", "architecture", "switch"),
    [
        ("0.33.0", "MiMoV2FlashForCausalLM", "mimo_v2_cache_config"),
        ("0.33.0", "MellumForCausalLM", "hf_config_class_architectures"),
        ("0.33.0", "MuseGlimmerForCausalLM", "muse_glimmer_layer_types"),
        ("0.32.0", "MiMoV2FlashForCausalLM", "mimo_v2_cache_config"),
        ("0.31.0", "MellumForCausalLM", "hf_config_class_architectures"),
        ("0.32.0", "MellumForCausalLM", "hf_config_class_architectures"),
    ],
)
def test_switch_is_needed(version: str, architecture: str, switch: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the release's switch off for the architecture, dryboot disagrees with some record."""
    import dataclasses

    from dryboot.vllm import versions

    rules = versions.rules_for(version)
    value = getattr(rules, switch)
    off = value - {architecture} if isinstance(value, frozenset) else type(value)()
    monkeypatch.setitem(versions.VERSIONS, version, dataclasses.replace(rules, **{switch: off}))
    versions.rules_for.cache_clear()
    try:
        rows = _record(version)["architectures"][architecture]
        assert any(
            not H.compare(row["vllm"], H.run_dryboot(c, version))["agree"]
            for c, row in zip(cases(architecture), rows, strict=True)
        )
    finally:
        versions.rules_for.cache_clear()
