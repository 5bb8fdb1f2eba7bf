"""The tiny Dots3-Note configs (``Dots3NoteForCausalLM``, vLLM 0.33.0's ``vllm/models/dots3_note``)
that back its plan (``models/dots3_note.py``), and the flags and GPU each is started with:
``record_dots3_note.py`` records vLLM 0.33.0's engine start, ``test_dots3_note.py`` checks dryboot
against it.

The configs (``data/dots3-note/configs/<name>.json``) are stand-ins written for these tests: no published
config.json of Dots3-Note was found (its checkpoint is dots-studio/dots3-note-prev: 46 layers, 13 sparse
beside 33 sliding). They carry no ``vision_config`` / ``audio_config`` (the model class then builds no
tower); the model directory gets an ``added_tokens.json`` naming the image padding token, which the model
class reads while it is built. ``note``: sliding-window MLA layers (576 + 64 latent) beside DeepSeek
sparse-MLA layers (512 + 64, padded to 640); ``note-8``: three sliding layers to each sparse one;
``note-full``: only the sparse layers; ``note-46``: the checkpoint's 46 layers, 13 sparse among 33
sliding (a stand-in pattern); ``note-mtp``: ``note`` with one MTP layer; ``note-swa4``: four sliding
query heads. A case with a GPU runs the oracle as that row of ``gpus.toml``
(``tests/data/gpus/run_oracle_as.py``); without one, as its default H200.
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

MTP = '{"method": "mtp", "num_speculative_tokens": 1}'
HIDDEN = (
    '{"method": "extract_hidden_states", "num_speculative_tokens": 1, '
    '"draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": [0, 1]}}}'
)

#: case id -> (config name, flags, GPU or None: the oracle's default H200)
CASES: dict[str, tuple[str, list[str], str | None]] = {
    "note": ("note", BASE, None),
    "note-fp8": ("note", [*BASE, "--kv-cache-dtype", "fp8"], None),
    "note-tp2": ("note", [*BASE, "--tensor-parallel-size", "2"], None),
    "note-len2048": ("note", ["--kv-cache-memory-bytes", "1G", "--max-model-len", "2048"], None),
    "note-full": ("note-full", BASE, None),
    "note-tp4": ("note", [*BASE, "--tensor-parallel-size", "4"], None),
    "note-tp8": ("note", [*BASE, "--tensor-parallel-size", "8"], None),
    "note-pp2": ("note", [*BASE, "--pipeline-parallel-size", "2"], None),
    "note-bf16": ("note", [*BASE, "--kv-cache-dtype", "bfloat16"], None),
    "note-fp8-e4m3": ("note", [*BASE, "--kv-cache-dtype", "fp8_e4m3"], None),
    "note-block32": ("note", [*BASE, "--block-size", "32"], None),
    "note-block128": ("note", [*BASE, "--block-size", "128"], None),
    "note-block256": ("note", [*BASE, "--block-size", "256"], None),
    "note-batched2048": ("note", [*BASE, "--max-num-batched-tokens", "2048"], None),
    "note-auto-len": ("note", ["--kv-cache-memory-bytes", "1G", "--max-model-len", "-1"], None),
    "note-no-prefix": ("note", [*BASE, "--no-enable-prefix-caching"], None),
    "note-override": ("note", [*BASE, "--num-gpu-blocks-override", "1000"], None),
    "note-small": ("note", ["--kv-cache-memory-bytes", "20M", "--max-model-len", "8192"], None),
    "note-h100": ("note", BASE, "H100"),
    "note-b200": ("note", BASE, "B200"),
    "note-a100": ("note", BASE, "A100-80GB"),
    "note-rtx5090": ("note", BASE, "RTX 5090"),
    "note-b300": ("note", BASE, "B300"),
    "note-8": ("note-8", BASE, None),
    "note-8-tp2": ("note-8", [*BASE, "--tensor-parallel-size", "2", "--max-num-batched-tokens", "1024"], None),
    "note-8-pp2": ("note-8", [*BASE, "--pipeline-parallel-size", "2"], None),
    "note-full-tp4": ("note-full", [*BASE, "--tensor-parallel-size", "4", "--block-size", "128"], None),
    "note-mtp": ("note-mtp", [*BASE, "--speculative-config", MTP], None),
    "note-hidden": ("note", [*BASE, "--speculative-config", HIDDEN], None),
    "note-8-hidden-pp2": ("note-8", [*BASE, "--speculative-config", HIDDEN, "--pipeline-parallel-size", "2"], None),
    "note-swa4-tp8": ("note-swa4", [*BASE, "--tensor-parallel-size", "8"], None),
    "note-46": ("note-46", BASE, None),
    "note-46-pp4": ("note-46", [*BASE, "--pipeline-parallel-size", "4", "--max-num-batched-tokens", "512"], None),
}


def config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return data


def recorded() -> dict[str, dict[str, Any]]:
    doc: dict[str, Any] = json.loads(RECORD.read_text())
    assert doc["vllm"] == VERSION
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases
