"""HY V4's config reading (``dryboot.vllm.models.hy_v4``): which layers are sparse, which keep an
indexer cache, the backend its learned sinks hand the sparse layers, and what vLLM 0.33.0 refuses
in its words (read in ``vllm/models/hy_v4/nvidia/attention.py`` and vLLM's ``HYV4Config``; the
geometry is checked against the recorded engine starts in ``tests/fidelity/test_hy_v4.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from config_changes import changed
from dryboot.errors import InputError
from dryboot.vllm.config.hf import LayerKind, extra_of
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import parse_gpu
from dryboot.vllm.models import hy_v4
from dryboot.vllm.transformers_utils.config import geometry_from_config
from dryboot.vllm.versions import rules_for

CONFIGS = Path(__file__).resolve().parent / "fidelity" / "data" / "hy-v4" / "configs"


def _config(name: str = "hyv4-sparse", **changes: Any) -> dict[str, Any]:
    return changed(json.loads((CONFIGS / f"{name}.json").read_text()), changes)


def test_default_indexer_types_are_full_at_0_and_every_fourth_from_1() -> None:
    assert hy_v4.default_indexer_types(10) == (
        "full",
        "full",
        "shared",
        "shared",
        "shared",
        "full",
        "shared",
        "shared",
        "shared",
        "full",
    )


def test_sparse_layers_keep_an_indexer_where_indexer_types_is_full() -> None:
    model = geometry_from_config(_config("hyv4-indexers"))
    mla, idx = LayerKind.MLA, LayerKind.MLA_INDEXER
    assert model.layer_kinds == (idx, mla, mla, mla, idx, mla, mla, idx, mla)
    assert model.sparse_mla and model.attn.indexer_head_size == 132
    extra = extra_of(model, hy_v4.SparseLayers)
    assert extra is not None and extra.sinks and not extra.indexed and extra.refusal is None
    # 0.29.0 / 0.30.0 build every layer dense MLA (their transformers renames the sparse layer type)
    assert extra.dense is not None and extra.dense.layer_kinds == (mla,) * 6 and not extra.dense.sparse_mla
    for version in ("0.29.0", "0.30.0"):
        assert hy_v4.for_release(model, rules_for(version)) is extra.dense
    assert hy_v4.for_release(model, rules_for("0.31.0")) is model
    # HYV4Config's num_nextn_predict_layers (1): the MTP module counted, refused as a drafter
    assert model.mtp.num_mtp_layers == 1 and model.mtp.mtp_kind is None


def test_without_layer_types_no_layer_is_sparse() -> None:
    model = geometry_from_config(_config("hyv4-dense"))
    assert model.layer_kinds == (LayerKind.MLA,) * 4 and not model.sparse_mla
    assert hy_v4.backend_assumption(model) is None


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"indexer_types": ["full", "shared", "full"]}, "expected 4, got 3"),
        ({"indexer_types": ["full", "shared", "full", "local"]}, "only supports 'full' and 'shared', got ['local']"),
        ({"layer_types": ["full_attention", "sparse", "sparse", "sparse"]}, "dense MLA layers beside sparse ones"),
        ({"layer_types": ["sliding_attention"] * 4}, "are not verified"),
        ({"q_lora_rank": None, "layer_types": ["sparse"] * 4}, None),
    ],
)
def test_refusals(changes: dict[str, Any], words: str | None) -> None:
    cfg = _config(**changes)
    if words is None:
        # q_lora_rank left out takes HYV4Config's 1536: planned
        assert geometry_from_config(cfg).sparse_mla
        return
    if "layer_types" in changes and "sparse" not in changes["layer_types"]:
        with pytest.raises(InputError, match=words):
            geometry_from_config(cfg)  # no reading of any release takes it
        return
    # refused where the layers are built as layer_types says (0.31.0+); 0.29.0 / 0.30.0 build every
    # layer dense MLA (no indexer_types check: recorded, tests/fidelity/test_hy_v4.py)
    model = geometry_from_config(cfg)
    for version in ("0.31.0", "0.32.0", "0.33.0"):
        with pytest.raises(InputError) as err:
            hy_v4.for_release(model, rules_for(version))
        assert words in str(err.value)
    for version in ("0.29.0", "0.30.0"):
        assert not hy_v4.for_release(model, rules_for(version)).sparse_mla


def test_indexed_attention_per_release() -> None:
    """transformers' name of a sparse layer: sparse on 0.32.0+, refused by 0.31.0's transformers'
    layer-type validation, dense (as every layer) on 0.29.0 / 0.30.0; 0.28.0 lacks HY V4 (refused
    as such later, not by this)."""
    model = geometry_from_config(_config("hyv4-indexed"))
    assert model.sparse_mla
    assert hy_v4.for_release(model, rules_for("0.33.0")) is model
    with pytest.raises(InputError, match="validate_layer_type"):
        hy_v4.for_release(model, rules_for("0.31.0"))
    assert not hy_v4.for_release(model, rules_for("0.30.0")).sparse_mla
    assert hy_v4.for_release(model, rules_for("0.28.0")) is model


def test_the_dense_releases_hand_no_sink_backend() -> None:
    """On 0.30.0 the sparse config's layers are dense: no FLASHMLA_SPARSE handed, no sparse probe."""
    model = geometry_from_config(_config())
    args = EngineArgs(gpu=parse_gpu("A100-80GB"), vllm_version="0.30.0")
    hy_v4.check_backend(model, args)
    h200 = EngineArgs(gpu=parse_gpu("H200"), vllm_version="0.30.0")
    assert hy_v4.engine_args(model, h200) is h200
    assert hy_v4.engine_args(model, h200.evolve(vllm_version="0.33.0")).attention_backend == "FLASHMLA_SPARSE"


@pytest.mark.parametrize(
    ("gpu", "flags", "words", "handed"),
    [
        ("H200", {}, None, "FLASHMLA_SPARSE"),
        ("B200", {"kv_cache_dtype": "fp8"}, None, "FLASHMLA_SPARSE"),
        ("H200", {"block_size": 128}, None, "FLASHMLA_SPARSE"),
        # the sinks dropped: vLLM's own selection (the flags as given)
        ("RTX 5090", {}, "compute capability 12.0", None),
        ("H200", {"kv_cache_dtype": "fp8_e4m3"}, "KV cache dtype fp8_e4m3", None),
        ("H200", {"dtype": "float16"}, "model dtype float16", None),
        ("H200", {"attention_backend": "FLASH_ATTN_MLA_SPARSE"}, None, "FLASHMLA_SPARSE"),
        ("B200", {"block_size": 32}, "block size 32", None),
        # no sparse MLA backend at all: HYV4MLAAttention's probe fails
        ("A100-80GB", {}, "compute capability 8.0", "RuntimeError"),
        ("H200", {"block_size": 16}, "block size 16", "RuntimeError"),
    ],
)
def test_sink_backend(gpu: str, flags: dict[str, Any], words: str | None, handed: str | None) -> None:
    model = geometry_from_config(_config())
    args = EngineArgs(gpu=parse_gpu(gpu), **flags)
    why = hy_v4.sink_backend_refusal(model, args)
    assert why is None if words is None else words in str(why)
    if handed == "RuntimeError":
        # the flags as given, refused when the model is built (HYV4MLAAttention's probe)
        assert hy_v4.engine_args(model, args) is args
        with pytest.raises(InputError, match="no valid sparse MLA backend is available"):
            hy_v4.check_backend(model, args)
        return
    hy_v4.check_backend(model, args)
    assert hy_v4.engine_args(model, args).attention_backend == handed


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        ({"attention_backend": "FLASH_ATTN"}, "no valid sparse MLA backend is available"),
        ({"kv_cache_dtype": "fp8_e5m2"}, "no valid sparse MLA backend is available"),
        ({"kv_cache_dtype": "nvfp4"}, "nvfp4 KV cache is not supported with MLA"),
    ],
)
def test_probe_refusals(flags: dict[str, Any], words: str) -> None:
    model = geometry_from_config(_config())
    args = EngineArgs(gpu=parse_gpu("H200"), **flags)
    assert hy_v4.engine_args(model, args) is args
    with pytest.raises(InputError, match=words):
        hy_v4.check_backend(model, args)


def test_without_sinks_the_selection_is_vllms() -> None:
    model = geometry_from_config(_config("hyv4-nosink"))
    args = EngineArgs(gpu=parse_gpu("H200"), attention_backend="FLASH_ATTN_MLA_SPARSE")
    assert hy_v4.engine_args(model, args) is args and hy_v4.backend_assumption(model) is None


def test_weights_need_the_gpu_for_sparse_sinks_only() -> None:
    """The weights are sized (tests/fidelity/test_weights_hy_v4.py); a sparse layer's learnable
    sink's dtype needs the GPU, a dense layer's (bfloat16) does not; dense layers beside sparse ones
    are sized."""
    import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families)
    from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

    with pytest.raises(InputError, match="name the GPU"):
        rank_weights(_config(), Parallel(vllm_version="0.33.0"), max_num_batched_tokens=8192)
    mixed = rank_weights(
        _config("hyv4-mixed"), Parallel(capability=(9, 0), vllm_version="0.33.0"), max_num_batched_tokens=8192
    )
    dense = rank_weights(_config("hyv4-dense"), Parallel(vllm_version="0.33.0"), max_num_batched_tokens=8192)
    assert (mixed.param_bytes, dense.param_bytes) == (63809516, 63478700)  # recorded-0.33.0-hy-v4-configs.json
