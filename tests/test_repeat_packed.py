"""The repeat-pattern packing rule of vLLM 0.33.0 (:mod:`dryboot.vllm.kv_cache_utils.repeat_packed`)
on hand-built specs: splits by repeats, whole unbalanced buckets, ring caps, the pool's stride.
The recorded engine starts it is checked against are in ``tests/fidelity/test_qwen4_exp_step5.py``."""

from __future__ import annotations

from dataclasses import replace

from dryboot.vllm.dtypes import KVQuantMode
from dryboot.vllm.kv_cache_interface import AttentionSpec, LayerKind
from dryboot.vllm.kv_cache_utils import repeat_packed as R


def _spec(kind: LayerKind, content: int, *, window: int | None = None, block: int = 16) -> AttentionSpec:
    return AttentionSpec(
        layer_kind=kind,
        block_size=block,
        num_kv_heads=1,
        head_size=content,
        head_size_v=0,
        torch_dtype="uint8",
        kv_cache_dtype="uint8",
        quant_mode=KVQuantMode.NONE,
        content_bytes=content,
        backend="X",
        indexes_kv_by_block_stride=False,
        sliding_window=window,
        spec_name="circular_buffer" if kind is LayerKind.STEP5_RING else None,
    )


FULL, SMALL = _spec(LayerKind.FULL, 1536), _spec(LayerKind.STEP5_SUMMARY, 32)
SLIDE, RING = _spec(LayerKind.SLIDING, 1536, window=128), _spec(LayerKind.STEP5_RING, 1536)


def _caches(pattern: str) -> dict[str, AttentionSpec]:
    """``s``: a sliding layer; ``d``: a DSA layer with its summary and ring."""
    out: dict[str, AttentionSpec] = {}
    for i, c in enumerate(pattern):
        if c == "s":
            out[f"l{i}"] = SLIDE
        else:
            out[f"l{i}"], out[f"l{i}.sum"], out[f"l{i}.ring"] = FULL, SMALL, RING
    return out


def test_sliding_buckets_split_to_the_full_buckets_repeats() -> None:
    """Four sliding layers beside two DSA layers (repeats 2): two sliding groups, the mixed full
    bucket whole, the rings one group (the block holds both)."""
    groups = R.group_specs(_caches("ssdssd"))
    assert groups == (
        ("l0", "l3"),
        ("l1", "l4"),
        ("l2", "l2.sum", "l5", "l5.sum"),
        ("l2.ring", "l5.ring"),
    )


def test_rings_split_when_the_block_holds_fewer() -> None:
    """Four rings beside a full bucket of two repeats: the block holds two KV pages and two
    summaries, so two rings a block; the rings split into two groups rather than widen it."""
    specs = _caches("dsd")
    specs["extra.ring"] = RING
    specs["extra2.ring"] = RING
    groups = R.group_specs(specs)
    assert [len(g) for g in groups] == [4, 2, 2, 1]
    assert groups[1:3] == (("l0.ring", "extra.ring"), ("l2.ring", "extra2.ring"))


def test_unbalanced_bucket_stays_whole() -> None:
    specs = {"a": FULL, "b": FULL, "c": SMALL, "r": RING}
    assert R.group_specs(specs) == (("a", "b", "c"), ("r",))
    assert R.repeats_per_group(R.buckets(specs)) is None


def test_stride_rounds_to_eight_tokens_and_ring_rows() -> None:
    """The widest group (2 x 24576 + 2 x 512) rounded to lcm(8 tokens' KV, 1024 B) = 12288."""
    dsa = replace(FULL, block_stride_alignment=8)
    specs = {"a": dsa, "a.s": SMALL, "b": dsa, "b.s": SMALL, "a.r": RING, "b.r": RING}
    groups = R.group_specs(specs)
    assert R.bytes_per_block(groups, specs) == 61440
    assert R.stride_alignment(replace(dsa, block_size=8)) == 1


def test_a_request_holds_one_ring_page() -> None:
    assert R.layer_pages(RING, 8192, 16384) == 1
    assert R.layer_pages(SLIDE, 8192, 4096) == -(-(127 + 4096) // 16) + 1
    assert R.layer_pages(SMALL, 8192, 0) == 512
