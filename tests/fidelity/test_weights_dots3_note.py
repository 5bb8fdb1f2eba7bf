"""Dots3-Note's weights (``Dots3NoteForCausalLM``, vLLM 0.33.0: ``vllm/models/dots3_note``; dryboot's
``model_executor/models/dots3_note.py``) against vLLM's own figures: parameter, buffer and allocated
bytes of each pipeline stage's rank 0. Needs no vLLM.

Recorded in the 0.33.0 boot environment with ``RECORD_WEIGHTS_WORKSPACE=1`` by ``record_weights.py``
(``RECORD_WEIGHTS_CONFIGS``: a directory of ``<name>/config.json`` with the ``added_tokens.json``
naming the image padding token, which the model class reads) at TP 1 / 2 / 4 / 8, EP at TP 2 / 8
and TP 2 x PP 3: ``recorded-0.33.0-dots3-note-configs.json`` over the KV tests' stand-ins
(``data/dots3-note/configs``: no published config.json of Dots3-Note was found) and
``recorded-0.33.0-dots3-note-variants.json`` over the weights' own (``data/dots3-note/weights-configs``):
``note-headwise`` (headwise gates on both layer kinds, the ``noaux_tc`` router's float32 bias, a
tied head), ``note-ropes`` (the sliding layers' own rope width and theta, a NeoX indexer rope, a
YaRN rope the full layers force to ``default``: three rotary tables), ``note-sched`` (an
``index_topk_pattern`` leaving the last full layer without indexer, MoE every other layer from
layer 0, six experts, float16), ``note-towers`` (``note`` with placeholder ``vision_config`` /
``audio_config`` sections: under ``--language-model-only`` the class builds neither tower and the
language model is sized; otherwise refused by name). The tiny config's TP 1 row is in ``recorded-0.33.0-sweep.json``.
A case vLLM builds matches or is refused by name (a pipeline stage whose full layers have no
indexer, the towers); a case vLLM refuses is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from weights_records import int_flag, stage_parallel

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, pp_layers, rank_weights

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
NOTE = HERE / "data" / "dots3-note"
TINY = HERE / "data" / "architectures" / "Dots3NoteForCausalLM.json"
VERSION = "0.33.0"
#: record file -> the directory of its configs
FILES = {
    f"recorded-{VERSION}-dots3-note-configs.json": NOTE / "configs",
    f"recorded-{VERSION}-dots3-note-variants.json": NOTE / "weights-configs",
}
DOCS = {name: json.loads((DATA / name).read_text()) for name in FILES}
RECORDED = {(name, cid): row for name, doc in DOCS.items() for cid, row in doc["cases"].items()}
#: cases vLLM builds that dryboot refuses by name: the last stage holds one full layer without
#: indexer (``index_topk_pattern``), whose top-k buffer only the attention impl keeps; the towers
#: (``note-towers`` without ``--language-model-only``: vLLM builds them from the placeholder sections)
REFUSED = {
    (f"recorded-{VERSION}-dots3-note-variants.json", "note-sched --tensor-parallel-size 2 --pipeline-parallel-size 3"),
    *((name, cid) for (name, cid) in RECORDED if cid.startswith("note-towers ") and "--language-model-only" not in cid),
}


def _config(name: str, row: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((FILES[name] / f"{row['config']}.json").read_text())
    return config


def _rank(config: dict[str, Any], argv: list[str], stage: int, mnbt: int = 8192, **kw: Any) -> Any:
    par = stage_parallel(argv, stage, kw.pop("version", VERSION), **kw)
    return rank_weights(config, par, max_num_batched_tokens=mnbt, language_model_only="--language-model-only" in argv)


def test_recorded() -> None:
    assert {doc["vllm"] for doc in DOCS.values()} == {VERSION}
    counts = {name: (len(doc["cases"]), sum(1 for r in doc["cases"].values() if r["ok"])) for name, doc in DOCS.items()}
    # 6 stand-ins x 7 flag sets (note-swa4's 4 sliding heads at TP 8: vLLM's assertion); 3 variants x 7,
    # note-towers x 9 (its two --language-model-only sets too)
    assert list(counts.values()) == [(42, 40), (30, 30)]
    assert len(REFUSED) == 8
    sweep = json.loads((DATA / f"recorded-{VERSION}-sweep.json").read_text())["cases"]
    row = sweep["arch--Dots3NoteForCausalLM --tensor-parallel-size 1"]
    # the tiny config is the KV tests' ``note``
    assert json.loads(TINY.read_text()) == json.loads((NOTE / "configs" / "note.json").read_text())
    note = DOCS[f"recorded-{VERSION}-dots3-note-configs.json"]["cases"]["note --tensor-parallel-size 1"]
    keys = ("param_bytes", "buffer_bytes", "allocated_bytes")
    assert [row[k] for k in keys] == [note[k] for k in keys]


def _has_full(config: dict[str, Any], argv: list[str], stage: int) -> bool:
    """Whether pipeline stage ``stage`` builds a full (sparse MLA) layer, which holds the top-k indices."""
    par = Parallel(pp=int_flag(argv, "--pipeline-parallel-size"), pp_rank=stage)
    return any(config["layer_types"][li] != "sliding_attention" for li in pp_layers(config["num_hidden_layers"], par))


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    row: dict[str, Any] = RECORDED[(name, cid)]
    config = _config(name, row)
    argv = row["argv"]
    if not row["ok"] or (name, cid) in REFUSED:
        with pytest.raises(InputError):
            for stage in range(int_flag(argv, "--pipeline-parallel-size")):
                _rank(config, argv, stage)
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(int_flag(argv, "--pipeline-parallel-size")):
        w = _rank(config, argv, stage, row["max_num_batched_tokens"])
        # the top-k indices: a buffer to dryboot (as DeepSeek-V3.2's), a plain attribute to vLLM
        held = 4 * row["max_num_batched_tokens"] * config["index_topk"] if _has_full(config, argv, stage) else 0
        got.append([w.param_bytes, w.buffer_bytes - held, w.allocated_bytes])
    assert got == stages


def test_indexerless_stage_refused_by_name() -> None:
    name = f"recorded-{VERSION}-dots3-note-variants.json"
    config = _config(name, {"config": "note-sched"})
    argv = ["--tensor-parallel-size", "2", "--pipeline-parallel-size", "3"]
    _rank(config, argv, 1)  # the stage of layers 1 and 2: layer 1's indexer holds the buffer
    with pytest.raises(InputError, match="no indexer"):
        _rank(config, argv, 2)


def _tiny(**changes: Any) -> dict[str, Any]:
    return {**json.loads(TINY.read_text()), **changes}


@pytest.mark.parametrize(
    ("config", "kw", "words"),
    [
        (_tiny(vision_config={"embed_dim": 64}), {}, "vision and audio towers"),
        (_tiny(audio_config={"d_model": 64}), {}, "vision and audio towers"),
        (_tiny(quantization_config={"quant_method": "fp8"}), {}, "quantized"),
        (_tiny(), {"version": "0.32.0"}, "0.32.0 are not modelled"),
        (_tiny(n_shared_experts=0), {}, "without shared experts"),
        (_tiny(q_lora_rank=None), {}, "need a q LoRA"),
        (_tiny(swa_q_lora_rank=None), {}, "sliding layers without a q LoRA"),
        (_tiny(layer_types=["sliding_attention"] * 3), {}, "one attention type per layer"),
        (_tiny(), {"dp": 2}, "sequence-parallel MoE"),
    ],
)
def test_refused_by_name(config: dict[str, Any], kw: dict[str, Any], words: str) -> None:
    argv = ["--tensor-parallel-size", "2", *(["--enable-expert-parallel"] if "dp" in kw else [])]
    with pytest.raises(InputError, match=words):
        _rank(config, argv, 0, **kw)


def test_needs_no_gpu() -> None:
    """Nothing of the model depends on the GPU (no sinks): sized without one."""
    row = DOCS[f"recorded-{VERSION}-dots3-note-configs.json"]["cases"]["note --tensor-parallel-size 1"]
    w = _rank(_tiny(), ["--tensor-parallel-size", "1"], 0)
    assert w.param_bytes == row["param_bytes"]
