"""MiniMax-M3's KV geometry (:mod:`dryboot.vllm.models.minimax_m3`) against vLLM's own engine start
on the published MiniMax-M3-MXFP8 config (``data/newest/``, recorded by ``record_newest.py`` on
vLLM 0.28.0 and 0.33.0, H100 and A100, a pinned 8,000,000,000 B budget): one uniform-type group
of every main cache and indexer cache, its block size, the blocks the budget holds and the tokens."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import newest_cases as N

from dryboot.errors import InputError
from dryboot.vllm.models import minimax_m3 as M

NAME = "MiniMaxAI--MiniMax-M3-MXFP8"
TEXT = json.loads((N.CONFIGS / NAME / "config.json").read_text())["text_config"]


def _flag(argv: list[str], name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else default


def _cases() -> list[tuple[str, str, dict]]:
    return [(v, cid, case) for v in N.VERSIONS for cid, case in sorted(N.recorded(v).items()) if NAME in cid]


def test_layers_of_the_published_config() -> None:
    layers = M.read_layers(TEXT)
    assert (len(layers.sparse), layers.num_sparse, layers.num_caches) == (60, 57, 117)


@pytest.mark.parametrize(("version", "cid", "case"), _cases(), ids=lambda x: x if isinstance(x, str) else "")
def test_blocks_and_tokens_match_vllm(version: str, cid: str, case: dict) -> None:
    vllm = case["vllm"]
    assert vllm["ok"], cid
    argv = case["argv"]
    tp = int(_flag(argv, "-tp", "1"))
    kv_bytes = 1 if _flag(argv, "--kv-cache-dtype", "auto") == "fp8" else 2
    block = M.block_size(version)
    pages = M.layer_pages(M.read_layers(TEXT), block=block, tensor_parallel_size=tp, kv_cache_bytes=kv_bytes)
    budget = int(_flag(argv, "--kv-cache-memory-bytes", "0"))
    num_blocks = budget // M.block_bytes(pages)
    [(kind, group_block, page, n)] = vllm["groups"]
    assert (kind, group_block, n) == ("FullAttention", block, len(pages))
    assert page == max(p for _, p in pages)
    assert (block, num_blocks, num_blocks * block) == (vllm["block_size"], vllm["num_blocks"], vllm["tokens"])


def test_refusals() -> None:
    layers = M.read_layers(TEXT)
    with pytest.raises(InputError):
        M.layer_pages(layers, block=16, tensor_parallel_size=3, kv_cache_bytes=2)
    with pytest.raises(InputError):
        M.layer_pages(layers, block=16, tensor_parallel_size=1, kv_cache_bytes=2, indexer_kv_dtype="nvfp4")
    with pytest.raises(InputError):
        M.read_layers({**TEXT, "head_dim": None})
