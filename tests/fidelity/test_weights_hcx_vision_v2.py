"""HyperCLOVA X SEED vision V2's weights (``models/hyperclovax_vision_v2.py``:
``HCXVisionV2ForCausalLM``) against vLLM's own figures for the tiny config: parameter, buffer and
allocated bytes of each pipeline stage. Needs no vLLM.

``recorded-<release>-hcx-vision-v2.json``: recorded in each release's boot environment (0.28.0-0.30.0,
0.32.0, 0.33.0; 0.27.1's and 0.31.0's transformers have no ``hyperclovax_vision_v2``: vLLM refuses the
config, recorded on 0.27.1) with::

    RECORD_WEIGHTS_MM_ENCODER_TP=1 RECORD_WEIGHTS_OUT=/tmp/a.json \\
        $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py --tiny HCXVisionV2ForCausalLM

(TP 1/2/4/8, three pipeline stages at TP 2, ``--language-model-only`` at TP 1 and 2,
``--mm-encoder-tp-mode data`` at TP 2 and 4, which the class does not support: vLLM falls back to
``weights``; 0.28.0-0.32.0 build the tower on every pipeline stage, 0.33.0 on the first; 0.28.0's non-data
cases also sit in ``recorded.json``). TP 1 on 0.30.0, 0.32.0 and 0.33.0 (0.31.0 refuses the config) is checked by
``test_weights_sweep.py``."""

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
ARCH = "HCXVisionV2ForCausalLM"
RELEASES = ("0.28.0", "0.29.0", "0.30.0", "0.32.0", "0.33.0")
DOCS = {v: json.loads((HERE / "data" / "weights" / f"recorded-{v}-hcx-vision-v2.json").read_text()) for v in RELEASES}
RECORDED = {(v, cid): row for v, doc in DOCS.items() for cid, row in doc["cases"].items()}


def _tiny() -> dict[str, Any]:
    config: dict[str, Any] = json.loads((HERE / "data" / "architectures" / f"{ARCH}.json").read_text())
    return config


def test_recorded() -> None:
    assert {v: doc["vllm"] for v, doc in DOCS.items()} == {v: v for v in RELEASES}
    assert len(RECORDED) == 9 * len(RELEASES) and all(row["ok"] for row in RECORDED.values())


@pytest.mark.parametrize(("version", "cid"), sorted(RECORDED))
def test_matches_vllm(version: str, cid: str) -> None:
    """Every stage's bytes as the release builds them."""
    row: dict[str, Any] = RECORDED[(version, cid)]
    argv = row["argv"]
    tp, pp = int_flag(argv, "--tensor-parallel-size"), int_flag(argv, "--pipeline-parallel-size")
    mode = "data" if "--mm-encoder-tp-mode" in argv else "weights"
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(pp):
        par = Parallel(tp=tp, pp=pp, pp_rank=stage, vllm_version=version, mm_encoder_tp_mode=mode)
        w = rank_weights(
            _tiny(),
            par,
            max_num_batched_tokens=row["max_num_batched_tokens"],
            language_model_only="--language-model-only" in argv,
        )
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


REFUSED_0271 = json.loads((HERE / "data" / "weights" / "recorded-0.27.1-hcx-vision-v2.json").read_text())


@pytest.mark.parametrize("cid", sorted(REFUSED_0271["cases"]))
def test_0271_refuses_the_config(cid: str) -> None:
    """vLLM 0.27.1 refuses every flag set (its transformers has no ``hyperclovax_vision_v2``): so does dryboot."""
    row = REFUSED_0271["cases"][cid]
    assert REFUSED_0271["vllm"] == "0.27.1" and not row["ok"] and "hyperclovax_vision_v2" in row["error"]
    par = Parallel(tp=int_flag(row["argv"], "--tensor-parallel-size"), vllm_version="0.27.1")
    with pytest.raises(InputError, match="hyperclovax_vision_v2"):
        rank_weights(_tiny(), par, max_num_batched_tokens=8192)


def test_the_wrappers_tie_wins() -> None:
    """The wrapper's ``tie_word_embeddings`` (default true) is the language model's: a text config
    untying its head changes nothing; the wrapper untying it adds the head."""
    par = Parallel(vllm_version="0.33.0")
    base = rank_weights(_tiny(), par, max_num_batched_tokens=8192).param_bytes
    text_untied = copy.deepcopy(_tiny())
    text_untied["text_config"]["tie_word_embeddings"] = False
    assert rank_weights(text_untied, par, max_num_batched_tokens=8192).param_bytes == base
    untied = {**_tiny(), "tie_word_embeddings": False}
    head = 1024 * 512 * 2  # vocab x hidden, bfloat16
    assert rank_weights(untied, par, max_num_batched_tokens=8192).param_bytes == base + head
