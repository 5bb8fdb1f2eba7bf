"""The tiny Dots3-Note configs (``Dots3NoteForCausalLM``, vLLM 0.33.0's ``vllm/models/dots3_note``) that
back its refusal (``refusals.DOTS3_NOTE``), and the flags each is started with: ``record_dots3_note.py``
records vLLM 0.33.0's engine start, ``test_dots3_note.py`` checks the refusal's words against it.

The configs (``data/dots3-note/configs/<name>.json``, written for these tests: no published config is
stored) carry no ``vision_config`` / ``audio_config`` (the model class then builds no tower); the model
directory gets an ``added_tokens.json`` naming the image padding token, which the model class reads
while it is built. ``note``: sliding-window MLA layers (576 + 64 latent) beside DeepSeek sparse-MLA
layers (512 + 64); ``note-full``: only the sparse layers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "dots3-note"
CONFIGS = DATA / "configs"
VERSION = "0.33.0"
RECORD = DATA / f"vllm-{VERSION}.json"
#: the file beside config.json (``Dots3NoteForCausalLM.__init__`` reads the ``<|imgpad|>`` token)
ADDED_TOKENS = {"<|imgpad|>": 1000}

BASE = ["--kv-cache-memory-bytes", "4G", "--max-model-len", "8192"]

#: case id -> (config name, flags)
CASES: dict[str, tuple[str, list[str]]] = {
    "note": ("note", BASE),
    "note-fp8": ("note", [*BASE, "--kv-cache-dtype", "fp8"]),
    "note-tp2": ("note", [*BASE, "--tensor-parallel-size", "2"]),
    "note-len2048": ("note", ["--kv-cache-memory-bytes", "1G", "--max-model-len", "2048"]),
    "note-full": ("note-full", BASE),
}


def config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return data


def recorded() -> dict[str, dict[str, Any]]:
    doc: dict[str, Any] = json.loads(RECORD.read_text())
    assert doc["vllm"] == VERSION
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases
