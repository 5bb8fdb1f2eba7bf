"""DeepSeek-V4's multimodal wrapper (``DeepseekV4ForConditionalGeneration``, vLLM 0.30.0+:
``common/vl_model.py``) against vLLM's own build: the text model with the vision variant's routing
tensors (``bias_vl`` on every MoE layer, ``e_score_correction_bias`` on the hash layers too), the
``DeepseekV4ViT`` tower, its aligner and the four float32 image vectors. Needs no vLLM.

vLLM's figures, both from 0.33.0's boot environment on the tiny wrapper config
(``data/architectures/DeepseekV4ForConditionalGeneration.json``, unquantized):

* after loading (``process_weights_after_loading`` run), an A100 at TP 1, 2 and 4, with
  ``--language-model-only`` at TP 1 and 2 and ``--mm-encoder-tp-mode data`` at TP 2:
  ``dsv4-vl-recorded-0.33.0.json``, by ``RECORD_SET=dsv4 RECORD_GPUS=A100-80GB
  record_quant_weights.py tiny-DeepseekV4VL-bf16`` (``RECORD_TPS``, ``RECORD_ARGV`` for the flags;
  ``RECORD_OUT``); the config dir ``quant-configs-dsv4/tiny-DeepseekV4VL-bf16``;
* built on the meta device (no post-load step; parameter bytes), every flag set of
  ``record_weights.py --tiny DeepseekV4ForConditionalGeneration`` with
  ``RECORD_WEIGHTS_MM_ENCODER_TP=1``: ``dsv4-vl-meta-0.33.0.json``. The tower's share (each TP's
  figure less its ``--language-model-only`` one) and the data mode's fallback (the same figure as
  ``weights`` at TP 2 and 4) are read there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.config.mm_encoder_tp import support
from dryboot.vllm.model_executor.model_loader.loader import model_weights
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights
from dryboot.vllm.model_executor.models.deepseek_v4 import vision_counts

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
CONFIG_DIR = DATA / "quant-configs-dsv4" / "tiny-DeepseekV4VL-bf16"
CONFIG: dict[str, Any] = json.loads((CONFIG_DIR / "config.json").read_text())
AFTER = json.loads((DATA / "dsv4-vl-recorded-0.33.0.json").read_text())
META = json.loads((DATA / "dsv4-vl-meta-0.33.0.json").read_text())
WRAPPER = "arch--DeepseekV4ForConditionalGeneration --tensor-parallel-size "


def _flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_config_is_the_tiny_one() -> None:
    tiny = HERE / "data" / "architectures" / "DeepseekV4ForConditionalGeneration.json"
    assert json.loads(tiny.read_text()) == CONFIG
    assert AFTER["vllm"] == META["vllm"] == "0.33.0"
    assert len(AFTER["cases"]) == 6 and all(row["ok"] for row in AFTER["cases"].values())


@pytest.mark.parametrize("cid", sorted(AFTER["cases"]))
def test_matches_vllm_after_loading(cid: str) -> None:
    """What the A100 holds after loading, to the 512-byte block: text model, routing tensors,
    tower, aligner and image vectors (none of the tower under ``--language-model-only``)."""
    row = AFTER["cases"][cid]
    report = model_weights(
        CONFIG_DIR,
        tp=int(row["argv"][1]),
        compute_capability=tuple(row["capability"]),
        sm_count=row["sm_count"],
        vllm_version="0.33.0",
        max_num_batched_tokens=row["max_num_batched_tokens"],
        language_model_only="--language-model-only" in row["argv"],
        mm_encoder_tp_mode=_flag(row["argv"], "--mm-encoder-tp-mode") or "weights",
    )
    assert report.refused is None, report.refused
    assert report.stages[0].allocated_bytes == row["allocated_bytes"], cid


@pytest.mark.parametrize("tp", [1, 2])
def test_tower_share_on_the_meta_device(tp: int) -> None:
    """The tower, aligner and image vectors: vLLM's TP figure less its ``--language-model-only``
    one, in parameter bytes and allocator blocks (the tower holds no buffer)."""
    full, text = META["cases"][f"{WRAPPER}{tp}"], META["cases"][f"{WRAPPER}{tp} --language-model-only"]
    counts = vision_counts(CONFIG, tp)
    h = CONFIG["hidden_size"]
    assert full["param_bytes"] - text["param_bytes"] == 2 * sum(counts) + 4 * 4 * h
    blocks = sum(-(-2 * n // 512) * 512 for n in counts) + 4 * (-(-4 * h // 512) * 512)
    assert full["allocated_bytes"] - text["allocated_bytes"] == blocks
    assert full["buffer_bytes"] == text["buffer_bytes"]


@pytest.mark.parametrize("tp", [2, 4])
def test_data_mode_falls_back(tp: int) -> None:
    """The class has no ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` builds what
    ``weights`` builds (vLLM's figures), and dryboot reads it as the fallback."""
    data, weights = META["cases"][f"{WRAPPER}{tp} --mm-encoder-tp-mode data"], META["cases"][f"{WRAPPER}{tp}"]
    assert (data["param_bytes"], data["allocated_bytes"]) == (weights["param_bytes"], weights["allocated_bytes"])
    assert support("DeepseekV4ForConditionalGeneration", "0.33.0") == "fallback"


def test_tower_whole_where_tp_does_not_divide_its_heads() -> None:
    """``is_vit_use_data_parallel``: TP 8 over 4 vision heads builds every tower layer whole."""
    assert vision_counts(CONFIG, 8) == vision_counts(CONFIG, 1)
    assert sum(vision_counts(CONFIG, 4)) < sum(vision_counts(CONFIG, 1))


def test_text_config_with_a_tower_is_the_wrapper() -> None:
    """vLLM 0.30.0+ serves a ``DeepseekV4ForCausalLM`` config with ``vision_n_layers`` as the
    wrapper (``DeepseekV4ModelArchConfigConvertor``): the same figure, the tower included."""
    par = Parallel(tp=2, vllm_version="0.33.0", capability=(8, 0), sm_count=108)
    wrapper = rank_weights(CONFIG, par, max_num_batched_tokens=2048)
    text = rank_weights({**CONFIG, "architectures": ["DeepseekV4ForCausalLM"]}, par, max_num_batched_tokens=2048)
    assert (text.param_bytes, text.allocated_bytes) == (wrapper.param_bytes, wrapper.allocated_bytes)


@pytest.mark.parametrize("version", ["0.27.1", "0.28.0", "0.29.0"])
def test_before_the_wrapper_refused(version: str) -> None:
    """Before 0.30.0 there is no wrapper class, and a text config with a tower is not recorded:
    both refused by name."""
    par = Parallel(vllm_version=version, capability=(8, 0), sm_count=108)
    with pytest.raises(InputError, match="registry has no DeepseekV4ForConditionalGeneration"):
        rank_weights(CONFIG, par, max_num_batched_tokens=2048)
    text = {**CONFIG, "architectures": ["DeepseekV4ForCausalLM"]}
    with pytest.raises(InputError, match=r"vision variant's text model is checked on vLLM 0\.30\.0"):
        rank_weights(text, par, max_num_batched_tokens=2048)


@pytest.mark.parametrize(
    ("flags", "code", "words"),
    [
        ((), 3, "does not bound the deepseek_v4_vision tower's forward"),
        (("--language-model-only",), 0, "verdict: fits"),
        (("--limit-mm-per-prompt", '{"image": 0}'), 0, "verdict: fits"),
    ],
)
def test_plan_gpu_gives_a_budget(flags: tuple[str, ...], code: int, words: str) -> None:
    """``plan --gpu`` sizes the wrapper's weights and budgets it; the ViT's profile (vLLM encodes
    a dummy image batch first) is refused by name where vLLM runs it."""
    from click.testing import CliRunner

    from dryboot.cli import cli

    argv = ["plan", "--model", str(CONFIG_DIR), "--gpu", "A100-80GB", "--vllm-version", "0.33.0", *flags]
    res = CliRunner().invoke(cli, argv)
    out = " ".join(res.output.split())
    assert res.exit_code == code, out
    assert words in out
    assert "Model loading took" in out


def test_releases_build_it_alike() -> None:
    """0.30.0-0.32.0 build what 0.33.0 builds (their sweep records of the wrapper at TP 1, with
    and without the tower, on the meta device): the wrapper is sized on every one of them."""
    figures = {}
    for version in ("0.30.0", "0.31.0", "0.32.0", "0.33.0"):
        cases = json.loads((DATA / f"recorded-{version}-sweep.json").read_text())["cases"]
        figures[version] = [
            (cases[cid]["param_bytes"], cases[cid]["buffer_bytes"], cases[cid]["allocated_bytes"])
            for cid in (f"{WRAPPER}1", f"{WRAPPER}1 --language-model-only")
        ]
    assert len(set(map(tuple, figures.values()))) == 1, figures
    meta = META["cases"]
    assert figures["0.33.0"][0] == tuple(
        meta[f"{WRAPPER}1"][k] for k in ("param_bytes", "buffer_bytes", "allocated_bytes")
    )


@pytest.mark.parametrize("arch", ["DeepseekV4ForConditionalGeneration", "DeepseekV4ForCausalLM"])
def test_image_limit(arch: str) -> None:
    """An image limit of 0 drops the tower as ``--language-model-only`` does (vLLM's TP 2 figure
    after loading); a positive one keeps it."""
    par = Parallel(tp=2, vllm_version="0.33.0", capability=(8, 0), sm_count=108)
    config = {**CONFIG, "architectures": [arch]}
    rows = AFTER["cases"]
    for limit, cid in ((0, " --language-model-only"), (1, "")):
        w = rank_weights(config, par, max_num_batched_tokens=2048, limit_mm_per_prompt={"image": limit})
        assert (
            w.allocated_bytes
            == rows[f"tiny-DeepseekV4VL-bf16 A100-80GB --tensor-parallel-size 2{cid}"]["allocated_bytes"]
        )
