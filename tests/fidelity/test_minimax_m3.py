"""MiniMax-M3's layer layout (:func:`dryboot.vllm.models.minimax_m3.read`) on the published
MiniMax-M3-MXFP8 config (``data/newest/``), its config reading's refusals, and what vLLM's
recorded engine start (``record_newest.py``, vLLM 0.28.0 and 0.33.0) says of the group: one
uniform-type group of every main cache and indexer cache. The figures themselves are checked by
``test_newest.py`` and ``test_architectures.py``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

import newest_cases as N

from dryboot.errors import InputError
from dryboot.vllm.config.hf import LayerKind
from dryboot.vllm.models import minimax_m3 as M
from dryboot.vllm.transformers_utils.config import geometry_from_config

NAME = "MiniMaxAI--MiniMax-M3-MXFP8"
CONFIG = json.loads((N.CONFIGS / NAME / "config.json").read_text())


def test_published_layout() -> None:
    model = geometry_from_config(CONFIG, "config.json")
    kinds = model.layer_kinds
    assert (kinds.count(LayerKind.FULL), kinds.count(LayerKind.MM3_INDEXER), kinds.count(LayerKind.MM3_SPARSE)) == (
        3,
        57,
        57,
    )
    # a sparse layer's indexer cache registers before the layer's own cache
    assert model.layer_name(3) == "model.layers.3.self_attn.attn.index_cache"
    assert model.layer_name(4) == "model.layers.3.self_attn.attn"


@pytest.mark.parametrize("version", N.VERSIONS)
def test_vllm_groups_every_cache_once(version: str) -> None:
    """vLLM's recorded groups: one group of 117 layers (60 main caches + 57 indexer caches)."""
    for cid, case in N.recorded(version).items():
        if NAME in cid:
            [(_, _, _, n)] = case["vllm"]["groups"]
            assert n == 117, cid


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "sparse_attention_freq",
                "sparse_index_dim",
                "sparse_topk_blocks",
                "sparse_block_size",
                "sparse_num_index_heads",
            ]
        ),
        st.one_of(st.none(), st.integers(-3, 300), st.lists(st.integers(-1, 2), max_size=8), st.text(max_size=3)),
    )
)
def test_read_layers_answers_or_refuses(cfg: dict[str, Any]) -> None:
    text = {"num_hidden_layers": 6, "num_key_value_heads": 2, "head_dim": 128, "sparse_attention_config": cfg}
    try:
        layers = M.read_layers(text)
    except InputError:
        return
    assert len(layers.sparse) == 6
    assert layers.num_caches == 6 + layers.num_sparse


def test_refusals() -> None:
    text = CONFIG["text_config"]
    with pytest.raises(InputError):
        M.read_layers({**text, "head_dim": None})
    with pytest.raises(InputError):
        M.read_layers({**text, "sparse_attention_config": {"sparse_attention_freq": [0, 1]}})
    with pytest.raises(InputError):
        M.read_layers({**text, "sparse_attention_config": {"sparse_attention_freq": "all", "sparse_index_dim": 128}})


def test_default_block_on_028_fails_in_vllms_words() -> None:
    """vLLM 0.28.0 keeps block 16 (the dense first layer's backend), logs the KV cache size, then
    its worker finds no kernel block of 16 for the 128-token MiniMax-M3 backends and raises
    ``ValueError("No common block size for 16. ")`` (``v1/worker/utils.py``
    ``select_common_block_size``): the plan says so with vLLM's words; at ``--block-size 128``
    every invariant holds."""
    from dryboot.planner.plan import plan
    from dryboot.vllm.engine_args import EngineArgs

    model = geometry_from_config(CONFIG, "config.json")
    args = EngineArgs(
        vllm_version="0.28.0", max_model_len=32768, kv_cache_memory_bytes=8_000_000_000, tensor_parallel_size=8
    )
    [bad] = [i for i in plan(model, args).invariants if not i.ok]
    assert bad.name == "kernel-block-size" and bad.detail.startswith("No common block size for 16: "), bad
    assert "ValueError at engine start" in bad.consequence
    assert all(i.ok for i in plan(model, args.evolve(block_size=128)).invariants)
