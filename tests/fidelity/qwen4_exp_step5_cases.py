"""The tiny configs that back the plans and refusals of vLLM 0.33.0's Qwen4-Exp, Step5 and GLM-5.3-Flash
(``dryboot.vllm.models.registry.NOT_MODELLED``), and the flags each is started with.

Each config (``data/refused-0.33/configs/<name>.json``) switches on one of the layer or cache kinds
the refusal names: Qwen4-Exp with QSA layers (``indexer_n_heads``), PLE layers (``ple_layer_ids``),
both, or neither; Step5 with its ``sparse_config`` enabled or disabled. ``record_qwen4_exp_step5.py``
records what vLLM 0.33.0's engine start does with them (and 0.29.0-0.32.0's with the Qwen4-Exp ones);
``test_qwen4_exp_step5.py`` checks those records against the refusals' words and that dryboot refuses
every one of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "refused-0.33"
CONFIGS = DATA / "configs"
RECORD = DATA / "vllm-0.33.0.json"
VERSION = "0.33.0"
#: the earlier releases whose registries list Qwen4-Exp (not Step5: 0.33.0 adds it), where the
#: Qwen4-Exp cases are recorded too (``data/refused-0.33/vllm-<release>.json``)
EARLIER = ("0.29.0", "0.30.0", "0.31.0", "0.32.0")

BASE = ["--kv-cache-memory-bytes", "4G", "--max-model-len", "8192"]
#: the PLE layers' n-gram embedding without its default CPU offload (which needs UVA)
NO_OFFLOAD = [*BASE, "--engram-config", '{"cpu_offload": false}']
MTP = '{"method": "mtp", "num_speculative_tokens": 1}'
#: the release before ``--engram-config``
NO_ENGRAM = "0.29.0"
#: no image a prompt (the wrapper's tower is built all the same)
IMAGE0 = '{"image": 0}'


#: what each record keeps of the oracle's answer: the KV cache groups, and the engine start's
#: capacity (tokens, concurrency, the max length and the final block size) as it logs them
KEPT_FIELDS = (
    "ok",
    "stage",
    "error",
    "block_size",
    "groups",
    "group_layers",
    "num_blocks",
    "tokens",
    "concurrency",
    "max_model_len",
    "final_block_size",
)

#: the releases the QSA cases below are recorded on
QSA_RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: the releases dryboot plans QSA layers on (0.29.0's recorded engine block is the ring's: refused)
QSA_PLANNED = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: the QSA cases recorded on :data:`QSA_RELEASES` only
QSA_033: dict[str, tuple[str, list[str]]] = {
    "qwen4-qsa-tp2": ("qwen4-qsa", [*BASE, "--tensor-parallel-size", "2"]),
    "qwen4-qsa-tp4": ("qwen4-qsa", [*BASE, "--tensor-parallel-size", "4"]),
    "qwen4-qsa-fp8": ("qwen4-qsa", [*BASE, "--kv-cache-dtype", "fp8"]),
    "qwen4-qsa-fp8-tp2": ("qwen4-qsa", [*BASE, "--kv-cache-dtype", "fp8", "--tensor-parallel-size", "2"]),
    "qwen4-qsa-block32": ("qwen4-qsa", [*BASE, "--block-size", "32"]),
    "qwen4-qsa-block128": ("qwen4-qsa", [*BASE, "--block-size", "128"]),
    "qwen4-qsa-len2048": ("qwen4-qsa", ["--kv-cache-memory-bytes", "1G", "--max-model-len", "2048"]),
    "qwen4-qsa-autofit": ("qwen4-qsa", ["--kv-cache-memory-bytes", "200M", "--max-model-len", "-1"]),
    "qwen4-qsa-no-prefix": ("qwen4-qsa", [*BASE, "--no-enable-prefix-caching"]),
    "qwen4-qsa-ngram3": (
        "qwen4-qsa",
        [*BASE, "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}'],
    ),
    "qwen4-qsa-pp2": ("qwen4-qsa", [*BASE, "--pipeline-parallel-size", "2"]),
    "qwen4-qsa-512-tp2": ("qwen4-qsa-512", [*BASE, "--tensor-parallel-size", "2"]),
    "qwen4-vl-qsa-tp2": ("qwen4-vl-qsa", [*BASE, "--tensor-parallel-size", "2"]),
    # multimodal RoPE (the ring stores positions too), another ratio, a backend named, a blocks
    # override, a float32 Gated DeltaNet state
    "qwen4-vl-qsa-mrope": ("qwen4-vl-qsa-mrope", BASE),
    "qwen4-qsa-ratio8": ("qwen4-qsa-ratio8", BASE),
    "qwen4-qsa-ratio8-ngram5": (
        "qwen4-qsa-ratio8",
        [*BASE, "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 3}'],
    ),
    "qwen4-qsa-flashinfer": ("qwen4-qsa", [*BASE, "--attention-backend", "FLASHINFER"]),
    "qwen4-qsa-override": ("qwen4-qsa", [*BASE, "--num-gpu-blocks-override", "2000"]),
    "qwen4-qsa-mamba-fp32": ("qwen4-qsa", [*BASE, "--mamba-cache-dtype", "float32"]),
    # what vLLM refuses of QSA layers: float16 activations, a ratio the block does not hold, decode
    # context parallelism, an fp8 e5m2 cache
    "qwen4-qsa-fp16": ("qwen4-qsa", [*BASE, "--dtype", "float16"]),
    "qwen4-qsa-ratio128": ("qwen4-qsa-ratio128", BASE),
    "qwen4-qsa-dcp2": ("qwen4-qsa", [*BASE, "--tensor-parallel-size", "2", "--decode-context-parallel-size", "2"]),
    "qwen4-qsa-tp4-dcp2": (
        "qwen4-qsa",
        [*BASE, "--tensor-parallel-size", "4", "--decode-context-parallel-size", "2"],
    ),
    "qwen4-qsa-fp8-e5m2": ("qwen4-qsa", [*BASE, "--kv-cache-dtype", "fp8_e5m2"]),
    # the budget / ratio 512 config (the one 0.29-0.31's own config class takes) under the flags
    # that change its caches
    "qwen4-qsa-512-fp8": ("qwen4-qsa-512", [*BASE, "--kv-cache-dtype", "fp8"]),
    "qwen4-qsa-512-no-prefix": ("qwen4-qsa-512", [*BASE, "--no-enable-prefix-caching"]),
    "qwen4-qsa-512-ngram3": (
        "qwen4-qsa-512",
        [*BASE, "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}'],
    ),
    "qwen4-qsa-512-len2048": ("qwen4-qsa-512", ["--kv-cache-memory-bytes", "1G", "--max-model-len", "2048"]),
}

#: case id -> (config name, flags)
CASES: dict[str, tuple[str, list[str]]] = {
    "qwen4-qsa-ple": ("qwen4-qsa-ple", BASE),
    "qwen4-qsa-ple-no-offload": ("qwen4-qsa-ple", NO_OFFLOAD),
    # QSA and PLE layers together under the budget / ratio 512 that 0.29-0.31's own config class takes
    # (0.29.0 has no --engram-config: :func:`cases_for` drops it there)
    "qwen4-qsa-512-ple": ("qwen4-qsa-512-ple", NO_OFFLOAD),
    "qwen4-qsa-512-ple-tp2": ("qwen4-qsa-512-ple", [*NO_OFFLOAD, "--tensor-parallel-size", "2"]),
    "qwen4-qsa-512-ple-ngram3": (
        "qwen4-qsa-512-ple",
        [
            *NO_OFFLOAD,
            "--speculative-config",
            '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}',
        ],
    ),
    "qwen4-qsa": ("qwen4-qsa", BASE),
    # indexer_budget / indexer_compress_ratio = 512: the QSA layout 0.29-0.31's own Qwen4ExpTextConfig
    # accepts (it refuses the 64 of qwen4-qsa)
    "qwen4-qsa-512": ("qwen4-qsa-512", BASE),
    "qwen4-ple": ("qwen4-ple", BASE),
    "qwen4-ple-no-offload": ("qwen4-ple", NO_OFFLOAD),
    "qwen4-plain": ("qwen4-plain", BASE),
    # the plain layout with full_attention_interval 2: vLLM's own config class (0.29-0.31) ignores
    # it (every 4th layer attention), transformers' (0.32 on) reads it
    "qwen4-plain-interval": ("qwen4-plain-interval", BASE),
    "step5-sparse": ("step5-sparse", BASE),
    "step5-sparse-off": ("step5-sparse-off", BASE),
    # the MTP drafters (--speculative-config method mtp) and the multimodal wrappers
    "qwen4-qsa-mtp": ("qwen4-qsa-mtp", [*BASE, "--speculative-config", MTP]),
    "qwen4-qsa-512-mtp": ("qwen4-qsa-512-mtp", [*BASE, "--speculative-config", MTP]),
    "qwen4-vl-qsa": ("qwen4-vl-qsa", BASE),
    # the wrapper around the plain layout (planned through its text model)
    "qwen4-vl-plain": ("qwen4-vl-plain", BASE),
    "qwen4-vl-plain-lm-only": ("qwen4-vl-plain", [*BASE, "--language-model-only"]),
    "step5-sparse-mtp": ("step5-sparse-mtp", [*BASE, "--speculative-config", MTP]),
    "step5-vl": ("step5-vl", BASE),
    # Step5's DSA geometry (the harness builds the DSA layers with a stand-in for their FlashInfer
    # workspace): max lengths, block sizes, TP, an fp8 cache, layer mixes, KV groups
    "step5-sparse-len2048": ("step5-sparse", ["--kv-cache-memory-bytes", "4G", "--max-model-len", "2048"]),
    "step5-sparse-len5000": ("step5-sparse", ["--kv-cache-memory-bytes", "1G", "--max-model-len", "5000"]),
    "step5-sparse-batched2048": ("step5-sparse", [*BASE, "--max-num-batched-tokens", "2048"]),
    "step5-sparse-block32": ("step5-sparse", [*BASE, "--block-size", "32"]),
    "step5-sparse-block64": ("step5-sparse", [*BASE, "--block-size", "64"]),
    "step5-sparse-tp2": ("step5-sparse", [*BASE, "--tensor-parallel-size", "2"]),
    "step5-sparse-fp8": ("step5-sparse", [*BASE, "--kv-cache-dtype", "fp8"]),
    "step5-sparse-fp8-tp2": ("step5-sparse", [*BASE, "--kv-cache-dtype", "fp8", "--tensor-parallel-size", "2"]),
    "step5-sparse-mix": ("step5-sparse-mix", BASE),
    "step5-sparse-all-full": ("step5-sparse-all-full", BASE),
    "step5-sparse-g4": ("step5-sparse-g4", BASE),
    "step5-sparse-g4-tp2": ("step5-sparse-g4", [*BASE, "--tensor-parallel-size", "2"]),
    "step5-sparse-g4-tp4": ("step5-sparse-g4", [*BASE, "--tensor-parallel-size", "4"]),
    "step5-sparse-hd128": ("step5-sparse-hd128", BASE),
    "step5-vl-tp2": ("step5-vl", [*BASE, "--tensor-parallel-size", "2"]),
    # what dryboot's plan of Step5ForCausalLM adds (kv_cache_utils/repeat_packed.py): the plain layout
    # under TP and fp8, two pipeline stages of the mixed and the 4-group configs, an auto-fitted
    # length, a blocks override
    "step5-sparse-off-tp2-fp8": (
        "step5-sparse-off",
        [*BASE, "--tensor-parallel-size", "2", "--kv-cache-dtype", "fp8"],
    ),
    "step5-sparse-mix-pp2": ("step5-sparse-mix", [*BASE, "--pipeline-parallel-size", "2"]),
    "step5-sparse-g4-tp2-pp2": (
        "step5-sparse-g4",
        [*BASE, "--tensor-parallel-size", "2", "--pipeline-parallel-size", "2"],
    ),
    "step5-sparse-autofit": ("step5-sparse", ["--kv-cache-memory-bytes", "200M", "--max-model-len", "-1"]),
    "step5-sparse-override": ("step5-sparse", [*BASE, "--num-gpu-blocks-override", "2000"]),
    # what dryboot's plan of Step5ForConditionalGeneration adds (planned through Step5's text rules):
    # the perception-encoder tower's TP checks (its MLP width int(width * mlp_ratio), its heads),
    # which --language-model-only and a zero image limit leave built; a text config naming no
    # architectures; a max length, an fp8 cache, two pipeline stages
    "step5-vl-lmo": ("step5-vl", [*BASE, "--language-model-only"]),
    "step5-vl-tp2-lmo": ("step5-vl", [*BASE, "--tensor-parallel-size", "2", "--language-model-only"]),
    "step5-vl-tp2-limit0": ("step5-vl", [*BASE, "--tensor-parallel-size", "2", "--limit-mm-per-prompt", IMAGE0]),
    "step5-vl-mlp4-tp2": ("step5-vl-mlp4", [*BASE, "--tensor-parallel-size", "2"]),
    "step5-vl-heads1-tp2": ("step5-vl-heads1", [*BASE, "--tensor-parallel-size", "2"]),
    "step5-vl-unnamed": ("step5-vl-unnamed", BASE),
    "step5-vl-len2048": ("step5-vl", ["--kv-cache-memory-bytes", "1G", "--max-model-len", "2048"]),
    "step5-vl-fp8": ("step5-vl", [*BASE, "--kv-cache-dtype", "fp8"]),
    "step5-vl-pp2": ("step5-vl", [*BASE, "--pipeline-parallel-size", "2"]),
    # --mm-encoder-tp-mode data: Step3p7's flag (supports_encoder_tp_data) builds the tower and the
    # projector unsharded (disable_tp), so TP need not divide them
    "step5-vl-heads1-tp2-data": (
        "step5-vl-heads1",
        [*BASE, "--tensor-parallel-size", "2", "--mm-encoder-tp-mode", "data"],
    ),
    "step5-vl-mlp4-tp2-data": ("step5-vl-mlp4", [*BASE, "--tensor-parallel-size", "2", "--mm-encoder-tp-mode", "data"]),
    # what dryboot's plan of Qwen4-Exp's QSA layers adds (0.33.0's repeat-pattern packing of the
    # Gated DeltaNet states, the index-key rings and the compressed keys beside the layers' own KV):
    # TP, an fp8 cache, block sizes, lengths, an auto-fitted length, no prefix caching, n-gram
    # drafting (a wider ring), two pipeline stages, the wrapper under TP
    **QSA_033,
    # GLM-5.3-Flash (refused): a tiny stand-in (no published config found), its text model's KDA,
    # MLA, kpool indexer and tail-ring caches as vLLM 0.33.0 groups them
    "glm53-flash": ("glm53-flash", BASE),
    "glm53-flash-tp2": ("glm53-flash", [*BASE, "--tensor-parallel-size", "2"]),
}


#: the GPUs (``tests/data/gpus/gpus.toml`` rows) the QSA cases are recorded on beside the H200,
#: each with its flag sets (``data/refused-0.33/qsa-gpus-0.33.0.json``, ``record_qwen4_exp_step5.py
#: PYTHON --gpus``): the Gated DeltaNet prefill's checkpoint pages are SM90's only
QSA_GPUS = ("H100", "B200", "A100-80GB", "RTX 4090")
QSA_GPU_CASES = ("qwen4-qsa", "qwen4-qsa-fp8", "qwen4-qsa-tp2", "qwen4-qsa-no-prefix")
GPU_RECORD = DATA / "qsa-gpus-0.33.0.json"


def gpu_recorded() -> dict[str, dict[str, dict[str, Any]]]:
    """GPU -> case id -> the oracle's kept fields, recorded as that GPU (0.33.0)."""
    doc: dict[str, Any] = json.loads(GPU_RECORD.read_text())
    assert doc["vllm"] == VERSION
    gpus: dict[str, dict[str, dict[str, Any]]] = doc["gpus"]
    return gpus


def cases_for(version: str) -> dict[str, tuple[str, list[str]]]:
    """The cases recorded on ``version``: every one on 0.33.0, the Qwen4-Exp ones on :data:`EARLIER`."""
    if version == VERSION:
        return dict(CASES)
    cases = {k: v for k, v in CASES.items() if k.startswith("qwen4") and (k not in QSA_033 or version in QSA_RELEASES)}
    if version == NO_ENGRAM:  # the QSA + PLE cases without the flag it lacks
        for k in ("qwen4-qsa-512-ple", "qwen4-qsa-512-ple-tp2", "qwen4-qsa-512-ple-ngram3"):
            name, argv = cases[k]
            cases[k] = (name, [a for a in argv if a not in NO_OFFLOAD[len(BASE) :]])
    return cases


def record_path(version: str) -> Path:
    return DATA / f"vllm-{version}.json"


def config(name: str) -> dict[str, Any]:
    """The tiny config ``name`` (``data/refused-0.33/configs/<name>.json``)."""
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return data


def recorded(version: str = VERSION) -> dict[str, dict[str, Any]]:
    """A release's recorded answers (0.33.0's by default), case id -> the oracle's kept fields."""
    doc: dict[str, Any] = json.loads(record_path(version).read_text())
    assert doc["vllm"] == version
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases
