"""The Gemma-4 cases behind ``VersionRules.fa_quantized_mm_prefix_sm90`` (vLLM 0.31+ on SM 9.0: an fp8
cache of a multimodal-prefix LM is not FlashAttention's; a ``--block-size`` FlashAttention 4's 64-token
pages do not divide precludes the Triton/FlashAttention composite): two stand-in configs
(``data/gemma4-fp8-mm-prefix/SOURCE``) under three block sizes, recorded on 0.30.0, 0.31.0 and 0.33.0."""

from __future__ import annotations

from pathlib import Path

import e2e_harness as H

DATA = Path(__file__).parent / "data" / "gemma4-fp8-mm-prefix"
RECORDS = DATA / "recorded.json"
RELEASES = ("0.30.0", "0.31.0", "0.33.0")
KEPT = ("ok", "block_size", "groups", "num_blocks", "tokens", "concurrency", "max_model_len", "error", "stage")
BASE = [
    "--max-model-len",
    "65536",
    "--kv-cache-memory-bytes",
    "906503250",
    "--tensor-parallel-size",
    "2",
    "--kv-cache-dtype",
    "fp8",
    "--no-enable-prefix-caching",
]
BLOCKS: dict[str, list[str]] = {"default": [], "block16": ["--block-size", "16"], "block128": ["--block-size", "128"]}
CONFIGS = ("gemma4-mm", "gemma4-text")


def cases(workdir: Path) -> list[H.Case]:
    """Every (config, block size) case, its config written under ``workdir`` as vLLM takes it."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = []
    for name in CONFIGS:
        model = H.materialize_file(workdir, DATA / f"{name}.config.json")
        for tag, extra in BLOCKS.items():
            out.append(H.Case(id=f"{name}-{tag}", family="gemma4", model=model, argv=[*BASE, *extra], source=name))
    return out
