"""The timm / audio wrappers (issue 33 item 2): DeepSeek-VL2, OpenVLA, Gemma-3n multimodal, FunASR,
MiDashengLM and FireRedASR2, dryboot's per-rank weights against what vLLM allocates on the meta device.

MiDashengLM, FunASR, DeepSeek-VL2 and OpenVLA are sized whole (``models/midashenglm.py``: the Dasheng
encoder and projector; ``models/funasr.py``: the SANM encoder and adaptor, built outside
``_mark_tower_model`` so kept under ``--language-model-only``; ``models/timm_towers.py``: timm's
SigLIP so400m and the ``MlpProjector``), OpenVLA (the same module: timm's DINOv2 and SigLIP 224,
the ``PrismaticProjector``), FireRedASR2 (``models/fireredasr2.py``: the Conformer encoder and
adapter, replicated, dropped under ``--language-model-only``). Gemma-3n's towers are sized (``models/timm_towers.py``:
transformers' ``Gemma3nAudioEncoder`` and timm's ``mobilenetv5_300m_enc``, replicated, and the
``embed_audio`` / ``embed_vision`` embedders, split over TP; another timm model refused by name);
each modality limited to 0 (recorded at TP 1/2/4/8 on both releases) drops its tower.

``data/weights/recorded-<release>-refused-towers.json`` are that release's own figures for their
tiny configs, recorded in the release's ``-mm`` boot environment (with timm)::

    RECORD_WEIGHTS_OUT=tests/fidelity/data/weights/recorded-0.28.0-refused-towers.json \\
        ~/.cache/dryboot/boot-env/0.28.0-mm/bin/python tests/fidelity/record_weights.py --tiny \\
        DeepseekVLV2ForCausalLM OpenVLAForActionPrediction Gemma3nForConditionalGeneration \\
        FunASRForConditionalGeneration MiDashengLMModel FireRedASR2ForConditionalGeneration

(0.33.0: every flag set of MiDashengLM and FunASR, DeepSeek-VL2's TP 1/2/4/8 and pipeline stages,
OpenVLA's TP 1 / 2 and pipeline stages, TP 1 and ``--language-model-only`` of Gemma-3n: the shared
machine's time.)

(what the recorder fakes: its docstring). A case vLLM refuses must be refused.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_weights import _attr_bytes, _parallel, _serve

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/ with the walk)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights
from dryboot.vllm.model_executor.models import fireredasr2

HERE = Path(__file__).resolve().parent
ARCHS = HERE / "data" / "architectures"
DATA = HERE / "data" / "weights"
RECORDED = {
    p.name.split("-")[1]: json.loads(p.read_text()) for p in sorted(DATA.glob("recorded-*-refused-towers.json"))
}
CASES = sorted((v, cid) for v, doc in RECORDED.items() for cid in doc["cases"])
SIZED = (
    "MiDashengLMModel",
    "FunASRForConditionalGeneration",
    "DeepseekVLV2ForCausalLM",
    "OpenVLAForActionPrediction",
    "Gemma3nForConditionalGeneration",
    "FireRedASR2ForConditionalGeneration",
)


def _pe_attribute(config: dict[str, Any], argv: list[str], release: str) -> int:
    """FireRedASR2's Conformer ``pe`` table: a plain tensor attribute before 0.29.0 (in the
    recorder's allocated bytes, not its buffer bytes), a buffer from 0.29.0; dryboot counts it as
    a buffer on every release."""
    if config["architectures"][0] != "FireRedASR2ForConditionalGeneration" or release >= "0.29.0":
        return 0
    if "--language-model-only" in argv:
        return 0
    return fireredasr2.pe_bytes(config["audio_encoder_conf"], 2)


def _config(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((ARCHS / f"{name[len('arch--') :]}.json").read_text())
    return config


def _weights(config: dict[str, Any], argv: list[str], release: str, stage: int = 0) -> Any:
    return rank_weights(config, replace(_parallel(argv, stage), vllm_version=release), **_serve({"argv": argv}))


def test_records_cover_the_wrappers() -> None:
    assert "0.28.0" in RECORDED
    for v, doc in RECORDED.items():
        assert doc["vllm"] == v
        assert {row["config"][len("arch--") :] for row in doc["cases"].values()} == set(SIZED)


@pytest.mark.parametrize(("release", "cid"), CASES)
def test_matches_vllm(release: str, cid: str) -> None:
    """[param, buffer, allocated] bytes of rank 0 of every stage, towers dropped or sized; vLLM's
    refusals refused."""
    row = RECORDED[release]["cases"][cid]
    config, argv = _config(row["config"]), row["argv"]
    if not row["ok"]:
        with pytest.raises(InputError):
            _weights(config, argv, release)
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(len(stages)):
        w = _weights(config, argv, release, stage)
        buffers = w.buffer_bytes - _attr_bytes(config, row) - _pe_attribute(config, argv, release)
        got.append([w.param_bytes, buffers, w.allocated_bytes])
    assert got == stages


def test_deepseek_vl2_projectors_and_text_refusals() -> None:
    """The ``linear`` projector sizes ``[n_embed, input_dim]``; another type, token pooling and an
    absent ``kv_lora_rank`` are refused by name."""
    config = _config("arch--DeepseekVLV2ForCausalLM")
    par = Parallel(tp=1, vllm_version="0.28.0")
    mlp = rank_weights(config, par).param_bytes
    proj = config["projector_config"]
    lin = rank_weights({**config, "projector_config": {**proj, "projector_type": "linear"}}, par).param_bytes
    assert mlp - lin == 2 * ((4608 * 1024 + 1024 + 1024 * 1024 + 1024) - (1024 * 1152 + 1024))
    for edit, match in (
        ({"projector_config": {**proj, "projector_type": "conv"}}, "conv is not modelled"),
        ({"projector_config": {**proj, "token_pooling": True}}, "token_pooling"),
        (
            {"language_config": {k: v for k, v in config["language_config"].items() if k != "kv_lora_rank"}},
            "kv_lora_rank",
        ),
    ):
        with pytest.raises(InputError, match=match):
            rank_weights({**config, **edit}, par)


def test_openvla_backbone_refusals_and_unfused() -> None:
    """vLLM refuses any other backbone, image size or activation; the unfused backbone (DINOv2
    alone) takes the two-layer projector."""
    config = _config("arch--OpenVLAForActionPrediction")
    par = Parallel(tp=2, vllm_version="0.28.0")
    for key, value in (("timm_model_ids", ["a", "b"]), ("image_sizes", [336, 336])):
        with pytest.raises(InputError, match=key):
            rank_weights({**config, key: value}, par)
    fused = rank_weights(config, par).param_bytes
    unfused = rank_weights({**config, "use_fused_vision_backbone": False}, par).param_bytes
    assert fused > unfused > rank_weights(config, par, language_model_only=True).param_bytes


def test_funasr_keeps_its_encoder_without_the_tower_flags() -> None:
    """``funasr.py`` builds its encoder outside ``_mark_tower_model``: the same bytes under
    ``--language-model-only`` and audio limited to 0."""
    config = _config("arch--FunASRForConditionalGeneration")
    par = Parallel(tp=2, vllm_version="0.28.0")
    full = rank_weights(config, par)
    assert rank_weights(config, par, language_model_only=True).param_bytes == full.param_bytes
    assert rank_weights(config, par, limit_mm_per_prompt={"audio": 0}).param_bytes == full.param_bytes


def test_gemma3n_towers_dropped_by_modality() -> None:
    """Each tower of Gemma-3n is dropped by its own modality's limit and sized alone (the audio
    encoder and ``embed_audio``; timm's MobileNet-V5 and ``embed_vision``); both limited to 0 size
    the language model as ``--language-model-only`` does; another timm model or ``model_args`` is
    refused by name."""
    config = _config("arch--Gemma3nForConditionalGeneration")
    par = Parallel(tp=2, vllm_version="0.28.0")
    audio = rank_weights(config, par, limit_mm_per_prompt={"image": 0}, max_num_batched_tokens=8192)
    assert audio.by_kind["audio"] == 2 * (681348640 + (64 * 1536 + 2 * 1536 + 1024 * 768))
    vision = rank_weights(config, par, limit_mm_per_prompt={"audio": 0}, max_num_batched_tokens=8192)
    assert vision.by_kind["vision"] == 2 * (294126912 + (64 * 2048 + 2 * 2048 + 1024 * 1024))
    both = rank_weights(config, par, limit_mm_per_prompt={"image": 0, "audio": 0}, max_num_batched_tokens=8192)
    lm = rank_weights(config, par, language_model_only=True, max_num_batched_tokens=8192)
    assert both.param_bytes == lm.param_bytes and both.buffer_bytes == lm.buffer_bytes
    with pytest.raises(InputError, match="max_num_batched_tokens"):
        rank_weights(config, par, language_model_only=True)
    vc = config["vision_config"]
    for edit, match in (
        ({"architecture": "mobilenetv5_base"}, "mobilenetv5_base"),
        ({"model_args": {"a": 1}}, "model_args"),
    ):
        with pytest.raises(InputError, match=match):
            rank_weights({**config, "vision_config": {**vc, **edit}}, par, max_num_batched_tokens=8192)
