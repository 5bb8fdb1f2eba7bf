"""The Bailing-V2.5 cases beyond the 24 flag sets (``BailingMoeV2_5ForCausalLM``,
``bailing_moe_linear.py``): its tiny config (``data/architectures/``) under the flags that change the
linear-attention state or add layers: ``--mamba-cache-dtype`` (the state's dtype), ``--mamba-cache-mode
all`` (the class has no mamba prefix caching: ``align``), its MTP module (``--speculative-config``
method ``mtp``: ``bailing_moe_mtp.py``'s MLA layer numbered after the target's), TP with PP.
``record_bailing_linear.py`` records a release's engine start on them into
``data/bailing-linear/vllm-<release>.json``; ``test_bailing_linear.py`` compares dryboot.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "bailing-linear"
TINY = HERE / "data" / "architectures" / "BailingMoeV2_5ForCausalLM.json"
#: releases recorded (the others' transformers cannot read its config: test_release_architectures)
RELEASES = ("0.28.0", "0.33.0")

BASE = ["--max-model-len", "8192", "--kv-cache-memory-bytes", "2000000000"]
KEPT_FIELDS = ("ok", "stage", "error", "block_size", "groups", "num_blocks", "tokens", "concurrency", "max_model_len")


def _mtp(tokens: int) -> str:
    return json.dumps({"method": "mtp", "num_speculative_tokens": tokens})


#: case id -> (config name, flags)
CASES: dict[str, tuple[str, list[str]]] = {
    "mamba-f32": ("tiny", [*BASE, "--mamba-cache-dtype", "float32"]),
    "mamba-f16-kv-fp8": ("tiny", [*BASE, "--mamba-cache-dtype", "float16", "--kv-cache-dtype", "fp8"]),
    "mode-all": ("tiny", [*BASE, "--mamba-cache-mode", "all", "--enable-prefix-caching"]),
    "mtp-1": ("tiny", [*BASE, "--speculative-config", _mtp(1)]),
    "mtp-2": ("tiny", [*BASE, "--speculative-config", _mtp(2)]),
    "mtp-1-tp2-fp8": ("tiny", [*BASE, "-tp", "2", "--kv-cache-dtype", "fp8", "--speculative-config", _mtp(1)]),
    "mtp-2-layers": ("tiny-mtp2", [*BASE, "--speculative-config", _mtp(2)]),
    "tp4-pp2": ("tiny", [*BASE, "-tp", "4", "-pp", "2"]),
}


def config(name: str) -> dict[str, Any]:
    """The tiny config, or it with two MTP layers (``num_nextn_predict_layers`` 2)."""
    tiny = dict(json.loads(TINY.read_text()))
    if name == "tiny":
        return tiny
    assert name == "tiny-mtp2", name
    return {**tiny, "num_nextn_predict_layers": 2}


def record_path(version: str) -> Path:
    return DATA / f"vllm-{version}.json"
