"""Kimi-K3's weights (``KimiK3ForConditionalGeneration``, vLLM 0.27.1-0.33.0: ``models/kimi_k3.py`` over
``models/kimi_linear.py``'s Kimi-K3 options; its MoonViT-3D tower and projector) against vLLM's own
figures: parameter, buffer and allocated bytes of each pipeline stage's rank 0. Needs no vLLM.

Recorded in each release's boot environment (``record_weights.py``, ``RECORD_WEIGHTS_OUT``; every
flag set also with ``--language-model-only``, ``LANGUAGE_MODEL_EVERYWHERE``). vLLM 0.30+ skip the
tower's cast to the model dtype on the meta device (``is_meta_module``: the float32 temporal
table stays), so their cases with the tower are recorded with ``RECORD_WEIGHTS_GPU_CAST=1`` (the
branch a GPU takes, onto the stand-in's meta device; each such row says ``"gpu_cast": true``);
0.27.1-0.29.0 cast unconditionally:

- ``recorded-0.33.0-kimi-k3.json``: ``--tiny KimiK3ForConditionalGeneration`` (TP 1 / 2 / 4 / 8,
  expert parallelism at TP 2 and 8, TP 2 x PP 3); the same in each earlier release's environment,
  ``recorded-<release>-kimi-k3.json`` (:data:`EARLIER`; 0.30.0-0.33.0's TP 1 rows also in the sweep);
- ``recorded-<release>-kimi-k3-tower.json`` (every release): ``RECORD_WEIGHTS_GPU_CAST=1
  RECORD_WEIGHTS_CONFIGS=tests/fidelity/data/weights/kimi-k3-tower``: two stand-ins (the tiny
  config with a normalizing processor config, whose device-side input normalization 0.32+ build;
  a variant with LayerNorms, biases, Kimi-K2.5's projector, 4 heads, an identity processor config);
- ``kimi-k3/recorded-0.33.0.json``: ``RECORD_WEIGHTS_GPU_CAST=1
  RECORD_WEIGHTS_CONFIGS=tests/fidelity/data/weights/kimi-k3 RECORD_WEIGHTS_FLAGS="--tensor-parallel-size 8"``:
  the published config (compressed-tensors MXFP4 experts, as built: after loading in
  ``test_weights_kimik3_mxfp4.py``) and ``moonshotai--Kimi-K3-bf16``, the same config with its
  ``quantization_config`` removed (a stand-in, said so in its SOURCE), on the stand-in H200
  (SM 9.0: the KDA layers' native fused decode keeps its float32 copies);
- ``kimi-k3/recorded-0.33.0-sm8.0.json``: the stand-in at TP 8 with ``--language-model-only`` and
  ``RECORD_WEIGHTS_GPU=8.0`` (an A100: no native decode). (On 10.0 the oracle's GPU stand-in
  fails before the model is built: not recorded; SM 10.x / 12.x take the native decode as 9.0.)

0.33 builds the tower on the first pipeline stage alone, 0.27.1-0.32.0 on every stage."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from weights_records import int_flag

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.loader import image_norm_channels, model_weights
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
K3 = DATA / "kimi-k3"
TOWERS = DATA / "kimi-k3-tower"
ARCH = "KimiK3ForConditionalGeneration"
TINY = HERE / "data" / "architectures" / f"{ARCH}.json"
#: the releases before 0.33.0 whose tiny-config cases are recorded (``recorded-<release>-kimi-k3.json``)
EARLIER = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0")
RELEASES = (*EARLIER, "0.33.0")
FILES = {
    **{f"recorded-{v}-kimi-k3-tower.json": (9, 0) for v in RELEASES},
    **{f"recorded-{v}-kimi-k3.json": (9, 0) for v in EARLIER},
    "recorded-0.33.0-kimi-k3.json": (9, 0),
    "kimi-k3/recorded-0.33.0.json": (9, 0),
    "kimi-k3/recorded-0.33.0-sm8.0.json": (8, 0),
}
DOCS = {name: json.loads((DATA / name).read_text()) for name in FILES}
RECORDED = {(name, cid): row for name, doc in DOCS.items() for cid, row in doc["cases"].items()}


def _directory(row: dict[str, Any]) -> Path | None:
    """The recorded config's directory (its processor config beside it), ``None`` for the tiny one."""
    if row["config"].startswith("arch--"):
        return None
    return next(d / row["config"] for d in (K3, TOWERS) if (d / row["config"]).is_dir())


def _config(row: dict[str, Any]) -> dict[str, Any]:
    d = _directory(row)
    config: dict[str, Any] = json.loads((TINY if d is None else d / "config.json").read_text())
    return config


def test_recorded() -> None:
    assert [doc["vllm"] for doc in DOCS.values()] == [*RELEASES, *EARLIER, "0.33.0", "0.33.0", "0.33.0"]
    assert {name: doc.get("gpu_capability", [9, 0]) for name, doc in DOCS.items()} == {
        name: list(cap) for name, cap in FILES.items()
    }
    assert all(row["ok"] for row in RECORDED.values())  # vLLM builds every case, the MXFP4 checkpoint too
    assert len(RECORDED) == 14 * len(EARLIER) + 14 + 8 + 1 + 28 * len(RELEASES)
    # 0.30+ skip the tower's cast on the meta device: their tower cases take the GPU's branch
    for (name, cid), row in RECORDED.items():
        release = DOCS[name]["vllm"]
        if release >= "0.30.0" and "--language-model-only" not in cid and not name.endswith("sm8.0.json"):
            assert row.get("gpu_cast") is True, (name, cid)
    for v in ("0.30.0", "0.31.0", "0.32.0", "0.33.0"):
        # the sweep's TP 1 rows are the same builds
        sweep = json.loads((DATA / f"recorded-{v}-sweep.json").read_text())["cases"]
        tiny = DOCS[f"recorded-{v}-kimi-k3.json"]["cases"]
        for cid in (
            f"arch--{ARCH} --tensor-parallel-size 1",
            f"arch--{ARCH} --tensor-parallel-size 1 --language-model-only",
        ):
            assert [sweep[cid][k] for k in ("param_bytes", "buffer_bytes", "allocated_bytes")] == [
                tiny[cid][k] for k in ("param_bytes", "buffer_bytes", "allocated_bytes")
            ]


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    """Every stage's bytes as vLLM builds them on a GPU (the published checkpoint's MXFP4 experts:
    as built, plus what the post-load step adds)."""
    row: dict[str, Any] = RECORDED[(name, cid)]
    config, argv = _config(row), row["argv"]
    tp, pp = int_flag(argv, "--tensor-parallel-size"), int_flag(argv, "--pipeline-parallel-size")
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    d = _directory(row)
    norm = 0 if d is None else image_norm_channels(d)
    for stage, want in enumerate(stages):
        par = Parallel(
            tp=tp,
            pp=pp,
            pp_rank=stage,
            expert_parallel="--enable-expert-parallel" in argv,
            capability=FILES[name],
            vllm_version=DOCS[name]["vllm"],
        )
        lmo = "--language-model-only" in argv
        if "quantization_config" in config.get("text_config", {}):
            # recorded as built, before the post-load step (on the stand-in H200: 132 SMs), which
            # leaves the MXFP4 experts' bytes as they are and gives Humming's experts (0.33.0 on SM
            # 9.0) their locks, 8 x 132 int32 (4,608 B in allocator blocks) per MoE layer (92):
            # checked after loading in test_weights_kimik3_mxfp4.py
            par = replace(par, sm_count=132)
            w = rank_weights(config, par, language_model_only=lmo, image_norm_channels=norm)
            assert w.allocated_bytes - want[2] == 92 * 4608
            continue
        w = rank_weights(config, par, language_model_only=lmo, image_norm_channels=norm)
        assert [w.param_bytes, w.buffer_bytes, w.allocated_bytes] == want


def test_input_norm_read_from_the_processor_config() -> None:
    """The normalizing stand-in's processor config gives three channels (bfloat16 ``[3]`` weight
    and bias on 0.32+, two 512-byte blocks); the identity one none."""
    assert image_norm_channels(TOWERS / "tiny-normalized") == 3
    assert image_norm_channels(TOWERS / "layernorm-biases-identity") == 0
    assert image_norm_channels(K3 / "moonshotai--Kimi-K3") == 0  # no processor config there
    tower = "tiny-normalized --tensor-parallel-size 1"
    a, b = (DOCS[f"recorded-{v}-kimi-k3-tower.json"]["cases"][tower] for v in ("0.31.0", "0.32.0"))
    assert (b["buffer_bytes"] - a["buffer_bytes"], b["allocated_bytes"] - a["allocated_bytes"]) == (12, 1024)
    # the loader reads it from the directory and says what the figure assumes
    report = model_weights(TOWERS / "tiny-normalized", vllm_version="0.32.0", compute_capability=(9, 0))
    (stage,) = report.stages
    assert [stage.param_bytes, stage.buffer_bytes, stage.allocated_bytes] == [
        b[k] for k in ("param_bytes", "buffer_bytes", "allocated_bytes")
    ]
    assert any("--mm-device-do-normalize" in n for n in stage.notes)


def test_published_tp8_language_model() -> None:
    """The published shapes in bfloat16 at TP 8 (language model; 93 layers, 896 experts of a
    3,584-wide latent): 704,943,977,984 B on a rank of an H200, 5,122,560 of them the 69 KDA
    layers' native-decode copies (``[3, 4, 1536]`` and ``[128]`` float32 each), absent on an A100."""
    config = json.loads((K3 / "moonshotai--Kimi-K3-bf16" / "config.json").read_text())
    h200 = rank_weights(config, Parallel(tp=8, capability=(9, 0), vllm_version="0.33.0"), language_model_only=True)
    a100 = rank_weights(config, Parallel(tp=8, capability=(8, 0), vllm_version="0.33.0"), language_model_only=True)
    assert h200.allocated_bytes == 704_943_977_984
    # with the MoonViT-3D tower and projector (27 blocks of 1,024, 12 heads replicated at TP 8)
    whole = rank_weights(config, Parallel(tp=8, capability=(9, 0), vllm_version="0.33.0"))
    assert whole.allocated_bytes - h200.allocated_bytes == 894_726_144
    assert h200.buffer_bytes - a100.buffer_bytes == 69 * (3 * 4 * 1536 + 128) * 4
    # the flags the copies assume are said (the walk does not see them)
    assert any("native-decode copies" in n for n in h200.notes)
    assert not any("native-decode copies" in n for n in a100.notes)


def _tiny(**change: Any) -> dict[str, Any]:
    config: dict[str, Any] = copy.deepcopy(json.loads(TINY.read_text()))
    config["text_config"].update(change)
    return config


@pytest.mark.parametrize(
    ("config", "par", "words"),
    [
        # the language model's own architecture with Kimi-K3's options, on another release
        (_tiny(), Parallel(tp=2, dp=2, expert_parallel=True, vllm_version="0.33.0"), "sequence parallelism"),
        (
            json.loads((K3 / "moonshotai--Kimi-K3-bf16" / "config.json").read_text()),
            Parallel(tp=8, vllm_version="0.33.0"),
            "the GPU is needed",
        ),
    ],
)
def test_refused_by_name(config: dict[str, Any], par: Parallel, words: str) -> None:
    with pytest.raises(InputError, match=words):
        rank_weights(config, par, language_model_only=True)
