"""Sarvam MoE's weights (``models/sarvam.py``: ``SarvamMoEForCausalLM``, ``bailing_moe.py``'s class)
against vLLM's own figures for the tiny config: parameter, buffer and allocated bytes of each
pipeline stage. Needs no vLLM.

``recorded-<release>-sarvam-moe.json``: recorded in each release's boot environment (0.28.0-0.30.0,
whose transformers knows ``sarvam_moe``) with::

    RECORD_WEIGHTS_OUT=/tmp/a.json $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py --tiny SarvamMoEForCausalLM

(TP 1/2/4/8, expert parallelism at TP 2 and 8, three pipeline stages at TP 2) and again with
``RECORD_WEIGHTS_OVERLAY`` into ``recorded-<release>-sarvam-moe-overlay.json`` (its ``overlay``:
RMSNorm QK-norms, a float32 router, a tied
head, a shared-expert width of its own, QKV biases, a half rotary dimension). vLLM 0.30.0's TP 1
figure is also in its sweep; 0.27.1's and 0.31.0-0.33.0's transformers do not know ``sarvam_moe``
(vLLM refuses the config, recorded on 0.27.1 too; so does dryboot)."""

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
from dryboot.vllm.model_executor.models.sarvam import PARTIAL_ROTARY_IGNORED

HERE = Path(__file__).resolve().parent
ARCH = "SarvamMoEForCausalLM"
#: the releases whose transformers knows ``sarvam_moe`` (vLLM serves it), each recorded
RELEASES = ("0.28.0", "0.29.0", "0.30.0")
FILES = tuple(f"recorded-{v}-sarvam-moe{part}.json" for v in RELEASES for part in ("", "-overlay"))
DOCS = {name: json.loads((HERE / "data" / "weights" / name).read_text()) for name in FILES}
RECORDED = {(name, cid): row for name, doc in DOCS.items() for cid, row in doc["cases"].items()}


def _tiny(**change: Any) -> dict[str, Any]:
    config: dict[str, Any] = copy.deepcopy(json.loads((HERE / "data" / "architectures" / f"{ARCH}.json").read_text()))
    config.update(change)
    return config


def test_recorded() -> None:
    assert [doc["vllm"] for doc in DOCS.values()] == [v for v in RELEASES for _ in range(2)]
    assert len(RECORDED) == 14 * len(RELEASES) and all(row["ok"] for row in RECORDED.values())


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    """Every stage's bytes as each release builds them."""
    row: dict[str, Any] = RECORDED[(name, cid)]
    overlay = DOCS[name].get("overlay", {}).get(ARCH, {})
    argv = row["argv"]
    tp, pp = int_flag(argv, "--tensor-parallel-size"), int_flag(argv, "--pipeline-parallel-size")
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(pp):
        par = Parallel(
            tp=tp,
            pp=pp,
            pp_rank=stage,
            vllm_version=DOCS[name]["vllm"],
            expert_parallel="--enable-expert-parallel" in argv,
        )
        w = rank_weights(_tiny(**overlay), par, max_num_batched_tokens=row["max_num_batched_tokens"])
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({k: v for k, v in _tiny().items() if k != "use_bias"}, "reads use_bias"),
        ({k: v for k, v in _tiny().items() if k != "embedding_dropout"}, "reads embedding_dropout"),
        (_tiny(use_bias=True), "use_bias"),
        (_tiny(router_dtype="bf16"), "bfloat16 router"),
        (_tiny(quantization_config={"quant_method": "fp8"}), "quantized"),
    ],
)
def test_refused_by_name(config: dict[str, Any], words: str) -> None:
    with pytest.raises(InputError, match=words):
        rank_weights(config, Parallel(vllm_version="0.28.0"), max_num_batched_tokens=8192)


def test_partial_rotary_factor_recorded_where_served() -> None:
    """The full rotary table under a ``partial_rotary_factor`` is recorded on every release that serves it."""
    assert PARTIAL_ROTARY_IGNORED == RELEASES


REFUSED_0271 = json.loads((HERE / "data" / "weights" / "recorded-0.27.1-sarvam-moe.json").read_text())


@pytest.mark.parametrize("cid", sorted(REFUSED_0271["cases"]))
def test_0271_refuses_the_config(cid: str) -> None:
    """vLLM 0.27.1 refuses every flag set (its transformers has no ``sarvam_moe``): so does dryboot."""
    row = REFUSED_0271["cases"][cid]
    assert REFUSED_0271["vllm"] == "0.27.1" and not row["ok"] and "sarvam_moe" in row["error"]
    with pytest.raises(InputError, match="sarvam_moe"):
        rank_weights(_tiny(), Parallel(tp=int_flag(row["argv"], "--tensor-parallel-size"), vllm_version="0.27.1"))


@pytest.mark.parametrize("version", ["0.27.1", "0.31.0", "0.33.0"])
def test_releases_without_the_config_class_refused(version: str) -> None:
    with pytest.raises(InputError, match="sarvam_moe"):
        rank_weights(_tiny(), Parallel(vllm_version=version), max_num_batched_tokens=8192)
