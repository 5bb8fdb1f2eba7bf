"""dryboot's weights against every logged weights figure of the budget corpus
(``tests/data/budget/calibration.json``): ``Model loading took X GiB`` (V1) or ``weights memory`` /
``model weights take`` (V0, the DEBUG profile line). A boot of a checkpoint dryboot models, served
from the config the corpus names, is reproduced to 0.01 GiB; every other boot is listed here with
why no figure is compared (never guessed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm.gpus import parse_gpu
from dryboot.vllm.model_executor.model_loader.loader import model_weights, serving_gpu
from dryboot.vllm.versions import VERSIONS

REPO = Path(__file__).resolve().parents[1]
LOGS: list[dict[str, Any]] = json.loads((REPO / "tests" / "data" / "budget" / "calibration.json").read_text())["logs"]
KEYS = ("model_loading_gib", "weights_memory_gib")
WITH_WEIGHTS = [e for e in LOGS if any(k in (e.get("logged") or {}) for k in KEYS)]

#: boots whose served checkpoint has no published config beside the log (nothing to compute)
NO_CONFIG = {
    "vllm-17327-qwen3-30b-a3b-w4a16-3090": "compressed-tensors W4A16 copy, config not published "
    "(and compressed-tensors is refused by name)",
    "club3090-1047-qwen38-27b-a6000-hybrid-block": "an NVFP4 checkpoint whose config is not published",
    "vllm-windows-build-17-hybrid-block": "the excerpt names no model",
    "club3090-751-dual3090-fp8-model-loading": "an fp8 checkpoint not named exactly",
    "club3090-552-agents-a1-dual-fp8-marlin": "the checkpoint is not named (and weight-only FP8 Marlin on SM 8.6 "
    "repacks after loading)",
    "golite-qwen38-27b-exl3-16gb-compile-cache-disabled": "a local exl3 checkpoint on a source build",
    "golite-qwen38-27b-exl3-16gb-cache-populating": "a local exl3 checkpoint on a source build",
    "golite-qwen38-27b-exl3-16gb-warm-cache": "a local exl3 checkpoint on a source build",
    "pickr-qwen25-3b-awq-4050laptop-wsl2-v0.29.0-warm": "Qwen2.5-3B-Instruct-AWQ's published config is not stored",
    "virtualtubers-qwen3.8-27b-fp8-gb10-v0.30.0": "Qwen3.8-27B-FP8's config is not published in the corpus",
    "virtualtubers-glm-4.7-flash-fp8-gb10-v0.30.0": "unsloth/GLM-4.7-Flash-FP8-Dynamic's config is not stored",
    "virtualtubers-hermes-4-14b-fp8-gb10-v0.30.0": "NousResearch/Hermes-4-14B-FP8's config is not stored",
}
#: boots with a config that is not the served checkpoint's own
NOT_THE_SERVED_CHECKPOINT = {
    "genesis-24-qwen35-122b-a10b-8x3090-tp8": "an unnamed 8-bit copy of Qwen3.5-122B-A10B: the base model's bf16 "
    "config gives another layout; the copy's quantization_config is not published",
    "virtualtubers-qwen3-30b-a3b-thinking-2507-fp8-gb10-v0.30.0": "Qwen3-30B-A3B-FP8's config stands in for "
    "Thinking-2507-FP8: 40,960 rotary positions against 262,144 (54 MiB less in bf16): 29.0446 GiB against the logged "
    "29.1; with 262,144 positions the walk gives 29.0973 (29.10, as logged)",
    "virtualtubers-qwen3.6-35b-a3b-fp8-gb10-v0.30.0": "the bf16 Qwen3.6-35B-A3B config stands in for the FP8 "
    "checkpoint",
    "virtualtubers-nemotron-3.5-lightning-30b-a3b-nvfp4-gb10-v0.30.0": "the stored config.json (aiconfigurator-core's "
    "copy) has no quantization_config, so vLLM 0.30.0 reads the nested MIXED_PRECISION of hf_quant_config.json and "
    "refuses it; the boot loaded, so the served config.json carried a flat one "
    "(test_the_served_config_json_names_the_mixed_precision)",
    "kubesimplify-qwen3-235b-a22b-2507-fp8-rtxpro6000se-tp4": "Qwen3-235B-A22B-FP8's config stands in for "
    "Instruct-2507-FP8: 40,960 rotary positions against the 2507 checkpoints' 262,144; vLLM keeps one cos_sin_cache "
    "buffer (max_position_embeddings x head_dim, bf16) on every rank, 54 MiB more: 55.1344 GiB with the stand-in, "
    "55.1872 (55.19, as each rank logs) with 262,144 positions (test_the_served_rotary_table_explains_the_line)",
}
#: boots of a release whose model class dryboot's 0.28.0 layout does not reproduce
OTHER_RELEASE = {
    "myoceane-gemma-4-26b-a4b-a100-eager": "vLLM 0.19.0's Gemma-4: the 0.28.0 layout (byte-exact against 0.28.0) "
    "gives 48.47 GiB of tensors and 48.53 with 0.27.1-0.33's load segments (max_split_size_mb 20); 0.19.0 predates "
    "that scope (vLLM PR #41268), and with PyTorch's default splitting the segments add 25.7 MiB: 48.49, the boot logs "
    "48.5 (the allocator rule per release is not modelled)",
    "myoceane-gpt-oss-20b-a100-v0.19.0": "vLLM 0.19.0's MXFP4 Marlin experts on an A100: the 0.28.0 layout "
    "(byte-exact against 0.27.1-0.33.0 on SM 8.x) gives 13.70 GiB of tensors (13.80 with 0.27.1-0.33's load "
    "segments), the 0.19.0 boot logs 13.72 (not modelled)",
}
#: boots dryboot refuses by name (the report's ``refused`` line)
REFUSED_BY_DRYBOOT: dict[str, str] = {}


def _stem(entry: dict[str, Any]) -> str:
    return Path(str(entry["log"])).stem


def _on_gpu(entry: dict[str, Any]) -> dict[str, Any]:
    """The GPU the log names (its capability and the table's SM count decide the layouts vLLM
    repacks per GPU: MXFP4's MoE backend, Marlin) and the release where dryboot models it, as
    ``plan --gpu`` passes them; nothing where the log names no GPU of the table."""
    release = str(entry.get("release") or "").split(" ")[0]
    version = {"vllm_version": release} if release in VERSIONS else {}
    if not entry.get("gpu_table"):
        return version
    return serving_gpu(parse_gpu(entry["gpu_table"]), version.get("vllm_version", "0.28.0"))


def _logged(entry: dict[str, Any]) -> float:
    logged = entry["logged"]
    return float(logged.get("model_loading_gib", logged.get("weights_memory_gib")))


MODELLED = [
    e
    for e in WITH_WEIGHTS
    if _stem(e) not in {**NO_CONFIG, **NOT_THE_SERVED_CHECKPOINT, **REFUSED_BY_DRYBOOT, **OTHER_RELEASE}
]

#: modelled boots whose logged weights dryboot does not reproduce yet, each with what the log shows
#: (strict: a fix turns the entry into a failure to remove from here; issue 33 (c))
KNOWN_MISSES: dict[str, str] = {
    "a100-llama31-8b-instruct-v0.31.0-run2": (
        "0.31.0 (V2 runner), Llama-3.1-8B-Instruct on an A100 80GB, TP 1: 'Model loading took 15.0 GiB' means at "
        "least 14.995 GiB, dryboot 14.9889 (16,094,175,232 bytes, every tensor's 2 MiB-multiple segment whole: no "
        "allocator term), which is vLLM's own figure: 0.33.0 builds exactly 16,094,175,232 bytes for this config on a "
        "faked A100 (quant-recorded-ficounter-0.33.0.json, built_allocated_bytes), and so does 0.31.0 (the same "
        "recorder, RECORD_SET=ficounter RECORD_GPUS=A100-80GB RECORD_TPS=1, in its boot environment; 07 Dec, not a "
        "committed record). So at least 6.3 MiB more stays "
        "allocated after the real load than the model's storages; the 0.15.1 A100 boot of the same weights printed "
        "14.99 (vllm-gce-llama31-8b-a100). The excerpt has no line that names it (no load trace of 0.31.0 on a "
        "real GPU): not modelled"
    ),
}
# (the kvroute AWQ-INT4 boots, 5.39 against the per-tensor rule's 5.37, are reproduced since the
# load's allocation order is emitted and replayed: model_loader/load_order.py, test_load_trace.py)


def _params(entries: list[dict[str, Any]]) -> list[Any]:
    return [
        pytest.param(e, id=_stem(e), marks=pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[_stem(e)]))
        if _stem(e) in KNOWN_MISSES
        else pytest.param(e, id=_stem(e))
        for e in entries
    ]


@pytest.mark.parametrize("entry", _params(MODELLED))
def test_logged_weights_reproduced_to_a_hundredth_gib(entry: dict[str, Any]) -> None:
    report = model_weights(
        REPO / str(entry["config"]),
        tp=int(entry["tp"]),
        pp=int(entry.get("pp") or 1),
        dp=int(entry.get("dp") or 1),
        **_on_gpu(entry),
    )
    assert report.refused is None
    assert abs(report.stages[0].gib - _logged(entry)) <= 0.01


@pytest.mark.parametrize("entry", [e for e in WITH_WEIGHTS if _stem(e) in REFUSED_BY_DRYBOOT], ids=_stem)
def test_unmodelled_boot_refused_by_name(entry: dict[str, Any]) -> None:
    report = model_weights(REPO / str(entry["config"]), tp=int(entry["tp"]), **_on_gpu(entry))
    assert report.refused is not None
    # or the release's own refusal (vLLM 0.30.0 does not know a nested ModelOpt MIXED_PRECISION)
    assert "not modelled" in report.refused or "Unknown ModelOpt quant algo" in report.refused


#: (boot, the stand-in config's rotary positions, the served checkpoint's): the 2507 and Instruct
#: checkpoints' own max_position_embeddings (262,144, which the TP 4 boot's post itself states: "this
#: model supports a 262,144-token context", read from its config.json; 262,144). (The WSL2
#: Qwen2.5-1.5B-Instruct boot, which the base config's 131,072 positions missed by 0.02 GiB, is
#: served from the Instruct checkpoint's own config now: 2.9731 GiB, 2.98 logged.)
SERVED_POSITIONS = (
    ("kubesimplify-qwen3-235b-a22b-2507-fp8-rtxpro6000se-tp4", 40960, 262144),
    ("virtualtubers-qwen3-30b-a3b-thinking-2507-fp8-gb10-v0.30.0", 40960, 262144),
)


@pytest.mark.parametrize(("stem", "stand_in_positions", "served_positions"), SERVED_POSITIONS)
def test_the_served_rotary_table_explains_the_line(
    tmp_path: Path, stem: str, stand_in_positions: int, served_positions: int
) -> None:
    """A config standing in for the served checkpoint differs from it in ``max_position_embeddings``
    only; vLLM's rotary ``cos_sin_cache`` (positions x head_dim in the model dtype, one buffer on
    every rank) is in ``Model loading took``: with the served positions the walk gives the logged
    figure to the hundredth, with the stand-in's it does not (what issue 33 (c) read as a TP-time
    allocation at TP 4)."""
    entry = next(e for e in LOGS if _stem(e) == stem)
    config = json.loads((REPO / str(entry["config"]) / "config.json").read_text())
    assert config["max_position_embeddings"] == stand_in_positions
    tp = int(entry["tp"])
    stand_in = model_weights(REPO / str(entry["config"]), tp=tp, **_on_gpu(entry))
    (tmp_path / "config.json").write_text(json.dumps({**config, "max_position_embeddings": served_positions}))
    served = model_weights(tmp_path, tp=tp, **_on_gpu(entry))
    assert abs(stand_in.stages[0].gib - _logged(entry)) > 0.01
    assert abs(served.stages[0].gib - _logged(entry)) <= 0.01


def test_every_weights_boot_is_accounted_for() -> None:
    stems = {_stem(e) for e in WITH_WEIGHTS}
    listed = {**NO_CONFIG, **NOT_THE_SERVED_CHECKPOINT, **REFUSED_BY_DRYBOOT, **OTHER_RELEASE}
    assert set(listed) <= stems  # no stale name
    assert set(KNOWN_MISSES) <= {_stem(e) for e in MODELLED}
    for entry in WITH_WEIGHTS:
        if _stem(entry) in NO_CONFIG:
            assert entry["config"] is None
    assert len(MODELLED) >= 5


#: vLLM's own bytes after ``process_weights_after_loading`` for a corpus boot whose excerpt prints no
#: weights line: (config directory, GPU, TP, release) -> allocated bytes on the meta device, recorded
#: with ``tests/fidelity/record_quant_weights.py`` in the release's boot environment, its
#: ``QUANT_CONFIGS`` pointed at a copy of the corpus directory (RECORD_GPUS="RTX 4090", RECORD_TPS=1;
#: 2026-12-05: MarlinLinearKernel on all 112 linear layers). The llmso GPTQ boot of 0.27.1 on an
#: RTX 4090 (WSL2): the budget it is calibrated with rests on this figure.
VLLM_ALLOCATED = {
    ("Qwen--Qwen2.5-7B-Instruct-GPTQ-Int4", "RTX 4090", 1, "0.27.1"): 5_553_761_280,
}


@pytest.mark.parametrize(("name", "gpu", "tp", "version"), sorted(VLLM_ALLOCATED))
def test_served_quantized_checkpoint_as_vllm_holds_it(name: str, gpu: str, tp: int, version: str) -> None:
    report = model_weights(
        REPO / "tests" / "data" / "configs" / "public" / name, tp=tp, **serving_gpu(parse_gpu(gpu), version)
    )
    assert report.refused is None
    assert report.stages[0].allocated_bytes == VLLM_ALLOCATED[(name, gpu, tp, version)]


NEMOTRON = "virtualtubers-nemotron-3.5-lightning-30b-a3b-nvfp4-gb10-v0.30.0"
#: vLLM 0.30.0's bytes after ``process_weights_after_loading`` for the stored Nemotron-3.5-Lightning
#: pair with ``{"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION"}`` added to its
#: config.json, TP 1 (``tests/fidelity/record_quant_weights.py`` in the 0.30.0 boot environment, its
#: ``QUANT_CONFIGS`` pointed at that pair, RECORD_GPUS="RTX 5090,H100", 2026-12-05): served as
#: ``modelopt_mixed``, FlashInferFP8ScaledMMLinearKernel (RTX 5090) / CutlassFP8ScaledMMLinearKernel
#: (H100) on the 46 FP8 layers, MarlinNvFp4LinearKernel on 47. The stored pair: "Unknown ModelOpt
#: quant algo: MIXED_PRECISION" on both.
VLLM_FLAT_MIXED = {"RTX 5090": 18_889_185_280, "H100": 18_873_346_560}


def test_the_served_config_json_names_the_mixed_precision(tmp_path: Path) -> None:
    """The GB10 boot of NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4 on vLLM 0.30.0 (every prefix of
    its excerpt is 0.30.0's, ``__init__.py:758`` the FP8 linear kernel's "Selected ... for" call
    included) loaded 17.82 GiB with its FP8 Mamba projections on FlashInferFP8ScaledMMLinearKernel.
    vLLM 0.30.0 reads ``config.json``'s ``quantization_config`` first and ``hf_quant_config.json``
    only without one (``transformers_utils/config.py`` ``get_config``); with the stored
    ``config.json``, which has none, it meets the nested MIXED_PRECISION and raises "Unknown ModelOpt
    quant algo" (dryboot refuses as it does). A flat ``quantization_config`` (``quant_method``
    modelopt, ``quant_algo`` MIXED_PRECISION: what ModelOpt exports write, as every other
    MIXED_PRECISION checkpoint of the corpus shows) is named ``modelopt_mixed`` and its per-layer map
    read from ``hf_quant_config.json`` (``get_quant_config``'s fall-through); with that one key added
    dryboot's 0.30.0 walk on the GB10 gives 17.79 GiB against the logged 17.82 (0.03 GiB not
    explained): the served checkpoint had that key, the stored copy lacks it."""
    entry = next(e for e in LOGS if _stem(e) == NEMOTRON)
    stored = REPO / str(entry["config"])
    on = _on_gpu(entry)
    assert "Unknown ModelOpt quant algo" in str(model_weights(stored, tp=1, **on).refused)
    config = json.loads((stored / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "hf_quant_config.json").write_bytes((stored / "hf_quant_config.json").read_bytes())
    report = model_weights(tmp_path, tp=1, **on)
    assert report.refused is None
    assert abs(report.stages[0].gib - _logged(entry)) <= 0.05
    # vLLM 0.30.0's own bytes for this pair (VLLM_FLAT_MIXED), byte for byte
    for gpu, allocated in VLLM_FLAT_MIXED.items():
        got = model_weights(tmp_path, tp=1, **serving_gpu(parse_gpu(gpu), "0.30.0")).stages[0].allocated_bytes
        assert got == allocated, gpu
    # the same layout as with the per-layer map (and the FP8 KV cache) inline: vLLM reads either file
    inline = json.loads((stored / "hf_quant_config.json").read_text())["quantization"]
    config["quantization_config"] |= {
        "quantized_layers": inline["quantized_layers"],
        "ignore": inline["exclude_modules"],
        "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"},
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert model_weights(tmp_path, tp=1, **on).stages[0].loaded_bytes == report.stages[0].loaded_bytes
