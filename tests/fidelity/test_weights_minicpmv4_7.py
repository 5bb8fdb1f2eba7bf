"""MiniCPM-V 4.7's weights (``minicpmv4_7.py``, vLLM 0.32+): MiniCPM-V 4.6's class with
``_drop_vision_last_layer`` always ``False``. Its tiny config says ``drop_vision_last_layer: true``
(a field ``MiniCPMV4_7Config`` still accepts): vLLM 0.32.0 / 0.33.0 keep the layer (the sweeps'
records, ``recorded-<release>-sweep.json``), where 4.6's class reading the same config drops it.
Needs no vLLM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of model_executor/models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

HERE = Path(__file__).resolve().parent
TINY = HERE / "data" / "architectures" / "MiniCPMV4_7ForConditionalGeneration.json"
CASE = "arch--MiniCPMV4_7ForConditionalGeneration --tensor-parallel-size 1"


def _config() -> dict[str, Any]:
    config: dict[str, Any] = json.loads(TINY.read_text())
    return config


def _as_4_6(config: dict[str, Any]) -> dict[str, Any]:
    vision = {**config["vision_config"], "model_type": "minicpmv4_6_vision"}
    return {
        **config,
        "architectures": ["MiniCPMV4_6ForConditionalGeneration"],
        "model_type": "minicpmv4_6",
        "vision_config": vision,
    }


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_every_vision_layer_is_kept(version: str) -> None:
    config = _config()
    assert config["drop_vision_last_layer"] is True
    row = json.loads((HERE / "data" / "weights" / f"recorded-{version}-sweep.json").read_text())["cases"][CASE]
    par = Parallel(tp=1, vllm_version=version)
    got = rank_weights(config, par, max_num_batched_tokens=8192)
    assert [got.param_bytes, got.allocated_bytes] == [row["param_bytes"], row["allocated_bytes"]]
    # 4.6's class on the same config drops the last of the two vision layers
    dropped = rank_weights(_as_4_6(config), par, max_num_batched_tokens=8192)
    assert dropped.param_bytes < got.param_bytes


@pytest.mark.parametrize("version", ["0.28.0", "0.31.0"])
def test_refused_where_the_registry_lacks_it(version: str) -> None:
    with pytest.raises(InputError, match=r"MiniCPMV4_7ForConditionalGeneration|minicpmv4_7"):
        rank_weights(_config(), Parallel(tp=1, vllm_version=version), max_num_batched_tokens=8192)


#: the tiny configs of MiniCPM-V 4.6 and 4.7 with a Qwen3.5-MoE text config (``qwen3_5_moe_text``,
#: as MiniCPM-V-4.7-35B-A3B's): ``RECORD_WEIGHTS_OVERLAY`` (kept in each record's ``overlay``)
#: ``RECORD_WEIGHTS_OUT=data/weights/recorded-<release>-minicpmv-moe-text.json record_weights.py
#: --tiny MiniCPMV4_6ForConditionalGeneration MiniCPMV4_7ForConditionalGeneration`` at TP 1 and 2
MOE_TEXT = {
    v: json.loads((HERE / "data" / "weights" / f"recorded-{v}-minicpmv-moe-text.json").read_text())
    for v in ("0.32.0", "0.33.0")
}
MOE_CASES = sorted((v, cid) for v, doc in MOE_TEXT.items() for cid in doc["cases"])


def test_moe_text_records_are_the_release() -> None:
    for v, doc in MOE_TEXT.items():
        assert doc["vllm"] == v
        assert {row["config"] for row in doc["cases"].values()} == {
            "arch--MiniCPMV4_6ForConditionalGeneration",
            "arch--MiniCPMV4_7ForConditionalGeneration",
        }


@pytest.mark.parametrize(("version", "cid"), MOE_CASES)
def test_moe_text_config_builds_qwen3_5_moe_layers(version: str, cid: str) -> None:
    """qwen3_5.py's decoder layer takes a sparse MoE block for a ``qwen3_5_moe_text`` config, inside
    the wrapper's ``Qwen3_5ForCausalLM``: vLLM's figures, not the dense model's."""
    doc = MOE_TEXT[version]
    row = doc["cases"][cid]
    arch = row["config"][len("arch--") :]
    tiny = HERE / "data" / "architectures" / f"{arch}.json"
    config = {**json.loads(tiny.read_text()), **doc["overlay"][arch]}
    assert config["text_config"]["model_type"] == "qwen3_5_moe_text"
    argv = row["argv"]
    assert row["ok"], row.get("error")
    tp = int(argv[argv.index("--tensor-parallel-size") + 1])
    pp = int(argv[argv.index("--pipeline-parallel-size") + 1]) if "--pipeline-parallel-size" in argv else 1
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for rank in range(pp):
        par = Parallel(
            tp=tp, pp=pp, pp_rank=rank, expert_parallel="--enable-expert-parallel" in argv, vllm_version=version
        )
        w = rank_weights(config, par, language_model_only="--language-model-only" in argv, max_num_batched_tokens=8192)
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages
