"""MuseGlimmer's weights (``models/muse_glimmer.py``: ``MuseGlimmerForCausalLM`` and
``MuseGlimmerForConditionalGeneration``, vLLM 0.28.0-0.33.0) against vLLM's own figures for
the tiny configs: parameter, buffer and allocated bytes of each pipeline stage. Needs no vLLM.

``recorded-<release>-muse-glimmer.json``: recorded in each release's boot environment with::

    RECORD_WEIGHTS_OUT=/tmp/a.json $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py --tiny \\
        MuseGlimmerForCausalLM MuseGlimmerForConditionalGeneration
    RECORD_WEIGHTS_MM_ENCODER_TP=1 RECORD_WEIGHTS_FLAGS=--mm-encoder-tp-mode RECORD_WEIGHTS_OUT=/tmp/b.json \\
        $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py --tiny MuseGlimmerForConditionalGeneration

(merged: TP 1/2/4/8, three pipeline stages at TP 2, ``--language-model-only`` at TP 1 and 2,
``--mm-encoder-tp-mode data`` at TP 2 and 4, which the class does not support: vLLM falls back to
``weights``). The TP 1 cases of 0.30.0-0.33.0 are also in ``recorded-<release>-sweep.json``.
``recorded-<release>-muse-glimmer-overlay.json``: 0.28.0-0.32.0 at TP 2 and three stages with
``RECORD_WEIGHTS_OVERLAY`` (``use_attn_output_gate`` false: no output gate). 0.29.0-0.32.0 build
it as 0.28.0 does (vLLM's own config classes, the tower on every stage). 0.27.1's registry has no
MuseGlimmer."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from weights_records import int_flag

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
ARCHS = ("MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration")
OWN_RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0")
FILES = (
    "recorded-0.28.0-muse-glimmer.json",
    "recorded-0.28.0-muse-glimmer-overlay.json",
    "recorded-0.33.0-muse-glimmer.json",
    *(f"recorded-{v}-muse-glimmer{part}.json" for v in OWN_RELEASES for part in ("", "-overlay")),
)
DOCS = {name: json.loads((DATA / name).read_text()) for name in FILES}
RECORDED = {(name, cid): row for name, doc in DOCS.items() for cid, row in doc["cases"].items()}


def _tiny(arch: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((HERE / "data" / "architectures" / f"{arch}.json").read_text())
    return config


def test_recorded() -> None:
    assert [DOCS[name]["vllm"] for name in FILES] == [
        "0.28.0",
        "0.28.0",
        "0.33.0",
        *(v for v in OWN_RELEASES for _ in range(2)),
    ]
    assert len(RECORDED) == 30 + 4 * 16 and all(row["ok"] for row in RECORDED.values())
    for v in ("0.30.0", "0.31.0", "0.32.0", "0.33.0"):
        sweep = json.loads((DATA / f"recorded-{v}-sweep.json").read_text())["cases"]
        for cid in (
            "arch--MuseGlimmerForCausalLM --tensor-parallel-size 1",
            "arch--MuseGlimmerForConditionalGeneration --tensor-parallel-size 1",
            "arch--MuseGlimmerForConditionalGeneration --tensor-parallel-size 1 --language-model-only",
        ):
            assert {k: v for k, v in sweep[cid].items() if k != "seconds"} == {
                k: v for k, v in RECORDED[(f"recorded-{v}-muse-glimmer.json", cid)].items() if k != "seconds"
            }


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    """Every stage's bytes as the release builds them."""
    row: dict[str, Any] = RECORDED[(name, cid)]
    version = DOCS[name]["vllm"]
    arch = row["config"][len("arch--") :]
    config, argv = {**_tiny(arch), **DOCS[name].get("overlay", {}).get(arch, {})}, row["argv"]
    tp, pp = int_flag(argv, "--tensor-parallel-size"), int_flag(argv, "--pipeline-parallel-size")
    mode = "data" if "--mm-encoder-tp-mode" in argv else "weights"
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(pp):
        par = Parallel(tp=tp, pp=pp, pp_rank=stage, vllm_version=version, mm_encoder_tp_mode=mode)
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
def test_unrecorded_release_refused_by_name(arch: str) -> None:
    """0.27.1 (neither its registry nor its transformers knows MuseGlimmer) is refused naming it."""
    with pytest.raises(InputError, match=r"vLLM 0\.27\.1"):
        rank_weights(_tiny(arch), Parallel(vllm_version="0.27.1"), max_num_batched_tokens=8192)


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


def test_a_flat_wrapper_config_refused_on_0280() -> None:
    """vLLM 0.28.0's own config class regroups text fields given on the top level: not modelled."""
    config = _tiny("MuseGlimmerForConditionalGeneration")
    flat = {**{k: v for k, v in config.items() if k != "text_config"}, **config["text_config"]}
    with pytest.raises(InputError, match="top level"):
        rank_weights(flat, Parallel(vllm_version="0.28.0"), max_num_batched_tokens=8192)


def test_untied_head_on_every_stage() -> None:
    """The class never ties its head: a config asking for it allocates the same."""
    par = Parallel(tp=2, pp=3, pp_rank=1, vllm_version="0.33.0")
    tied = _changed("MuseGlimmerForCausalLM", tie_word_embeddings=True)
    plain = rank_weights(_tiny("MuseGlimmerForCausalLM"), par, max_num_batched_tokens=8192)
    assert rank_weights(tied, par, max_num_batched_tokens=8192).allocated_bytes == plain.allocated_bytes
