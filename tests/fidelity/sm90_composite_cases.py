"""The cases behind dryboot's ``TRITON_FLASH_ATTN`` (vLLM 0.30+'s Triton image-mask / FlashAttention causal
composite, which a multimodal-prefix LM's layers try first on SM 9.x): Gemma-4's published 26B-A4B and
31B NVFP4 configs with the frontier's stand-in tokenizer (``gemma4-mm``, so that vLLM starts them
multimodal, mm-prefix attention on), and the tiny ``Gemma4ForCausalLM`` / ``Gemma3ForConditionalGeneration``
configs, under the flags that move the choice: the KV cache dtype, a block size FlashAttention 4's
64-token fp8 pages do not divide (the composite precluded), text-only serving, a named backend, TP and PP.
Recorded on an H100 for 0.30.0-0.33.0 and an H200 for 0.31.0 (``record_sm90_composite.py``): the figures,
the "Setting kv cache block size" lines, and the backends vLLM logs ("Using X attention backend").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import frontier_cases as F

DATA = Path(__file__).resolve().parent / "data" / "sm90-composite"
#: (GPU, releases recorded on it)
RECORDED_ON: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("H100", ("0.30.0", "0.31.0", "0.32.0", "0.33.0")),
    ("H200", ("0.31.0",)),
)
RELEASES = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")
BUDGET = "3348327976"
FP8 = ("--kv-cache-dtype", "fp8")
NGRAM = json.dumps({"method": "ngram", "num_speculative_tokens": 3})
#: (model, files, flag sets)
_MODELS: tuple[tuple[str, str | None, tuple[tuple[str, ...], ...]], ...] = (
    (
        "corpus:google--gemma-4-26B-A4B",
        "gemma4-mm",
        (
            (),
            FP8,
            (*FP8, "--block-size", "16"),
            (*FP8, "--block-size", "128"),
            ("--block-size", "32"),
            ("--language-model-only",),
            (*FP8, "--language-model-only"),
            (*FP8, "-tp", "2"),
            (*FP8, "-pp", "2"),
            ("--attention-backend", "TRITON_ATTN"),
        ),
    ),
    ("corpus:nvidia--Gemma-4-31B-IT-NVFP4", "gemma4-mm", ((), FP8)),
    (
        "arch:Gemma4ForCausalLM",
        None,
        (
            (),
            FP8,
            (*FP8, "-pp", "4"),
            (*FP8, "--block-size", "32"),
            # test_architectures' flag set #18 of this config under four stages: its sliding layers
            # (head size 256) address FlashAttention's 16-multiples, not the 64-token fp8 pages of its
            # head-512 layers, so they start at the 256-token block
            (*FP8, "-pp", "4", "--block-size", "256", "--speculative-config", NGRAM),
            (*FP8, "-pp", "4", "--block-size", "128"),
        ),
    ),
    ("arch:Gemma3ForConditionalGeneration", None, ((), FP8)),
)


def cases(gpu: str) -> list[dict[str, Any]]:
    """Every case on ``gpu``: ``{id, model, files, argv, gpu}`` (``frontier_cases.materialize`` lays
    the model out)."""
    out = []
    for model, files, flag_sets in _MODELS:
        for i, flags in enumerate(flag_sets):
            out.append(
                {
                    "id": f"{gpu}|{model.split(':', 1)[1]}#{i}",
                    "model": model,
                    "files": files,
                    "argv": ["--max-model-len", "8192", *flags, "--kv-cache-memory-bytes", BUDGET],
                    "gpu": gpu,
                }
            )
    return out


def recorded(version: str) -> dict[str, dict[str, Any]]:
    """``data/sm90-composite/vllm-X.json``'s cases (empty when not recorded)."""
    path = DATA / f"vllm-{version}.json"
    if not path.exists():
        return {}
    cases_: dict[str, dict[str, Any]] = json.loads(path.read_text())["cases"]
    return cases_


materialize = F.materialize
argv = F.argv
