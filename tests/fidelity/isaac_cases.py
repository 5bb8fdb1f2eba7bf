"""Isaac's two configs (issue 37): the tiny config (``data/architectures/IsaacForConditionalGeneration.json``)
with a ``text_config`` object beside its top level, equal to it or differing in one key, and a
``head_dim`` the M-RoPE sections cannot split. ``isaac.py`` builds the decoder layers (and vLLM's
``hf_text_config``) from ``text_config``, the lm_head and the M-RoPE sections from the top level;
``record_isaac.py`` records what each release's engine start does with them (the stand-in
tokenizer of ``files/IsaacForConditionalGeneration/`` beside each), ``test_isaac_recorded.py``
checks dryboot against the records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ARCH = "IsaacForConditionalGeneration"
TINY = HERE / "data" / "architectures" / f"{ARCH}.json"
FILES = HERE / "data" / "architectures" / "files" / ARCH
DATA = HERE / "data" / "wrappers" / "isaac"
VERSIONS = ("0.28.0", "0.33.0")
ARGV = ["--kv-cache-memory-bytes", "4G", "--max-model-len", "8192"]
#: the tiny config's Qwen3 keys, copied into text_config
TEXT_KEYS = (
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_key_value_heads",
    "max_position_embeddings",
    "vocab_size",
    "head_dim",
    "use_sliding_window",
    "sliding_window",
    "max_window_layers",
)
#: case id -> (text_config's changes (None: no text_config), the top level's changes)
CASES: dict[str, tuple[dict[str, Any] | None, dict[str, Any]]] = {
    "text-config-equal": ({}, {}),
    "text-config-head-dim-64": ({"head_dim": 64}, {}),
    "text-config-kv-heads-4": ({"num_key_value_heads": 4}, {}),
    "text-config-vocab-2048": ({"vocab_size": 2048}, {}),
    "head-dim-100": (None, {"head_dim": 100}),
    "partial-rotary-half": (None, {"partial_rotary_factor": 0.5}),
}


def record_path(version: str) -> Path:
    return DATA / f"vllm-{version}.json"


def config(case: str) -> dict[str, Any]:
    """Case ``case``'s config.json."""
    tiny: dict[str, Any] = json.loads(TINY.read_text())
    text, top = CASES[case]
    out = {**tiny, **top}
    if text is not None:
        out["text_config"] = {"model_type": "qwen3", **{k: tiny[k] for k in TEXT_KEYS}, **text}
    return out
