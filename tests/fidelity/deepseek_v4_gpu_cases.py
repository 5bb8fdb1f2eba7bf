"""DeepSeek-V4 (``DeepseekV4ForCausalLM``) off SM 9.0: the flag sets and GPUs whose engine start
``record_deepseek_v4_gpus.py`` records (``data/deepseek_v4/gpus-<release>.json``) and
``test_deepseek_v4_gpus.py`` checks dryboot against.

vLLM's ``_select_dsv4_attn_cls`` (``vllm/models/deepseek_v4/nvidia/model.py``) gives the layers
FlashMLA's sparse attention on every CUDA GPU but SM 12.x, whose default is FlashInfer's SM120
attention; ``FLASHINFER_MLA_SPARSE_DSV4`` named on SM 10.x gives FlashInfer's TRT-LLM-gen attention
(its plain-row caches: the ``b200-flashinfer*`` cases). The cases run the oracle as a B200, a B300 (SM 10.x), an
RTX 5090 and an RTX PRO 6000 Blackwell (SM 12.x), through ``tests/data/gpus/run_oracle_as.py``, on
the architecture's tiny config and ``data/deepseek_v4/interleaved.json`` (both stand-ins: see
``test_deepseek_v4.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "deepseek_v4"
ARCH = "DeepseekV4ForCausalLM"
#: config name -> file
CONFIGS = {
    "tiny": HERE / "data" / "architectures" / f"{ARCH}.json",
    "interleaved": DATA / "interleaved.json",
    "window192": HERE / "data" / "architectures" / f"{ARCH}.json",
    "heads256": HERE / "data" / "architectures" / f"{ARCH}.json",
}
#: config name -> the keys it sets over its file (stand-ins for the SM120 layers' checks: a 192-token
#: window, which FlashInfer 0.6.16's SM120 decode table lacks and 0.6.18's has; 256 query heads, more
#: than either attention pads to at TP 1)
OVERRIDES: dict[str, dict[str, Any]] = {
    "window192": {"sliding_window": 192},
    "heads256": {"num_attention_heads": 256},
}
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")

_MEM = ["--kv-cache-memory-bytes", "1000000000", "--max-model-len", "8192"]
_FP8 = [*_MEM, "--kv-cache-dtype", "fp8"]
_HIDDEN = json.dumps(
    {
        "method": "extract_hidden_states",
        "num_speculative_tokens": 1,
        "draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": [0, 1]}},
    }
)
#: the hidden-state cache of 8,192 tokens outgrows the 1 GB pool: 2,048
_HIDDEN_ARGV = ["--kv-cache-memory-bytes", "1000000000", "--max-model-len", "2048", "--kv-cache-dtype", "fp8"]
_HIDDEN_ARGV += ["--speculative-config", _HIDDEN]

#: case id -> (config name, flags, GPU)
CASES: dict[str, tuple[str, list[str], str]] = {
    "b200": ("tiny", _FP8, "B200"),
    "b200-auto": ("tiny", _MEM, "B200"),
    "b200-tp2": ("tiny", [*_FP8, "-tp", "2"], "B200"),
    "b200-block128": ("tiny", [*_FP8, "--block-size", "128"], "B200"),
    "b200-block64": ("tiny", [*_FP8, "--block-size", "64"], "B200"),
    "b200-bf16": ("tiny", [*_MEM, "--kv-cache-dtype", "bfloat16"], "B200"),
    "b200-flashinfer": ("tiny", [*_FP8, "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"], "B200"),
    "b200-interleaved": ("interleaved", _FP8, "B200"),
    "b200-interleaved-pp2": ("interleaved", [*_FP8, "-pp", "2"], "B200"),
    "b300": ("tiny", _FP8, "B300"),
    "b300-interleaved-tp2": ("interleaved", [*_FP8, "-tp", "2"], "B300"),
    "rtx5090": ("tiny", _FP8, "RTX 5090"),
    "rtx5090-flashmla": ("tiny", [*_FP8, "--attention-backend", "FLASHMLA_SPARSE"], "RTX 5090"),
    "rtx-pro-6000": ("tiny", _FP8, "RTX PRO 6000 Blackwell"),
    # issue 37: FlashInfer's SM120 layers modelled
    "rtx-pro-6000-tp2": ("tiny", [*_FP8, "-tp", "2"], "RTX PRO 6000 Blackwell"),
    "rtx-pro-6000-block128": ("tiny", [*_FP8, "--block-size", "128"], "RTX PRO 6000 Blackwell"),
    "rtx-pro-6000-block512": ("tiny", [*_FP8, "--block-size", "512"], "RTX PRO 6000 Blackwell"),
    "rtx-pro-6000-named": (
        "tiny",
        [*_FP8, "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"],
        "RTX PRO 6000 Blackwell",
    ),
    "rtx-pro-6000-sm120-name": (
        "tiny",
        [*_FP8, "--attention-backend", "FLASHINFER_MLA_SPARSE_SM120"],
        "RTX PRO 6000 Blackwell",
    ),
    "rtx-pro-6000-interleaved": ("interleaved", _FP8, "RTX PRO 6000 Blackwell"),
    "rtx-pro-6000-interleaved-pp2": ("interleaved", [*_FP8, "-pp", "2"], "RTX PRO 6000 Blackwell"),
    "rtx-pro-6000-window192": ("window192", _FP8, "RTX PRO 6000 Blackwell"),
    "rtx-pro-6000-heads256": ("heads256", _FP8, "RTX PRO 6000 Blackwell"),
    "rtx-pro-6000-heads256-tp2": ("heads256", [*_FP8, "-tp", "2"], "RTX PRO 6000 Blackwell"),
    "b200-heads256": ("heads256", _FP8, "B200"),
    "rtx5090-mtp": (
        "tiny",
        [*_FP8, "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}'],
        "RTX 5090",
    ),
    # issue 37: FlashInfer's DeepSeek-V4 attention named off SM 12.x (its plain-row caches)
    "b200-flashinfer-auto": ("tiny", [*_MEM, "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"], "B200"),
    "b200-flashinfer-bf16": (
        "tiny",
        [*_MEM, "--kv-cache-dtype", "bfloat16", "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"],
        "B200",
    ),
    "b200-flashinfer-block512": (
        "tiny",
        [*_FP8, "--block-size", "512", "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"],
        "B200",
    ),
    "b300-flashinfer-bf16-tp2": (
        "tiny",
        [*_MEM, "--kv-cache-dtype", "bfloat16", "-tp", "2", "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"],
        "B300",
    ),
    "b200-flashinfer-mtp": (
        "tiny",
        [
            *_FP8,
            "--speculative-config",
            '{"method": "mtp", "num_speculative_tokens": 1}',
            "--attention-backend",
            "FLASHINFER_MLA_SPARSE_DSV4",
        ],
        "B200",
    ),
    # issue 37: FlashInfer named beside an interleaved config and pipeline stages; the extract_hidden_states
    # drafter's cache (CACHE_ONLY_ATTN) in the block line
    "b200-flashinfer-interleaved": (
        "interleaved",
        [*_FP8, "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"],
        "B200",
    ),
    "b200-flashinfer-pp2": ("tiny", [*_FP8, "-pp", "2", "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"], "B200"),
    "b200-hidden": ("tiny", [*_HIDDEN_ARGV], "B200"),
    "rtx-pro-6000-hidden": ("tiny", [*_HIDDEN_ARGV], "RTX PRO 6000 Blackwell"),
}


def config(name: str) -> dict[str, Any]:
    """The config ``name`` (its JSON)."""
    data: dict[str, Any] = json.loads(CONFIGS[name].read_text())
    data.update(OVERRIDES.get(name, {}))
    return data


def record_path(version: str) -> Path:
    """Where ``version``'s answers are kept."""
    return DATA / f"gpus-{version}.json"


def recorded(version: str) -> dict[str, dict[str, Any]]:
    """What ``version`` answered: case id -> {config, argv, gpu, vllm}."""
    doc: dict[str, Any] = json.loads(record_path(version).read_text())
    assert doc["vllm"] == version
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases
