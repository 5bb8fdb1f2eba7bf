"""dryboot's model of PyTorch's CUDA caching allocator (``model_loader/allocator.py``), rule by rule;
the replays of vLLM's recorded loads are in ``tests/fidelity/test_load_trace.py``."""

from __future__ import annotations

from dryboot.vllm.model_executor.model_loader.allocator import MIB, NO_SPLIT_LIMIT, replay, round_size, segment_size
from dryboot.vllm.model_executor.model_loader.weights import LOAD_MAX_SPLIT, load_segment_bytes


def test_rounding_and_segments() -> None:
    assert round_size(1) == 512 and round_size(513) == 1024
    assert segment_size(MIB) == 2 * MIB  # the small pool
    assert segment_size(MIB + 512) == 20 * MIB  # a large request under 10 MiB
    assert segment_size(125 * MIB) == 126 * MIB  # rounded to 2 MiB


def test_fresh_segments_agree_with_the_per_tensor_rule() -> None:
    """Without reuse the replay is ``load_segment_bytes`` per tensor."""
    for nbytes in (300, 3 * MIB, 19 * MIB + 5, 125 * MIB, 1002 * MIB, 56 * MIB):
        r = replay([(1, nbytes)], LOAD_MAX_SPLIT)
        assert r.allocated == load_segment_bytes(nbytes)
        assert r.tensor_blocks == round_size(nbytes)


def test_a_freed_oversize_block_is_taken_whole_under_the_split_limit() -> None:
    """A 64 MiB block freed, then a 48 MiB request: under ``max_split_size`` 20 MiB it takes the block
    whole (less than 20 MiB larger, not split: +16 MiB); with no limit it splits it."""
    events = [(1, 64 * MIB), (1, 0), (2, 48 * MIB)]
    assert replay(events, 20 * MIB).surplus == 16 * MIB
    assert replay(events, NO_SPLIT_LIMIT).surplus == 0
    # 20 MiB or more larger: a new segment of its own
    assert replay([(1, 64 * MIB), (1, 0), (2, 40 * MIB)], 20 * MIB).surplus == 0


def test_a_small_request_never_takes_an_oversize_block_and_frees_merge() -> None:
    # under the limit a 3 MiB request does not take the freed 64 MiB block: a fresh 20 MiB segment, split
    r = replay([(1, 64 * MIB), (1, 0), (2, 3 * MIB)], 20 * MIB, marks=(2,))
    assert r.surplus == 0 and r.marks[2] == (0, 0)
    # two 2.25 MiB pieces of a 20 MiB segment freed merge back; a 1.75 MiB request splits the merge
    events = [(1, 9 * MIB // 4), (2, 9 * MIB // 4), (1, 0), (2, 0), (3, 7 * MIB // 4)]
    assert replay(events, 20 * MIB).surplus == 0
    # a lone freed 2.25 MiB block between live ones: 0.5 MiB would remain (not more than 1 MiB): whole
    events = [(1, 9 * MIB // 4), (2, 9 * MIB // 4), (4, 31 * MIB // 2), (1, 0), (3, 7 * MIB // 4)]
    assert replay(events, 20 * MIB).surplus == MIB // 2


def test_the_large_pool_alone_gives_the_whole_replay() -> None:
    """``load_surplus`` replays only the requests over 1 MiB: on Llama-3.1-8B's emitted loads (bf16,
    AWQ and GPTQ through Marlin) it equals the replay of every event, under the split limit and
    without one."""
    from dataclasses import replace

    from dryboot.vllm.model_executor.model_loader.load_order import (
        DenseDecoder,
        Marlin4,
        load_events,
        load_surplus,
    )

    bf16 = DenseDecoder(
        vocab_rows=128256, hidden=4096, layers=32, qkv=6144, o_in=4096, inter=14336, act_bytes=2, tied=False,
        positions=131072, rotary_dim=128,
    )  # fmt: skip
    for m in (bf16, replace(bf16, quant=Marlin4("awq", 128, 82)), replace(bf16, quant=Marlin4("gptq", 128, 82))):
        for limit in (LOAD_MAX_SPLIT, NO_SPLIT_LIMIT):
            whole = replay(load_events(m).events, limit)
            assert load_surplus(m, limit) == (whole.allocated, whole.tensor_blocks)
