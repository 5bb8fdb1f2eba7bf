"""FlashAttention's FA4 head-256 kernel (vLLM 0.29.0+, ``fa_utils.py`` ``uses_fa4_hd256_kernel``): the pure
rules and where the backend selection takes them. The figures vLLM gave are checked against its own engine
start in ``tests/fidelity/test_fa4_hd256.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dryboot.errors import InputError
from dryboot.vllm.backends import (
    BACKENDS,
    KernelBlock,
    fa4_hd256_backend,
    fa4_hd256_fallback_reason,
    uses_fa4_hd256_kernel,
)
from dryboot.vllm.config.resolve import Drafter, create_engine_config
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import parse_gpu
from dryboot.vllm.transformers_utils.config import geometry_from_config

CONFIGS = Path(__file__).resolve().parent / "fidelity" / "data" / "fa4-hd256" / "configs"
GEMMA4 = Path(__file__).resolve().parent / "fidelity" / "data" / "releases" / "fa4fp8" / "config.json"


def _config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return data


def _engine(data: dict[str, Any], version: str, gpu: str = "B200", **flags: Any) -> Any:
    args = EngineArgs(vllm_version=version, gpu=parse_gpu(gpu), attention_backend="FLASH_ATTN", **flags)
    return create_engine_config(geometry_from_config(data), args, None)


def test_kernel_is_head_256_on_sm_10_and_11_only() -> None:
    assert uses_fa4_hd256_kernel(256, (10, 0)) and uses_fa4_hd256_kernel(256, (11, 0))
    assert not uses_fa4_hd256_kernel(256, (9, 0)) and not uses_fa4_hd256_kernel(256, (12, 0))
    assert not uses_fa4_hd256_kernel(128, (10, 0)) and not uses_fa4_hd256_kernel(512, (10, 0))


def test_fallback_reasons_in_vllm_order() -> None:
    base: dict[str, Any] = dict(
        soft_cap=False, kv_cache_dtype="auto", mm_prefix=False, rswa=False, decode_context_parallel_size=1
    )
    assert fa4_hd256_fallback_reason(**base) is None
    assert fa4_hd256_fallback_reason(**{**base, "soft_cap": True, "kv_cache_dtype": "fp8"}) == "logits soft capping"
    assert fa4_hd256_fallback_reason(**{**base, "kv_cache_dtype": "fp8", "mm_prefix": True}) == (
        "quantized KV cache dtype fp8"
    )
    assert fa4_hd256_fallback_reason(**{**base, "mm_prefix": True}) == "mm_prefix bidirectional attention"
    assert fa4_hd256_fallback_reason(**{**base, "rswa": True}) == "R-SWA"
    assert fa4_hd256_fallback_reason(**{**base, "decode_context_parallel_size": 2}) == "decode context parallelism"


def test_backend_pages_per_head_size() -> None:
    fa = BACKENDS["FLASH_ATTN"]
    pages = (KernelBlock(128),)
    both = fa4_hd256_backend(fa, 128, model_level=True, layer_level=True)
    assert both.preferred_block_size(16) == 128 and not both.supports_block_size(16)
    assert both.for_head(256).kernel_blocks == pages and both.for_head(512).kernel_blocks == fa.kernel_blocks
    # 0.29 / 0.30: a layer's spec asked without the engine's config gets the 16-multiples
    model_only = fa4_hd256_backend(fa, 128, model_level=True, layer_level=False)
    assert model_only.kernel_blocks == pages and model_only.for_head(256).kernel_blocks == fa.kernel_blocks
    # 0.31+ with a model-level fallback: only a 256-wide layer's own spec gets the pages
    layer_only = fa4_hd256_backend(fa, 128, model_level=False, layer_level=True)
    assert layer_only.kernel_blocks == fa.kernel_blocks and layer_only.preferred_block_size(16) == 16
    assert layer_only.for_head(256).kernel_blocks == pages


@pytest.mark.parametrize(
    ("version", "gpu", "block"),
    [
        ("0.28.0", "B200", 16),
        ("0.29.0", "B200", 128),
        ("0.33.0", "B200", 128),
        ("0.33.0", "H200", 16),
        ("0.33.0", "sm110:180G", 16),
    ],
)
def test_dense_head_256_block_per_release_and_gpu(version: str, gpu: str, block: int) -> None:
    cfg = _engine(_config("qwen3-hd256"), version, gpu)
    assert cfg.backend.preferred_block_size(16) == block


def test_a_block_not_a_multiple_of_128_is_refused_on_the_block() -> None:
    with pytest.raises(InputError, match="block_size not supported") as err:
        _engine(_config("qwen3-hd256"), "0.30.0", block_size=16)
    assert err.value.source == "--block-size"


def test_soft_cap_in_the_config_falls_back_for_the_model() -> None:
    cfg = _engine(_config("qwen3-hd256-softcapkey"), "0.33.0")
    assert cfg.backend.preferred_block_size(16) == 16
    assert cfg.backend.for_head(256).kernel_blocks == (KernelBlock(128),)


def test_heads_of_256_beside_narrower_ones_are_refused_by_name() -> None:
    data = json.loads(GEMMA4.read_text())
    data["text_config"]["global_head_dim"] = 128
    # Gemma-4's whole-model head size is its widest layer's (converted per layer): FA4's pages
    cfg = _engine(data, "0.33.0", language_model_only=True)
    assert cfg.backend.preferred_block_size(16) == 128
    # a model whose whole-model head size is its config's head_dim is not modelled beside narrower heads
    model = geometry_from_config(data).evolve(family_extra=None)
    args = EngineArgs(
        vllm_version="0.33.0", gpu=parse_gpu("B200"), attention_backend="FLASH_ATTN", language_model_only=True
    )
    with pytest.raises(InputError, match=r"ModelConfig\.get_head_size"):
        create_engine_config(model, args, None)
    # before 0.29 and off SM 10.x / 11.x nothing is asked
    _engine(data, "0.28.0", language_model_only=True)
    _engine(data, "0.33.0", "H200", language_model_only=True)


def _drafter_engine(version: str, gpu: str, drafter_head: int, **flags: Any) -> Any:
    """``qwen3-hd256`` on FlashInfer with an EAGLE-3 head (``drafters/q3-eagle3``) of ``drafter_head`` on
    FlashAttention."""
    data = _config("qwen3-hd256")
    draft = {**json.loads((CONFIGS.parent / "drafters" / "q3-eagle3" / "config.json").read_text())}
    draft["head_dim"] = drafter_head
    drafter = Drafter(model=geometry_from_config(draft), method="eagle3", attention_backend="FLASH_ATTN")
    args = EngineArgs(vllm_version=version, gpu=parse_gpu(gpu), attention_backend="FLASHINFER", **flags)
    return create_engine_config(geometry_from_config(data), args, drafter)


@pytest.mark.parametrize(
    ("version", "gpu", "head", "preferred", "layer_blocks"),
    [
        # FlashAttention asked without a spec reads the target's head size (256): FA4's pages
        ("0.33.0", "B200", 128, 128, (KernelBlock(16, multiple_of=True),)),
        ("0.30.0", "B200", 128, 128, None),
        # a drafter layer of head size 256 asks the pages with its own spec too (0.31+)
        ("0.33.0", "B200", 256, 128, (KernelBlock(128),)),
        ("0.33.0", "H200", 128, 16, (KernelBlock(16, multiple_of=True),)),
    ],
)
def test_a_drafters_flash_attention_asks_the_targets_head_size(
    version: str, gpu: str, head: int, preferred: int, layer_blocks: tuple[KernelBlock, ...] | None
) -> None:
    cfg = _drafter_engine(version, gpu, head)
    assert cfg.backend.name == "FLASHINFER" and cfg.drafter_backend.name == "FLASH_ATTN"
    assert cfg.drafter_backend.preferred_block_size(16) == preferred
    if layer_blocks is not None:  # 0.29.0 / 0.30.0 ask no layer's spec
        assert cfg.drafter_backend.for_head(head).kernel_blocks == layer_blocks


def test_a_drafters_block_size_the_pages_do_not_divide_is_refused_as_vllm_does() -> None:
    with pytest.raises(InputError, match="block_size not supported") as err:
        _drafter_engine("0.33.0", "B200", 128, block_size=16)
    assert err.value.source == "--block-size"
