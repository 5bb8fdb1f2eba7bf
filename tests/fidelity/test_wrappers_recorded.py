"""Issue 37: the multimodal wrappers of text models dryboot plans that stay refused are refused as
vLLM refuses them. vLLM 0.28.0's and 0.33.0's recorded engine start on their tiny configs
(``record_wrappers.py``, ``data/wrappers/``) fails with the error the refusal names, and dryboot
refuses the same config (exit 2, the wrapper named)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import wrapper_cases as W

from dryboot.cli import cli
from dryboot.vllm.models.registry import architecture_table


@pytest.mark.parametrize("version", W.VERSIONS)
def test_every_case_is_recorded(version: str) -> None:
    rec = W.recorded(version)
    assert set(rec) == set(W.CASES)
    for cid, (name, argv) in W.CASES.items():
        assert rec[cid]["config"] == name and rec[cid]["argv"] == argv, cid


@pytest.mark.parametrize(("version", "cid"), [(v, c) for v in W.VERSIONS for c in W.EXPECT])
def test_vllm_fails_as_the_refusal_says(version: str, cid: str, tmp_path: Path) -> None:
    wrapper, error, words = W.EXPECT[cid]
    rows = {r.architecture: r for r in architecture_table(version)}
    v = W.recorded(version)[cid]["vllm"]
    assert not v.get("ok"), cid
    if wrapper not in rows:  # not in this release's registry: vLLM refuses the architecture, or the
        # config first (Parse 3.5's remote-code config on 0.28.0; 0.33.0 has no fireredlid config class)
        words = ("not supported", "architectures", "Transformers does not recognize", error)
        assert any(w in v["error"] for w in words), v["error"]
        return
    assert error in v["error"], v["error"]
    assert rows[wrapper].status == "refused" and words in rows[wrapper].reason, rows[wrapper].reason
    path = tmp_path / "config.json"
    path.write_text((W.CONFIGS / f"{W.CASES[cid][0]}.json").read_text())
    res = CliRunner().invoke(cli, ["plan", "--model", str(path), *W.CASES[cid][1], "--vllm-version", version])
    assert res.exit_code == 2 and wrapper in " ".join(res.output.split()), res.output


@pytest.mark.parametrize(("version", "cid"), [(v, c) for v in W.VERSIONS for c in W.TOWER_CASES])
def test_tower_heads_under_the_multimodal_flags_as_vllm(version: str, cid: str, tmp_path: Path) -> None:
    """Issue 37: TP 2 on a tower of one head. vLLM serves it only where the model class builds no
    tower (:data:`W.TOWER_SERVED`: Qwen4-Exp's wrapper under --language-model-only), and dryboot
    then plans vLLM's groups, block and blocks; elsewhere (no flag, --language-model-only on a
    tower marked by ``_mark_tower_model``, zero --limit-mm-per-prompt) both refuse: vLLM on the
    tower's AssertionError while building the model, dryboot naming the tower's heads."""
    name, argv = W.CASES[cid]
    v = W.recorded(version)[cid]["vllm"]
    d = H.run_dryboot(H.Case(cid, "wrappers", H._write_config(tmp_path, name, W.config(name)), argv), version)
    assert bool(v.get("ok")) == ((version, cid) in W.TOWER_SERVED), v
    if v.get("ok"):
        assert not d.get("refused"), d
        diffs = {k: pair for k, pair in H.compare(v, d)["diffs"].items() if pair[0] is not None}
        assert not diffs and {"block_size", "groups", "group_layers", "num_blocks"} <= set(v), (v, d)
        return
    assert d.get("refused"), d
    arch = W.config(name)["architectures"][0]
    if arch not in {r.architecture for r in architecture_table(version)}:
        assert "not supported" in v["error"] and "not supported" in str(d["error"]), (v, d)
        return
    assert v["stage"] == "model" and v["error"].startswith("AssertionError"), v
    assert "heads: 1 is not divisible by tensor parallel size 2" in str(d["error"]), d


@pytest.mark.parametrize(("version", "cid"), [(v, c) for v in W.VERSIONS for c in W.REMOTE_CASES])
def test_remote_code_wrappers_as_vllm(version: str, cid: str, tmp_path: Path) -> None:
    """Issue 37: a wrapper planned through its text model on the checkpoint's own config class
    (dots.ocr's DotsOCRConfig). With --trust-remote-code (its configuration_*.py beside config.json)
    vLLM serves it and dryboot plans vLLM's groups, block and blocks; without it both refuse, vLLM
    asking for trust_remote_code and dryboot naming --trust-remote-code."""
    name, argv = W.CASES[cid]
    v = W.recorded(version)[cid]["vllm"]
    model = H.with_files(H._write_config(tmp_path, name, W.config(name)), W.files(name))
    d = H.run_dryboot(H.Case(cid, "wrappers", model, argv), version)
    assert bool(v.get("ok")) == ("--trust-remote-code" in argv), v
    if v.get("ok"):
        assert not d.get("refused"), d
        diffs = {k: pair for k, pair in H.compare(v, d)["diffs"].items() if pair[0] is not None}
        assert not diffs and {"block_size", "groups", "group_layers", "num_blocks"} <= set(v), (v, d)
        return
    assert "trust_remote_code=True" in v["error"], v
    assert d.get("refused") and "--trust-remote-code" in str(d["error"]), d
