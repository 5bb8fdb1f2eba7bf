"""MuseGlimmer's weights (``models/muse_glimmer.py``: ``MuseGlimmerForCausalLM`` and
``MuseGlimmerForConditionalGeneration``, vLLM 0.33.0) against vLLM's own figures for the tiny
configs: parameter, buffer and allocated bytes of each pipeline stage. Needs no vLLM.

``recorded-0.33.0-muse-glimmer.json``: recorded in 0.33.0's boot environment with::

    RECORD_WEIGHTS_OUT=/tmp/a.json $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py --tiny \\
        MuseGlimmerForCausalLM MuseGlimmerForConditionalGeneration
    RECORD_WEIGHTS_MM_ENCODER_TP=1 RECORD_WEIGHTS_FLAGS=--mm-encoder-tp-mode RECORD_WEIGHTS_OUT=/tmp/b.json \\
        $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py --tiny MuseGlimmerForConditionalGeneration

(merged: TP 1/2/4/8, three pipeline stages at TP 2, ``--language-model-only`` at TP 1 and 2,
``--mm-encoder-tp-mode data`` at TP 2 and 4, which the class does not support: vLLM falls back to
``weights``). Its TP 1 cases are also in ``recorded-0.33.0-sweep.json``. The earlier releases'
class reads other fields; dryboot refuses them by name there (not recorded)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
ARCHS = ("MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration")
DOC = json.loads((DATA / "recorded-0.33.0-muse-glimmer.json").read_text())
RECORDED: dict[str, Any] = DOC["cases"]


def _tiny(arch: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((HERE / "data" / "architectures" / f"{arch}.json").read_text())
    return config


def _flag(argv: list[str], name: str, default: int) -> int:
    return int(argv[argv.index(name) + 1]) if name in argv else default


def test_recorded() -> None:
    assert DOC["vllm"] == "0.33.0"
    assert len(RECORDED) == 14 and all(row["ok"] for row in RECORDED.values())
    sweep = json.loads((DATA / "recorded-0.33.0-sweep.json").read_text())["cases"]
    for cid in (
        "arch--MuseGlimmerForCausalLM --tensor-parallel-size 1",
        "arch--MuseGlimmerForConditionalGeneration --tensor-parallel-size 1",
        "arch--MuseGlimmerForConditionalGeneration --tensor-parallel-size 1 --language-model-only",
    ):
        assert {k: v for k, v in sweep[cid].items() if k != "seconds"} == {
            k: v for k, v in RECORDED[cid].items() if k != "seconds"
        }


@pytest.mark.parametrize("cid", sorted(RECORDED))
def test_matches_vllm(cid: str) -> None:
    """Every stage's bytes as vLLM 0.33.0 builds them."""
    row: dict[str, Any] = RECORDED[cid]
    config, argv = _tiny(row["config"][len("arch--") :]), row["argv"]
    tp, pp = _flag(argv, "--tensor-parallel-size", 1), _flag(argv, "--pipeline-parallel-size", 1)
    mode = "data" if "--mm-encoder-tp-mode" in argv else "weights"
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(pp):
        par = Parallel(tp=tp, pp=pp, pp_rank=stage, vllm_version="0.33.0", mm_encoder_tp_mode=mode)
        w = rank_weights(
            config,
            par,
            max_num_batched_tokens=row["max_num_batched_tokens"],
            language_model_only="--language-model-only" in argv,
        )
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


def _changed(arch: str, **change: Any) -> dict[str, Any]:
    config = copy.deepcopy(_tiny(arch))
    target = config.get("text_config", config)
    target.update(change)
    return config


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("version", ["0.28.0", "0.30.0", "0.32.0"])
def test_earlier_releases_refused_by_name(arch: str, version: str) -> None:
    with pytest.raises(InputError, match=r"checked on vLLM 0\.33\.0 only"):
        rank_weights(_tiny(arch), Parallel(vllm_version=version), max_num_batched_tokens=8192)


@pytest.mark.parametrize(
    ("config", "words"),
    [
        (_changed("MuseGlimmerForCausalLM", hidden_activation="gelu"), "silu only"),
        ({**_tiny("MuseGlimmerForConditionalGeneration"), "out_hidden_size": 128}, "pixel-shuffle"),
        (
            {**_tiny("MuseGlimmerForCausalLM"), "quantization_config": {"quant_method": "fp8"}},
            "quantized",
        ),
    ],
)
def test_refused_by_name(config: dict[str, Any], words: str) -> None:
    with pytest.raises(InputError, match=words):
        rank_weights(config, Parallel(vllm_version="0.33.0"), max_num_batched_tokens=8192)


def test_untied_head_on_every_stage() -> None:
    """The class never ties its head: a config asking for it allocates the same."""
    par = Parallel(tp=2, pp=3, pp_rank=1, vllm_version="0.33.0")
    tied = _changed("MuseGlimmerForCausalLM", tie_word_embeddings=True)
    plain = rank_weights(_tiny("MuseGlimmerForCausalLM"), par, max_num_batched_tokens=8192)
    assert rank_weights(tied, par, max_num_batched_tokens=8192).allocated_bytes == plain.allocated_bytes
