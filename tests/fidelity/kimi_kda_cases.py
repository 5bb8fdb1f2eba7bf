"""The Kimi Delta Attention cases behind dryboot's KDA state rules (``kimi_linear.kda_recurrent_dtype``,
``kda_prefill_checkpoint_blocks``): Kimi-Linear's and Kimi-K3's tiny configs
(``data/architectures/``), Kimi-K3's without ``gate_lower_bound`` and the published Kimi-K3 config
(``tests/data/configs/public/moonshotai--Kimi-K3``), under the flags that change
the KDA state: ``--mamba-ssm-cache-dtype`` (the recurrent state's dtype, and vLLM's refusals of it),
``--dtype float16`` and no gate bound (no FlashKDA: no prefill checkpoint block), prefix caching off
(``none`` mode: the checkpoint block not held). ``record_kimi_kda.py`` records a release's engine start
on them into ``data/kimi-kda/vllm-<release>.json``; ``test_kimi_kda.py`` compares dryboot.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "kimi-kda"
ARCHS = HERE / "data" / "architectures"
#: the published Kimi-K3 config (the public corpus's copy, with its SOURCE)
KIMI_K3 = HERE.parent / "data" / "configs" / "public" / "moonshotai--Kimi-K3" / "config.json"
#: releases recorded: 0.28.0 (float32 KDA state whatever the flag), 0.30.0 (the flag taken),
#: 0.33.0 (Kimi-K3's KimiK3DeltaAttention too)
RELEASES = ("0.28.0", "0.30.0", "0.33.0")

NGRAM = '{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4}'
BASE = ["--max-model-len", "2048", "--kv-cache-memory-bytes", "1000000000"]
KEPT_FIELDS = ("ok", "stage", "error", "block_size", "groups", "num_blocks", "tokens", "concurrency", "max_model_len")

#: case id -> (config name, flags); the ``k3-`` cases need Kimi-K3 (0.33.0's registry)
CASES: dict[str, tuple[str, list[str]]] = {
    "kl-default": ("kimi-linear", BASE),
    "kl-ssm-fp32": ("kimi-linear", [*BASE, "--mamba-ssm-cache-dtype", "float32"]),
    "kl-ssm-bf16": ("kimi-linear", [*BASE, "--mamba-ssm-cache-dtype", "bfloat16"]),
    "kl-ssm-fp16": ("kimi-linear", [*BASE, "--mamba-ssm-cache-dtype", "float16"]),
    "k3-default": ("kimi-k3", BASE),
    "k3-no-prefix-caching": ("kimi-k3", [*BASE, "--no-enable-prefix-caching"]),
    "k3-ssm-bf16": ("kimi-k3", [*BASE, "--mamba-ssm-cache-dtype", "bfloat16"]),
    "k3-ssm-fp16": ("kimi-k3", [*BASE, "--mamba-ssm-cache-dtype", "float16"]),
    "k3-dtype-fp16": ("kimi-k3", [*BASE, "--dtype", "float16"]),
    "k3-no-gate-bound": ("kimi-k3-no-bound", BASE),
    "k3-tp2-spec": ("kimi-k3", [*BASE, "-tp", "2", "--speculative-config", NGRAM]),
    # the published checkpoint's config (93 layers: 69 KDA, 24 MLA) at TP 8 and its full length
    "k3-published-tp8": (
        "moonshotai--Kimi-K3",
        ["-tp", "8", "--max-model-len", "262144", "--kv-cache-memory-bytes", "20000000000"],
    ),
}


def config(name: str) -> dict[str, Any]:
    """The config of ``name``: a tiny config of ``data/architectures/``, or Kimi-K3's without its
    KDA gate's lower bound."""
    if name == "moonshotai--Kimi-K3":
        return dict(json.loads(KIMI_K3.read_text()))
    if name == "kimi-linear":
        return dict(json.loads((ARCHS / "KimiLinearForCausalLM.json").read_text()))
    k3 = dict(json.loads((ARCHS / "KimiK3ForConditionalGeneration.json").read_text()))
    if name == "kimi-k3":
        return k3
    assert name == "kimi-k3-no-bound", name
    text = dict(k3["text_config"])
    text["linear_attn_config"] = {k: v for k, v in text["linear_attn_config"].items() if k != "gate_lower_bound"}
    return {**k3, "text_config": text}


def cases_for(version: str) -> dict[str, tuple[str, list[str]]]:
    """The cases release ``version`` is recorded on (Kimi-K3's on 0.33.0 only)."""
    return {cid: c for cid, c in CASES.items() if version == "0.33.0" or not cid.startswith("k3-")}


def record_path(version: str) -> Path:
    return DATA / f"vllm-{version}.json"
