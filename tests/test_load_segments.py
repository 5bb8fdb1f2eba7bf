"""``Model loading took`` counts the CUDA caching allocator's blocks, not the tensors: while vLLM
loads (``max_split_size_mb`` 20) a tensor of 20 MiB or more holds its whole segment, rounded up to
2 MiB, and so does one whose segment it leaves at most 1 MiB of (PyTorch's
``DeviceCachingAllocator``: ``get_allocation_size``, ``should_split``)."""

from __future__ import annotations

import pytest

from dryboot.vllm.model_executor.model_loader.weights import RankWeights, load_segment_bytes

MIB = 1 << 20


@pytest.mark.parametrize(
    ("nbytes", "counted"),
    [
        (100, 512),  # small pool: 512-byte blocks
        (MIB, MIB),  # kSmallSize itself: still the small pool
        (6 * MIB, 6 * MIB),  # a 20 MiB segment, split
        (12 * MIB + MIB // 2, 12 * MIB + MIB // 2),  # a 14 MiB segment, 1.5 MiB left: split
        (13 * MIB + MIB // 2, 14 * MIB),  # a 14 MiB segment, 0.5 MiB left: not split
        (20 * MIB, 20 * MIB),  # max_split_size: not split, but a multiple of 2 MiB
        (5120 * 12800 * 2, 126 * MIB),  # Qwen3-32B down_proj at TP 2 (125 MiB)
        (37984 * 4096 * 2, 298 * MIB),  # Qwen3-235B's embedding at TP 4 (296.75 MiB)
    ],
)
def test_load_segment(nbytes: int, counted: int) -> None:
    assert load_segment_bytes(nbytes) == counted


def test_without_max_split_a_large_tensor_is_split() -> None:
    """Before vLLM's scoped ``max_split_size_mb`` (PR #41268) a 125 MiB tensor left 1 MiB: not split;
    a 52.5 MiB one left 1.5 MiB: split."""
    assert load_segment_bytes(125 * MIB, max_split=1 << 62) == 126 * MIB
    assert load_segment_bytes(52 * MIB + MIB // 2, max_split=1 << 62) == 52 * MIB + MIB // 2


def test_rank_weights_keep_the_meta_device_figure_apart() -> None:
    w = RankWeights()
    w.add("mlp", 125 * MIB)
    w.add("norm", 10240)
    assert w.allocated_bytes == 125 * MIB + 10240  # what the meta-device oracle counts
    assert w.loaded_bytes == 126 * MIB + 10240  # Model loading took
