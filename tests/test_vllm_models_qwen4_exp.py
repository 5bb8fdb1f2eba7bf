"""Qwen4-Exp's plain layout (``models/qwen4_exp.py``): the config class checks of each release
(vLLM's own ``Qwen4ExpTextConfig`` on 0.29-0.31, transformers' from 0.32), the QSA and PLE
refusals by name, and the MTP drafter's. Its planned figures are checked against vLLM in
``tests/fidelity/test_release_architectures.py`` and ``tests/fidelity/test_qwen4_exp_step5.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dryboot.cli import cli

TINY = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures" / "Qwen4ExpForCausalLM.json"


def _plan(tmp_path: Path, version: str, *flags: str, **changes: Any) -> tuple[int, str]:
    cfg = {**json.loads(TINY.read_text()), **changes}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    args = ["plan", "--model", str(tmp_path), "--kv-cache-memory-bytes", "2G", "--vllm-version", version, *flags]
    res = CliRunner().invoke(cli, [*args, "--json"])
    return res.exit_code, res.output


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"indexer_n_heads": 4}, "QSA config is missing required fields: ['indexer_kv_heads', "),
        (
            {"indexer_n_heads": 4, "indexer_kv_heads": 2, "indexer_head_dim": 128, "indexer_budget": 256}
            | {"indexer_compress_ratio": 4},
            "Qwen4-Exp QSA requires indexer_kv_heads=1.",
        ),
        # 0.33.0 plans PLE layers (tests/fidelity/test_qwen4_ple.py) but on linear_attention layers
        ({"ple_layer_ids": [4]}, "Qwen4-Exp PLE is only supported on linear_attention layers, got PLE on layers [4]"),
        ({"layer_types": ["linear_attention", "sliding_attention"] * 2}, "layer types ['sliding_attention']"),
        ({"hc_count": 1}, "requires hc_count > 1"),
    ],
)
def test_refused_by_name(tmp_path: Path, changes: dict[str, Any], words: str) -> None:
    code, out = _plan(tmp_path, "0.33.0", **changes)
    assert code == 2 and words in out, out


@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
def test_ple_layers_planned_on_every_release_of_the_family(tmp_path: Path, version: str) -> None:
    code, out = _plan(tmp_path, version, ple_layer_ids=[1])
    assert code == 0, out


@pytest.mark.parametrize(
    ("changes", "refused_on", "words"),
    [
        # vLLM's own class checks the PLE fields with or without PLE layers; transformers' only with them
        ({"ple_embed_dim": 100}, "0.31.0", "ple_embed_dim must be divisible by total ngram heads"),
        # transformers' class checks the output gate; vLLM's own does not
        ({"output_gate_type": "relu"}, "0.33.0", "Unsupported Qwen4-Exp output gate activation"),
    ],
)
def test_each_config_class_refuses_its_own(
    tmp_path: Path, changes: dict[str, Any], refused_on: str, words: str
) -> None:
    for version in ("0.31.0", "0.33.0"):
        code, out = _plan(tmp_path, version, **changes)
        if version == refused_on:
            assert code == 2 and words in out, out
        else:
            assert code == 0, out


def test_mtp_drafter_refused(tmp_path: Path) -> None:
    spec = '{"method": "mtp", "num_speculative_tokens": 1}'
    code, out = _plan(tmp_path, "0.33.0", "--speculative-config", spec)
    assert code == 2 and "MTP drafter (Qwen4ExpMTP" in out, out


ARCHS = TINY.parent
#: the tower-head flag sets: (flags, whether Qwen4-Exp's wrapper builds its vision tower)
TOWER_FLAGS = [
    ((), True),
    (("--language-model-only",), False),
    # a zero limit for both its modalities: the tower is still built (on the meta device)
    (("--limit-mm-per-prompt", '{"image": 0, "video": 0}'), True),
]


def _plan_tiny(tmp_path: Path, arch: str, path: str, heads: int, version: str, *flags: str) -> tuple[int, str]:
    cfg = json.loads((ARCHS / f"{arch}.json").read_text())
    level = cfg
    *parents, key = path.split(".")
    for p in parents:
        level = level[p]
    level[key] = heads
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    args = ["plan", "--model", str(tmp_path), "--kv-cache-memory-bytes", "2G", "--vllm-version", version]
    res = CliRunner().invoke(cli, [*args, "-tp", "2", *flags])
    return res.exit_code, " ".join(res.output.split())


@pytest.mark.parametrize("version", ("0.29.0", "0.31.0", "0.33.0"))
@pytest.mark.parametrize(("flags", "tower"), TOWER_FLAGS)
def test_wrapper_tower_heads_only_where_the_tower_is_built(
    tmp_path: Path, version: str, flags: tuple[str, ...], tower: bool
) -> None:
    """Issue 37: TP 2 on a one-head vision tower. Qwen4-Exp's wrapper builds no tower under
    --language-model-only (0.29.0-0.33.0: a StageMissingLayer), so TP need not divide its heads;
    without the flag, or with zero limits, vLLM builds it and asserts (recorded on 0.33.0,
    tests/fidelity/data/wrappers/)."""
    arch = "Qwen4ExpForConditionalGeneration"
    code, out = _plan_tiny(tmp_path, arch, "vision_config.num_heads", 1, version, *flags)
    if tower:
        assert code == 2 and "vision_config.num_heads: 1 is not divisible by tensor parallel size 2" in out, out
    else:
        assert code == 0, out


@pytest.mark.parametrize(
    ("arch", "path"),
    [
        ("AriaForConditionalGeneration", "vision_config.num_attention_heads"),
        ("GlmAsrForConditionalGeneration", "audio_config.num_attention_heads"),
        ("Mistral3ForConditionalGeneration", "vision_config.num_attention_heads"),
        ("Qwen2_5_VLForConditionalGeneration", "vision_config.num_heads"),
    ],
)
@pytest.mark.parametrize(("flags", "_"), TOWER_FLAGS[:2])
def test_other_wrappers_build_their_tower_under_the_flag(
    tmp_path: Path, arch: str, path: str, flags: tuple[str, ...], _: bool
) -> None:
    """The default rule: a tower marked by ``_mark_tower_model`` is built on the meta device even
    under --language-model-only, and its attention asserts that TP divides its heads (recorded on
    Aria and GLM-ASR, vLLM 0.28.0 and 0.33.0)."""
    code, out = _plan_tiny(tmp_path, arch, path, 1, "0.33.0", *flags)
    assert code == 2 and f"{path}: 1 is not divisible by tensor parallel size 2" in out, out
