"""Qwen4-Exp's wrapper (``Qwen4ExpForConditionalGeneration``, issue 33): dryboot's per-rank weights
(Qwen4-Exp's text model, Qwen3-VL's vision tower and its deepstack feature buffers) against what
vLLM 0.29.0-0.33.0 allocate on the meta device, byte for byte, and what vLLM refuses refused.

``data/weights/qwen4-exp-vl/recorded-<release>.json`` is each release's own figures for the tiny config
(``data/architectures/Qwen4ExpForConditionalGeneration.json``, no deepstack level) and three
configs derived from it (``data/weights/qwen4-exp-vl/``, not published checkpoints):
``Qwen4ExpVLDeepstack`` (``deepstack_visual_indexes`` [0, 1]), ``Qwen4ExpVLDefaults`` (a
``vision_config`` of ``depth`` 1 and one deepstack level, every other field
``Qwen4ExpVisionConfig``'s default) and ``Qwen4ExpVLNoDeepstack`` (no
``deepstack_visual_indexes``: a field the config class lacks), at TP 1/2/4/8, expert
parallelism, two and three pipeline stages, ``--language-model-only``, zero image / video limits
and 2048 batched tokens, ``--mm-encoder-tp-mode data`` at TP 2 and 4 (0.31.0-0.33.0; 0.29.0 and
0.30.0: the recorder's flag sets only). Recorded in each release's boot environment with the
recorder pointed at a folder holding these four configs::

    RECORD_WEIGHTS_OUT=/tmp/q4vl-0.33.0.json ~/.cache/dryboot/boot-env/0.33.0/bin/python -c \\
      "import sys; from pathlib import Path; sys.path.insert(0, 'tests/fidelity'); import record_weights as R; \\
      R.ARCHS = Path('/tmp/q4vl'); sys.argv = ['r', '--tiny']; sys.exit(R.main())"

and the same with ``R.flag_sets`` returning the extra flag sets (the limits, PP 2, 2048 tokens, the
tower in data mode) one config at a time. A case vLLM refuses must be refused; :data:`REFUSED_HERE`
lists the cases vLLM's meta build passes that dryboot refuses.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from test_weights import _parallel, _serve, deepstack_bytes

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/ with the walk)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, modelled_architectures, rank_weights
from dryboot.vllm.model_executor.models import qwen4_exp

HERE = Path(__file__).resolve().parent
ARCHS = HERE / "data" / "architectures"
DATA = HERE / "data" / "weights" / "qwen4-exp-vl"
RELEASE = "0.33.0"
RELEASES = tuple(p.stem.split("-")[1] for p in sorted(DATA.glob("recorded-*.json")))
RECORDS: dict[str, dict[str, Any]] = {v: json.loads((DATA / f"recorded-{v}.json").read_text()) for v in RELEASES}
RECORDED = RECORDS[RELEASE]
CASES = sorted((v, cid) for v, doc in RECORDS.items() for cid in doc["cases"])
WRAPPER = "Qwen4ExpForConditionalGeneration"
#: cases vLLM's meta build passes and dryboot refuses, each with the words it refuses in: the tiny
#: text config's 2 Gated DeltaNet key heads over TP 4 (vLLM splits the projections' 128 columns
#: without checking the heads; Qwen3-Next's walk, which the text model shares, refuses it)
_TEXT_HEADS = "linear_num_key_heads \\(2\\) is not divisible by 4"
REFUSED_HERE = {
    "arch--Qwen4ExpForConditionalGeneration --tensor-parallel-size 4 --mm-encoder-tp-mode data": _TEXT_HEADS,
    "arch--Qwen4ExpVLDefaults --tensor-parallel-size 4": _TEXT_HEADS,
    "arch--Qwen4ExpVLDefaults --tensor-parallel-size 4 --mm-encoder-tp-mode data": _TEXT_HEADS,
    "arch--Qwen4ExpVLDeepstack --tensor-parallel-size 4 --mm-encoder-tp-mode data": _TEXT_HEADS,
}


def _config(name: str) -> dict[str, Any]:
    path = ARCHS / f"{name}.json"
    config: dict[str, Any] = json.loads((path if path.exists() else DATA / f"{name}.json").read_text())
    return config


def _mode(argv: list[str]) -> str:
    return argv[argv.index("--mm-encoder-tp-mode") + 1] if "--mm-encoder-tp-mode" in argv else "weights"


def _weights(config: dict[str, Any], row: dict[str, Any], stage: int, release: str = RELEASE) -> Any:
    par = _parallel(row["argv"], stage)
    return rank_weights(
        config,
        Parallel(
            tp=par.tp,
            pp=par.pp,
            pp_rank=stage,
            expert_parallel=par.expert_parallel,
            vllm_version=release,
            mm_encoder_tp_mode=_mode(row["argv"]),
        ),
        **_serve(row),
    )


def test_records_are_the_releases() -> None:
    assert RELEASES == ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
    for v, doc in RECORDS.items():
        assert doc["vllm"] == v
        assert {row["ok"] for row in doc["cases"].values()} == {True, False}
    assert WRAPPER in modelled_architectures()


@pytest.mark.parametrize(("release", "cid"), CASES)
def test_matches_vllm(release: str, cid: str) -> None:
    """[param, buffer, allocated] bytes of rank 0 of every stage (the deepstack buffers, a list
    attribute, in the recorder's allocated bytes only: counted with the release's default levels),
    or vLLM's refusal refused."""
    row = RECORDS[release]["cases"][cid]
    config = _config(row["config"][len("arch--") :])
    if cid in REFUSED_HERE:
        assert row["ok"]
        with pytest.raises(InputError, match=REFUSED_HERE[cid]):
            _weights(config, row, 0, release)
        return
    if not row["ok"]:
        with pytest.raises(InputError):
            _weights(config, row, 0, release)
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    with_levels = {**config, "vision_config": qwen4_exp.wrapper_vision(config, release)}
    got = []
    for stage in range(len(stages)):
        w = _weights(config, row, stage, release)
        listed = deepstack_bytes(with_levels, row, release, stage)
        got.append([w.param_bytes, w.buffer_bytes - listed, w.allocated_bytes])
    assert got == stages


def test_deepstack_field_refused_by_name() -> None:
    row = RECORDED["cases"]["arch--Qwen4ExpVLNoDeepstack --tensor-parallel-size 1"]
    with pytest.raises(InputError, match="Qwen4ExpVisionConfig does not default"):
        _weights(_config("Qwen4ExpVLNoDeepstack"), row, 0)


def test_pipeline_stage_before_the_deepstack_levels_refused() -> None:
    row = RECORDED["cases"]["arch--Qwen4ExpVLDeepstack --tensor-parallel-size 2 --pipeline-parallel-size 3"]
    assert not row["ok"] and "start_layer" in row["error"]
    with pytest.raises(InputError, match="before len\\(deepstack_visual_indexes\\) = 2"):
        _weights(_config("Qwen4ExpVLDeepstack"), row, 1)


def test_unrecorded_release_refused() -> None:
    with pytest.raises(InputError, match=r"0\.28\.0"):
        rank_weights(_config(WRAPPER), Parallel(tp=1, vllm_version="0.28.0"), max_num_batched_tokens=8192)


def test_own_config_class_defaults_three_deepstack_levels() -> None:
    """0.29-0.31 read the vision config with vLLM's own class (a Qwen3VLVisionConfig): no
    ``deepstack_visual_indexes`` means Qwen3-VL's [8, 16, 24], built (recorded); 0.32+ refuse it."""
    row = RECORDS["0.31.0"]["cases"]["arch--Qwen4ExpVLNoDeepstack --tensor-parallel-size 1"]
    assert row["ok"]
    assert not RECORDS["0.32.0"]["cases"]["arch--Qwen4ExpVLNoDeepstack --tensor-parallel-size 1"]["ok"]


def test_quantized_refused() -> None:
    config = {**copy.deepcopy(_config(WRAPPER)), "quantization_config": {"quant_method": "fp8"}}
    with pytest.raises(InputError, match="quantized"):
        rank_weights(config, Parallel(tp=1, vllm_version=RELEASE), max_num_batched_tokens=8192)
