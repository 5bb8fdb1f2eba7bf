"""Flint (``vllm/models/flint``, vLLM 0.33.0): what ``FlintConfig`` / ``FlintAttention`` build and
assert. Checked against vLLM's engine start in ``tests/fidelity/test_flint.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm.config.hf import LayerKind
from dryboot.vllm.transformers_utils.config import geometry_from_config

TINY = Path(__file__).parent / "fidelity" / "data" / "architectures" / "FlintForCausalLM.json"
SW, FULL = LayerKind.SLIDING, LayerKind.FULL


def _cfg(**changes: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads(TINY.read_text())
    cfg.update(changes)
    return {k: v for k, v in cfg.items() if v is not None}


def _model(tmp_path: Path, **changes: Any) -> Any:
    return geometry_from_config(_cfg(**changes))


def test_layer_types_windows_and_sinks(tmp_path: Path) -> None:
    m = _model(tmp_path)
    assert m.layer_kinds == (SW, SW, FULL, SW, SW, FULL)
    assert m.sliding_window == 513 and m.attn.attention_sinks
    assert (m.num_kv_heads, m.head_dim) == (4, 128)


def test_flint_config_defaults(tmp_path: Path) -> None:
    # FlintConfig: every layer full_attention without layer_types; no window without use_sliding_window
    assert set(_model(tmp_path, layer_types=None).layer_kinds) == {FULL}
    assert set(_model(tmp_path, use_sliding_window=False).layer_kinds) == {FULL}


def _plan(tmp_path: Path, *flags: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from dryboot.cli import cli

    (tmp_path / "config.json").write_text(json.dumps(_cfg()))
    argv = ["plan", "--model", str(tmp_path), "--vllm-version", "0.33.0", "--kv-cache-memory-bytes", "1000000000"]
    res = CliRunner().invoke(cli, [*argv, *flags, "--json"])
    return res.exit_code, res.output


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (("--gpu", "H100", "-tp", "2"), "Flint requires FlashInfer attention"),
        (("--gpu", "B200", "-tp", "2", "--kv-cache-dtype", "fp8"), "auto / bfloat16 KV cache"),
        (("--gpu", "B200", "-tp", "2", "--dtype", "float16"), "bfloat16 model"),
    ],
)
def test_refused_as_vllm_asserts(tmp_path: Path, flags: tuple[str, ...], words: str) -> None:
    code, out = _plan(tmp_path, *flags)
    assert code == 2 and words in out, out


def test_other_releases_refused(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from dryboot.cli import cli

    (tmp_path / "config.json").write_text(json.dumps(_cfg()))
    res = CliRunner().invoke(cli, ["plan", "--model", str(tmp_path), "--gpu", "B200", "--vllm-version", "0.32.0"])
    assert res.exit_code == 2


def test_tp1_states_its_limitation(tmp_path: Path) -> None:
    code, out = _plan(tmp_path, "--gpu", "B200")
    assert code != 2, out
    assert "CuTe DSL" in json.dumps(json.loads(out)["assumptions"])
