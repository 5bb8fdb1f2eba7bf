"""The tiny configs that back the refusals of vLLM 0.33.0's Qwen4-Exp and Step5
(``dryboot.vllm.models.registry.NOT_MODELLED``), and the flags each is started with.

Each config (``data/refused-0.33/configs/<name>.json``) switches on one of the layer or cache kinds
the refusal names: Qwen4-Exp with QSA layers (``indexer_n_heads``), PLE layers (``ple_layer_ids``),
both, or neither; Step5 with its ``sparse_config`` enabled or disabled. ``record_qwen4_exp_step5.py``
records what vLLM 0.33.0's engine start does with them; ``test_qwen4_exp_step5.py`` checks that
record against the refusals' words and that dryboot refuses every one of them.
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

BASE = ["--kv-cache-memory-bytes", "4G", "--max-model-len", "8192"]
#: the PLE layers' n-gram embedding without its default CPU offload (which needs UVA)
NO_OFFLOAD = [*BASE, "--engram-config", '{"cpu_offload": false}']
MTP = '{"method": "mtp", "num_speculative_tokens": 1}'


#: case id -> (config name, flags)
CASES: dict[str, tuple[str, list[str]]] = {
    "qwen4-qsa-ple": ("qwen4-qsa-ple", BASE),
    "qwen4-qsa-ple-no-offload": ("qwen4-qsa-ple", NO_OFFLOAD),
    "qwen4-qsa": ("qwen4-qsa", BASE),
    "qwen4-ple": ("qwen4-ple", BASE),
    "qwen4-ple-no-offload": ("qwen4-ple", NO_OFFLOAD),
    "qwen4-plain": ("qwen4-plain", BASE),
    "step5-sparse": ("step5-sparse", BASE),
    "step5-sparse-off": ("step5-sparse-off", BASE),
    # the MTP drafters (--speculative-config method mtp) and the multimodal wrappers
    "qwen4-qsa-mtp": ("qwen4-qsa-mtp", [*BASE, "--speculative-config", MTP]),
    "qwen4-vl-qsa": ("qwen4-vl-qsa", BASE),
    "step5-sparse-mtp": ("step5-sparse-mtp", [*BASE, "--speculative-config", MTP]),
    "step5-vl": ("step5-vl", BASE),
}


def config(name: str) -> dict[str, Any]:
    """The tiny config ``name`` (``data/refused-0.33/configs/<name>.json``)."""
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return data


def recorded() -> dict[str, dict[str, Any]]:
    """vLLM 0.33.0's recorded answers, case id -> the oracle's kept fields."""
    doc: dict[str, Any] = json.loads(RECORD.read_text())
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases
