"""A multimodal model's KV budget: ``--language-model-only``, ``--limit-mm-per-prompt`` and
``--skip-mm-profiling`` (vLLM's flags) decide whether the encoder is loaded and profiled
(0.28 ``GPUModelRunner.profile_run``, ``MultiModalRegistry.supports_multimodal_inputs``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.planner.flags import parse_limit_mm_per_prompt
from dryboot.planner.runner import build_engine_args
from dryboot.vllm.worker.profile_run import encoder_profiled, forward_shape

REPO = Path(__file__).resolve().parents[1]
QWEN35_27B = REPO / "tests/data/configs/public/Qwen--Qwen3.5-27B/config.json"
ENV = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}


def _plan(*flags: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "dryboot", "plan", "--model", str(QWEN35_27B), "--gpu", "H100"]
    return subprocess.run(
        [*cmd, "--max-model-len", "32768", "--json", *flags], capture_output=True, text=True, env=ENV, check=False
    )


def test_encoder_profiled_as_vllm_decides() -> None:
    vl = forward_shape({"vision_config": {}, "text_config": {"hidden_size": 64, "vocab_size": 100}})
    assert vl.modalities == ("image", "video")
    assert encoder_profiled(vl)
    assert not encoder_profiled(vl, language_model_only=True)
    assert not encoder_profiled(vl, skip_mm_profiling=True)
    assert not encoder_profiled(vl, limit_mm_per_prompt={"image": 0, "video": 0})
    # a modality left out counts 999 (MultiModalConfig.get_limit_per_prompt)
    assert encoder_profiled(vl, limit_mm_per_prompt={"image": 0})
    assert encoder_profiled(vl, limit_mm_per_prompt={"image": 2, "video": 0})
    text = forward_shape({"hidden_size": 64, "vocab_size": 100})
    assert not encoder_profiled(text)


def test_flags_reach_engine_args() -> None:
    _, args = build_engine_args(
        str(QWEN35_27B), {"limit-mm-per-prompt": '{"video": 0, "image": {"count": 1, "width": 512}}'}, []
    )
    assert args.mm_limits == {"image": 1, "video": 0}
    _, args = build_engine_args(str(QWEN35_27B), {"language-model-only": "true", "skip-mm-profiling": "1"}, [])
    assert args.language_model_only and args.skip_mm_profiling and args.mm_limits is None


def test_engine_args_refuse_a_bad_limit_naming_the_flag() -> None:
    _, args = build_engine_args(str(QWEN35_27B), {}, [])
    with pytest.raises(InputError, match="--limit-mm-per-prompt"):
        args.evolve(limit_mm_per_prompt=(("image", -1),)).validate()


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=40), st.dictionaries(st.text(max_size=8), st.integers(-3, 1000)).map(json.dumps)))
def test_limit_parser_gives_counts_or_one_value_error(text: str) -> None:
    try:
        parsed = parse_limit_mm_per_prompt(text)
    except ValueError as e:
        assert "\n" not in str(e)
        return
    assert parsed == tuple(sorted(parsed))
    assert all(isinstance(m, str) and isinstance(n, int) and n >= 0 for m, n in parsed)
    data = json.loads(text)
    assert dict(parsed) == {k: (v["count"] if isinstance(v, dict) else v) for k, v in data.items()}


def test_cli_vision_language_model_gets_the_encoder_term_unless_skipped() -> None:
    default = json.loads(_plan().stdout)["budget"]
    assert default.get("refused") is None
    enc = [t for t in default["terms"] if t["name"] == "activation: multimodal encoder"]
    assert len(enc) == 1 and 0 < enc[0]["low"] < enc[0]["high"]
    assert "1 image item(s) x 16,384 tokens" in enc[0]["source"]
    video = json.loads(_plan("--limit-mm-per-prompt", '{"image": 0}').stdout)["budget"]
    venc = [t for t in video["terms"] if t["name"] == "activation: multimodal encoder"]
    assert len(venc) == 1 and "1 video item(s) x 12,288 tokens" in venc[0]["source"]
    assert venc[0]["low"] < enc[0]["low"]

    lmo = json.loads(_plan("--language-model-only").stdout)["budget"]
    zero = json.loads(_plan("--limit-mm-per-prompt", '{"image": 0, "video": 0}').stdout)["budget"]
    skip = json.loads(_plan("--skip-mm-profiling").stdout)["budget"]
    for b in (lmo, zero, skip):
        kv = b["available_kv_cache_bytes"]
        assert kv["low"] <= kv["estimate"] <= kv["high"]
        assert not any(t["name"] == "activation: multimodal encoder" for t in b["terms"])
    assert lmo == zero
    # --skip-mm-profiling still loads the tower: more weights, the same activation
    assert skip["weights_bytes"] > lmo["weights_bytes"]
    assert skip["activation_bytes"] == lmo["activation_bytes"]
    # the tower profiled: the same weights as skipping, and less KV cache
    assert default["weights_bytes"] == skip["weights_bytes"]
    assert default["available_kv_cache_bytes"]["high"] < skip["available_kv_cache_bytes"]["high"]


def test_cli_bad_limit_is_one_line_exit_2() -> None:
    r = _plan("--limit-mm-per-prompt", "image=2")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "--limit-mm-per-prompt: not JSON" in r.stderr


def test_profile_takes_the_limits_as_a_toml_table(tmp_path: Path) -> None:
    from dryboot.planner.profiles import load_profiles, run

    (tmp_path / "p.toml").write_text(
        f'[defaults]\nmodel = "{QWEN35_27B}"\ngpu = "H100"\nmax-model-len = 32768\n\n'
        "[profiles.text]\nlimit-mm-per-prompt = {image = 0, video = 0}\n"
        'compilation-config = {cudagraph_mode = "PIECEWISE"}\n\n'
        "[profiles.vision]\n"
    )
    results = {p.name: pl for p, _, pl in run(load_profiles(tmp_path / "p.toml"))}
    assert any(n.startswith("KV budget predicted") for n in results["text"].notes)
    assert any(n.startswith("KV budget predicted") for n in results["vision"].notes)
