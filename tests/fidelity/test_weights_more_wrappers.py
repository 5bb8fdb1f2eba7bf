"""Step3-VL, Gemma-4 Unified, Cosmos3, Cosmos3-Edge and DiffusionGemma (issue 33): dryboot's
per-rank weights against what each vLLM release that has their classes allocates on the meta
device, byte for byte, and what it cannot size refused by name.

``data/weights/recorded-<release>-more-wrappers.json`` are vLLM 0.27.1, 0.28.0, 0.30.0 and
0.33.0's own figures for the tiny configs of these architectures and of MiniMax-M3 (TP 1/2/4/8,
expert parallelism, three pipeline stages, ``--language-model-only``), recorded in each release's
boot environment with::

    RECORD_WEIGHTS_OUT=tests/fidelity/data/weights/recorded-<release>-more-wrappers.json \\
        $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py --tiny Cosmos3ForConditionalGeneration \\
        Cosmos3EdgeForConditionalGeneration Gemma4UnifiedForConditionalGeneration \\
        DiffusionGemmaForBlockDiffusion Step3VLForConditionalGeneration MiniMaxM3SparseForCausalLM \\
        MiniMaxM3SparseForConditionalGeneration

(what the recorder fakes: its docstring). A case vLLM refuses must be refused.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_weights import DEEPSTACK_WRAPPERS, _parallel, deepstack_bytes

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/ with the walk)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, modelled_architectures, rank_weights

HERE = Path(__file__).resolve().parent
ARCHS = HERE / "data" / "architectures"
RELEASES = ("0.27.1", "0.28.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
RECORDED = {
    v: json.loads((HERE / "data" / "weights" / f"recorded-{v}-more-wrappers.json").read_text()) for v in RELEASES
}
#: configs derived from the tiny ones to tell two readings apart (``variant-configs/README.md``),
#: recorded alike (``recorded-<release>.json`` there)
VARIANTS = HERE / "data" / "weights" / "variant-configs"
for _v in RELEASES:
    RECORDED[_v]["cases"].update(json.loads((VARIANTS / f"recorded-{_v}.json").read_text())["cases"])
CASES = sorted((v, cid) for v, doc in RECORDED.items() for cid in doc["cases"])
WRAPPERS = (
    "Step3VLForConditionalGeneration",
    "Gemma4UnifiedForConditionalGeneration",
    "Cosmos3ForConditionalGeneration",
    "Cosmos3EdgeForConditionalGeneration",
    "DiffusionGemmaForBlockDiffusion",
    "MiniMaxM3SparseForCausalLM",
    "MiniMaxM3SparseForConditionalGeneration",
)


def _config(arch: str) -> dict[str, Any]:
    path = ARCHS / f"{arch}.json"
    return json.loads((path if path.exists() else VARIANTS / f"{arch}.json").read_text())


def _weights(arch: str, argv: list[str], release: str, stage: int = 0) -> Any:
    return rank_weights(
        _config(arch),
        replace(_parallel(argv, stage), vllm_version=release),
        language_model_only="--language-model-only" in argv,
        max_num_batched_tokens=8192,
    )


def test_records_are_each_release() -> None:
    for v, doc in RECORDED.items():
        assert doc["vllm"] == v
        archs = {row["config"][len("arch--") :] for row in doc["cases"].values()}
        assert set(WRAPPERS) <= archs
    assert set(WRAPPERS) <= modelled_architectures()


@pytest.mark.parametrize(("release", "cid"), CASES)
def test_matches_vllm(release: str, cid: str) -> None:
    """[param, buffer, allocated] bytes of rank 0 of every stage, or vLLM's refusal refused."""
    row = RECORDED[release]["cases"][cid]
    arch, argv = row["config"][len("arch--") :], row["argv"]
    if not row["ok"]:
        with pytest.raises(InputError):
            _weights(arch, argv, release)
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(len(stages)):
        w = _weights(arch, argv, release, stage)
        listed = deepstack_bytes(_config(arch), row, release, stage) if arch in DEEPSTACK_WRAPPERS else 0
        got.append([w.param_bytes, w.buffer_bytes - listed, w.allocated_bytes])
    assert got == stages


def test_gemma4_unified_keeps_its_embedder_without_the_tower() -> None:
    """vLLM builds the encoder-free embedder outside ``_mark_tower_model``: the recorded
    ``--language-model-only`` figures equal the full model's."""
    doc = RECORDED["0.28.0"]["cases"]
    arch = "Gemma4UnifiedForConditionalGeneration"
    full = doc[f"arch--{arch} --tensor-parallel-size 2"]
    lm_only = doc[f"arch--{arch} --tensor-parallel-size 2 --language-model-only"]
    assert full["param_bytes"] == lm_only["param_bytes"]
    w = rank_weights(_config(arch), Parallel(tp=2), limit_mm_per_prompt={"image": 0})
    assert w.param_bytes == full["param_bytes"]


@pytest.mark.parametrize(
    ("arch", "edit", "match"),
    [
        ("Gemma4UnifiedForConditionalGeneration", {"audio_config": {"hidden_size": 8}}, "audio embedder"),
        ("Gemma4UnifiedForConditionalGeneration", {"vision_config": None}, "vision_config"),
        ("DiffusionGemmaForBlockDiffusion", {"vision_config": None}, "without a vision_config"),
        ("DiffusionGemmaForBlockDiffusion", {"quantization_config": {"quant_method": "fp8"}}, "quantized"),
        ("Cosmos3EdgeForConditionalGeneration", {"vision_config": {"hidden_size": 64}}, "defaults it differently"),
        ("Step3VLForConditionalGeneration", {"quantization_config": {"quant_method": "fp8"}}, "quantized"),
    ],
)
def test_unmodelled_refused_by_name(arch: str, edit: dict[str, Any], match: str) -> None:
    config = {**copy.deepcopy(_config(arch)), **edit}
    with pytest.raises(InputError, match=match):
        rank_weights(config, Parallel(tp=1))


def test_minimax_m3_mxfp8_refused_by_name() -> None:
    """MiniMax-M3's published MXFP8 checkpoint (its config as published, in the newest-release
    corpus): the quantized layout's module is named."""
    config = json.loads(
        (HERE / "data" / "newest" / "configs" / "MiniMaxAI--MiniMax-M3-MXFP8" / "config.json").read_text()
    )
    with pytest.raises(InputError, match=r"MXFP8 weights are not modelled: vLLM's layers/quantization/modelopt\.py"):
        rank_weights(config, Parallel(tp=8), max_num_batched_tokens=8192)


def test_minimax_m3_nvfp4_refused_by_name() -> None:
    """nvidia/MiniMax-M3-NVFP4 as published (ModelOpt MIXED_PRECISION): the module is named."""
    config = json.loads(
        (HERE.parent / "data" / "configs" / "public" / "nvidia--MiniMax-M3-NVFP4" / "config.json").read_text()
    )
    with pytest.raises(InputError, match=r"ModelOpt MIXED_PRECISION weights are not modelled: .*modelopt\.py"):
        rank_weights(config, Parallel(tp=8), max_num_batched_tokens=8192)


def test_minimax_m3_needs_the_batched_tokens() -> None:
    with pytest.raises(InputError, match="top-k index buffer"):
        rank_weights(_config("MiniMaxM3SparseForCausalLM"), Parallel(tp=1))


def test_diffusion_gemma_untied_head_refused() -> None:
    config = copy.deepcopy(_config("DiffusionGemmaForBlockDiffusion"))
    config["tie_word_embeddings"] = False
    config["text_config"]["tie_word_embeddings"] = False
    with pytest.raises(InputError, match="untied DiffusionGemma head"):
        rank_weights(config, Parallel(tp=1))


def test_cosmos3_edge_unchecked_release_refused() -> None:
    with pytest.raises(InputError, match=r"projector widths on vLLM 0\.29\.0 are not checked"):
        rank_weights(_config("Cosmos3EdgeForConditionalGeneration"), Parallel(tp=1, vllm_version="0.29.0"))


def test_cosmos3_edge_projector_reading_per_release() -> None:
    """0.27.1-0.30.0 read the merger's widths from ``projector_config``, 0.33.0 from the vision
    and text widths and ``projector_hidden_size``: a config where they differ
    (``Cosmos3EdgeProjectorWidths``) is recorded apart on 0.30.0 and 0.33.0 (checked above)."""
    cid = "arch--Cosmos3EdgeProjectorWidths --tensor-parallel-size 1"
    assert RECORDED["0.30.0"]["cases"][cid]["param_bytes"] != RECORDED["0.33.0"]["cases"][cid]["param_bytes"]
