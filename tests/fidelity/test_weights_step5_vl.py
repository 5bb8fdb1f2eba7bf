"""Step5's wrapper (``Step5ForConditionalGeneration``: Step3p7's perception-encoder frontend,
``models/step_vl.py``, over Step5's text model, ``models/step5.py``) against vLLM 0.33.0's own
figures: parameter, buffer and allocated bytes of each pipeline stage. Needs no vLLM.

``recorded-0.33.0-step5-vl.json``: the tiny config, recorded in 0.33.0's boot environment with::

    RECORD_WEIGHTS_MM_ENCODER_TP=1 RECORD_WEIGHTS_OUT=/tmp/a.json \\
        $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py --tiny Step5ForConditionalGeneration

(TP 1/2/4/8, three pipeline stages at TP 2, ``--language-model-only`` at TP 1 and 2,
``--mm-encoder-tp-mode data`` at TP 2 and 4: the tower and projector whole; vLLM refuses TP 4 and 8,
the tower's two heads, and data mode at TP 4, the DSA layers' heads: dryboot refuses them too);
``recorded-0.33.0-step5-vl-overlay.json``: at TP 2 with ``RECORD_WEIGHTS_OVERLAY`` (its ``overlay``:
a class token, ``ln_post`` without ``ln_pre``, no layer scale, no absolute position embedding, a
biased projector). The TP 1 cases are also in ``recorded-0.33.0-sweep.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from weights_records import int_flag, overlaid_tiny

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
ARCH = "Step5ForConditionalGeneration"
FILES = ("recorded-0.33.0-step5-vl.json", "recorded-0.33.0-step5-vl-overlay.json")
DOCS = {name: json.loads((DATA / name).read_text()) for name in FILES}
RECORDED = {(name, cid): row for name, doc in DOCS.items() for cid, row in doc["cases"].items()}


def _config(name: str) -> dict[str, Any]:
    return overlaid_tiny(ARCH, DOCS[name])


def test_recorded() -> None:
    assert all(doc["vllm"] == "0.33.0" for doc in DOCS.values())
    served = {name: sum(1 for (n, _), row in RECORDED.items() if n == name and row["ok"]) for name in FILES}
    assert served == {FILES[0]: 6, FILES[1]: 4}
    sweep = json.loads((DATA / "recorded-0.33.0-sweep.json").read_text())["cases"]
    for cid in (
        f"arch--{ARCH} --tensor-parallel-size 1",
        f"arch--{ARCH} --tensor-parallel-size 1 --language-model-only",
    ):
        assert sweep[cid] == DOCS[FILES[0]]["cases"][cid]


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    """Every stage's bytes as vLLM 0.33.0 builds them, or refused where vLLM refuses."""
    row: dict[str, Any] = RECORDED[(name, cid)]
    config, argv = _config(name), row["argv"]
    tp, pp = int_flag(argv, "--tensor-parallel-size"), int_flag(argv, "--pipeline-parallel-size")
    mode = "data" if "--mm-encoder-tp-mode" in argv else "weights"
    kwargs: dict[str, Any] = {
        "max_num_batched_tokens": row.get("max_num_batched_tokens", 8192),
        "language_model_only": "--language-model-only" in argv,
    }
    if not row["ok"]:
        with pytest.raises(InputError, match=r"heads|query heads per KV group"):
            rank_weights(config, Parallel(tp=tp, pp=pp, vllm_version="0.33.0", mm_encoder_tp_mode=mode), **kwargs)
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(pp):
        par = Parallel(tp=tp, pp=pp, pp_rank=stage, vllm_version="0.33.0", mm_encoder_tp_mode=mode)
        w = rank_weights(config, par, **kwargs)
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


def test_rope2d_off_refused() -> None:
    config = _config(FILES[0])
    config["vision_config"] = {**config["vision_config"], "use_rope2d": False}
    with pytest.raises(InputError, match="use_rope2d"):
        rank_weights(config, Parallel(vllm_version="0.33.0"), max_num_batched_tokens=8192)
