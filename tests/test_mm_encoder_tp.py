"""``--mm-encoder-tp-mode`` (issue 37): the flag, the release table of classes with
``supports_encoder_tp_data``, its mapping from a logged boot, the geometry's tower-head check and
the budget's encoder term (the weights: ``tests/fidelity/test_weights_mm_encoder_tp.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dryboot.checklog.argmap import map_args
from dryboot.cli import cli
from dryboot.vllm.config.mm_encoder_tp import parse_mode, support, whole_tower
from dryboot.vllm.worker.encoder_profile import data_parallel_shares

ARCHS = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures"
QWEN25 = "Qwen2_5_VLForConditionalGeneration"


def _plan(tmp_path: Path, config: dict[str, Any], *argv: str) -> tuple[int, dict[str, Any]]:
    """(exit code, the JSON plan; ``{"error": the output}`` where the plan is refused)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    res = CliRunner().invoke(cli, ["plan", "--json", "--model", str(path), "--max-model-len", "4096", *argv])
    doc: dict[str, Any] = json.loads(res.stdout[res.stdout.find("{") :]) if "{" in res.stdout else {}
    return res.exit_code, doc or {"error": res.output}


def _two_heads() -> dict[str, Any]:
    config: dict[str, Any] = json.loads((ARCHS / f"{QWEN25}.json").read_text())
    return {**config, "vision_config": {**config["vision_config"], "num_heads": 2}}


def test_the_flag_takes_vllm_values() -> None:
    assert parse_mode("data") == "data" and parse_mode("weights") == "weights"
    with pytest.raises(ValueError, match="weights, data"):
        parse_mode("tensor")


@pytest.mark.parametrize(
    ("arch", "version", "kind"),
    [
        (QWEN25, "0.27.1", "data"),
        (QWEN25, "0.33.0", "data"),
        ("HunYuanVLForConditionalGeneration", "0.28.0", "data"),
        ("HunYuanVLForConditionalGeneration", "0.29.0", "fallback"),  # the Transformers backend's class
        ("CohereCompassForConditionalGeneration", "0.28.0", "fallback"),
        ("CohereCompassForConditionalGeneration", "0.30.0", "data"),
        ("Gemma3ForConditionalGeneration", "0.28.0", "fallback"),
        # vllm/models/<name>/ package classes, read as CUDA builds them (their bases included)
        ("Qwen4ExpForConditionalGeneration", "0.31.0", "data"),  # Qwen3.5's wrapper's flag
        ("Step5ForConditionalGeneration", "0.33.0", "data"),  # Step3p7's, Step-3's
        ("Dots3NoteForCausalLM", "0.28.0", "data"),
        ("KimiK3ForConditionalGeneration", "0.27.1", "data"),
        ("DeepseekV4ForConditionalGeneration", "0.33.0", "fallback"),  # common/vl_model.py: no flag
    ],
)
def test_which_classes_support_data_mode(arch: str, version: str, kind: str) -> None:
    assert support(arch, version) == kind


def test_whole_tower_only_in_data_mode_for_sized_supporting_classes() -> None:
    assert whole_tower(QWEN25, "data", "0.28.0")
    assert not whole_tower(QWEN25, "weights", "0.28.0")
    assert not whole_tower("DotsOCRForCausalLM", "data", "0.28.0")  # supports it, not sized
    assert not whole_tower("Gemma3ForConditionalGeneration", "data", "0.28.0")


@pytest.mark.parametrize("plan", [False, True])
def test_a_logged_mode_is_mapped(plan: bool) -> None:
    """check-log and a --serve line carry the mode to the geometry (no longer an ignored key)."""
    logged = map_args({"mm_encoder_tp_mode": "data", "tensor_parallel_size": 4}, "log", plan=plan)
    assert logged.args.mm_encoder_tp_mode == "data"
    assert logged.flags["mm-encoder-tp-mode"] == "data"
    assert not any("mm_encoder_tp_mode" in n for n in logged.notes)


def test_tower_heads_tp_does_not_divide(tmp_path: Path) -> None:
    """Qwen2.5-VL with 2 vision heads at TP 4: vLLM fails in weights mode (AssertionError: 2 is
    not divisible by 4) and builds in data mode (recorded: recorded-*-mmtp-heads.json)."""
    rc, doc = _plan(tmp_path, _two_heads(), "--tensor-parallel-size", "4")
    assert rc == 2 and "vision_config.num_heads" in doc["error"] and "not divisible by tensor" in doc["error"]
    rc, doc = _plan(tmp_path, _two_heads(), "--tensor-parallel-size", "4", "--mm-encoder-tp-mode", "data")
    assert rc == 0, doc.get("errors")
    assert doc["weights"]["refused"] is None


def _encoder(doc: dict[str, Any]) -> dict[str, Any]:
    """The budget's ``activation: multimodal encoder`` term."""
    return next(t for t in doc["budget"]["terms"] if t["name"] == "activation: multimodal encoder")


@pytest.mark.parametrize("version", ["0.28.0", "0.33.0"])
def test_the_encoder_profile_in_data_mode(tmp_path: Path, version: str) -> None:
    """Qwen2.5-VL in data mode: even at TP 1 the tower runs through
    run_dp_sharded_mrope_vision_model, which copies the pixel values (torch.cat) before the
    tower: the term grows over weights mode's by that copy; at TP 2 the one dummy item runs on
    rank 0 through the whole tower (wider than weights mode's half), and every rank keeps the
    all-gathered outputs (2 x the item's). --skip-mm-profiling leaves no encoder term; a fallback
    class is profiled as in weights mode."""
    config = json.loads((ARCHS / f"{QWEN25}.json").read_text())
    base = ("--gpu", "H100", "--vllm-version", version)
    weights = {tp: _encoder(_plan(tmp_path, config, *base, "--tensor-parallel-size", str(tp))[1]) for tp in (1, 2)}
    data = {
        tp: _encoder(
            _plan(tmp_path, config, *base, "--tensor-parallel-size", str(tp), "--mm-encoder-tp-mode", "data")[1]
        )
        for tp in (1, 2)
    }
    # TP 1: the same tower, the pixel copy added (65,536 patches x 1,176 elements, 2-4 B)
    pixels = 65_536 * 1_176
    assert data[1]["high"] - weights[1]["high"] == 4 * pixels
    assert "copy of their pixel values" in data[1]["source"]
    # TP 2: the whole tower on rank 0 (weights mode's at TP 1, plus the copy), the outputs gathered twice
    assert data[2]["high"] == data[1]["high"] > weights[2]["high"]
    assert data[2]["low"] == 2 * weights[2]["low"]  # the gathered buffer: the item and rank 1's padding
    assert "1 of the 1 item(s) on the heaviest of 2 TP rank(s)" in data[2]["source"]
    _, doc = _plan(
        tmp_path, config, *base, "--tensor-parallel-size", "2", "--mm-encoder-tp-mode", "data", "--skip-mm-profiling"
    )
    assert "--mm-encoder-tp-mode" not in json.dumps(doc["budget"])
    gemma = json.loads((ARCHS / "Gemma3ForConditionalGeneration.json").read_text())
    _, doc = _plan(tmp_path, gemma, *base, "--tensor-parallel-size", "2", "--mm-encoder-tp-mode", "data")
    assert "--mm-encoder-tp-mode data" not in json.dumps(doc.get("budget"))
    assert any("Falling back to `--mm-encoder-tp-mode weights`" in n for n in doc["weights"]["notes"])


@pytest.mark.parametrize("tp", [1, 2])
def test_an_encoder_profile_not_bounded_in_data_mode_is_refused(tmp_path: Path, tp: int) -> None:
    """Kimi-VL's MoonViT runs through the rope-2d split (its own output layout), which dryboot
    does not bound: refused by name in data mode, at TP 1 too (the copy of its input)."""
    config = json.loads((ARCHS / "KimiVLForConditionalGeneration.json").read_text())
    argv = ("--gpu", "H100", "--tensor-parallel-size", str(tp), "--mm-encoder-tp-mode", "data")
    _, doc = _plan(tmp_path, config, *argv)
    refused = doc["budget"]["refused"] or ""
    assert "--mm-encoder-tp-mode data" in refused and "KimiVLForConditionalGeneration" in refused
    _, doc = _plan(tmp_path, config, "--gpu", "H100", "--tensor-parallel-size", str(tp))
    assert not doc["budget"].get("refused") and _encoder(doc)["high"] > 0


@pytest.mark.parametrize(
    ("items", "tp", "shares"),
    # vLLM's get_load_balance_assignment(sizes=[s] * items, num_gpus=tp)[1], 0.27.1 and 0.33.0
    [(1, 1, (1,)), (1, 2, (1, 0)), (3, 2, (2, 1)), (5, 4, (2, 1, 1, 1)), (8, 4, (2, 2, 2, 2)), (7, 8, (1,) * 7 + (0,))],
)
def test_the_dummy_items_split_over_the_ranks(items: int, tp: int, shares: tuple[int, ...]) -> None:
    assert data_parallel_shares(items, tp) == shares


def test_isaac_heads_tp_does_not_divide(tmp_path: Path) -> None:
    """Isaac (4 vision heads) at TP 8: refused as vLLM refuses it in weights mode; in data mode its
    SigLIP-2 tower is built whole (its projector split): served."""
    config = json.loads((ARCHS / "IsaacForConditionalGeneration.json").read_text())
    rc, doc = _plan(tmp_path, config, "--tensor-parallel-size", "8")
    assert rc == 2 and "AssertionError" in doc["error"]
    rc, doc = _plan(tmp_path, config, "--tensor-parallel-size", "8", "--mm-encoder-tp-mode", "data")
    assert rc == 0 and doc["weights"]["refused"] is None


def test_a_supporting_class_not_sized_is_refused_by_name() -> None:
    """``loader.encoder_tp_data`` for a supporting class whose data-mode tower is not sized
    (H2OVLChatModel: every supporting class dryboot walks is sized, so a report under the name of one
    it refuses stands in): under TP its weights are refused by name; at TP 1 they stand."""
    from dryboot.vllm.model_executor.model_loader.loader import encoder_tp_data, model_weights

    path = ARCHS / f"{QWEN25}.json"

    def report(tp: int) -> Any:
        kw: dict[str, Any] = {"tp": tp, "max_num_batched_tokens": 8192, "mm_encoder_tp_mode": "data"}
        return encoder_tp_data(
            model_weights(path, **kw),
            lambda: model_weights(path, language_model_only=True, **kw),
            "H2OVLChatModel",
            tp,
            "0.28.0",
        )

    refused = report(2).refused
    assert refused is not None and "H2OVLChatModel" in refused and "not modelled" in refused
    assert report(1).refused is None


@pytest.mark.parametrize(
    ("arch", "tp", "outcome"),
    [
        (QWEN25, 2, "sized"),
        ("IsaacForConditionalGeneration", 2, "sized"),
        ("IsaacForConditionalGeneration", 1, "sized"),
        ("Gemma3ForConditionalGeneration", 2, "fallback"),
        ("Qwen3ForCausalLM", 2, "no tower"),
    ],
)
def test_encoder_tp_data_as_check_log_and_profiles_use_it(arch: str, tp: int, outcome: str) -> None:
    """``loader.encoder_tp_data`` (plan, check-log's memory lines, launcher profiles): the sized
    tower whole, the fallback noted, a supporting class not sized refused under TP, a text model
    unchanged."""
    from dryboot.vllm.model_executor.model_loader.loader import encoder_tp_data, model_weights

    path = ARCHS / f"{arch}.json"
    kw: dict[str, Any] = {"tp": tp, "max_num_batched_tokens": 8192, "mm_encoder_tp_mode": "data"}
    report = encoder_tp_data(
        model_weights(path, **kw), lambda: model_weights(path, language_model_only=True, **kw), arch, tp, "0.28.0"
    )
    plain = model_weights(path, tp=tp, max_num_batched_tokens=8192)
    if outcome == "refused":
        assert report.refused is not None and arch in report.refused
        return
    assert report.refused is None
    fallback = any("Falling back" in n for n in report.notes)
    assert fallback == (outcome == "fallback")
    same = report.stages[0].loaded_bytes == plain.stages[0].loaded_bytes
    assert same == (outcome != "sized" or tp == 1)


def test_the_fallback_warning_with_language_model_only(tmp_path: Path) -> None:
    """vLLM warns before it reads --language-model-only: the note stays; a supporting class
    builds no tower then, so nothing is refused."""
    gemma = json.loads((ARCHS / "Gemma3ForConditionalGeneration.json").read_text())
    base = ("--tensor-parallel-size", "2", "--mm-encoder-tp-mode", "data", "--language-model-only")
    _, doc = _plan(tmp_path, gemma, *base)
    assert any("Falling back" in n for n in doc["weights"]["notes"])
    isaac = json.loads((ARCHS / "IsaacForConditionalGeneration.json").read_text())
    _, doc = _plan(tmp_path, isaac, *base)
    assert doc["weights"]["refused"] is None
    assert not any("Falling back" in n for n in doc["weights"]["notes"])
