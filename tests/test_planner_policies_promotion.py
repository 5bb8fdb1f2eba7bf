from dryboot.planner.policies.promotion import choose_block, covering_block, divisors_from
from dryboot.vllm.backends import BACKENDS
from dryboot.vllm.kv_cache_interface import AttentionSpec


def test_worked_case_from_section_7() -> None:
    assert divisors_from(1840, 96) == [115, 184, 230, 368, 460, 920, 1840]
    assert choose_block("promote-divisor", primary_block=1840, covering=96, granularity=16).block == 115
    assert choose_block("promote-granular", primary_block=1840, covering=96, granularity=16).block == 368
    kernel = choose_block(
        "promote-kernel",
        primary_block=1840,
        covering=96,
        granularity=16,
        supports=BACKENDS["FLASH_ATTN"].supports_block_size,
    )
    assert kernel.block == 368
    assert not BACKENDS["FLASH_ATTN"].supports_block_size(115)


def test_covering_block_of_the_long_profile() -> None:
    # int8-per-token-head drafter, 8 heads x (256 + 8) B = 2112 B/token, max page 1,797,120 B
    assert covering_block(16, 2112, 1_797_120) == 864


def test_no_divisor_qualifies() -> None:
    c = choose_block("promote-divisor", primary_block=100, covering=101, granularity=16)
    assert c.block is None and "no divisor of the primary block 100" in c.reason


def _sliding(block: int) -> AttentionSpec:
    from dryboot.vllm.dtypes import KVQuantMode
    from dryboot.vllm.kv_cache_interface import LayerKind

    # 8 KV heads x 128, bf16: 4096 B per token
    return AttentionSpec(
        layer_kind=LayerKind.SLIDING,
        block_size=block,
        num_kv_heads=8,
        head_size=128,
        head_size_v=128,
        torch_dtype="bfloat16",
        kv_cache_dtype="bfloat16",
        quant_mode=KVQuantMode.NONE,
        content_bytes=512,
        backend="FLASH_ATTN",
        indexes_kv_by_block_stride=True,
        sliding_window=2048,
    )


def test_identical_drafter_layers_reach_the_same_decision() -> None:
    from dryboot.planner.policies.promotion import unify_with_policy
    from dryboot.vllm.kv_cache_interface import MambaSpec
    from dryboot.vllm.versions import rules_for

    # a primary page of 565,248 B at P = 2208; five identical sliding layers at 65,536 B (block 16)
    mamba = MambaSpec("gdn", 2208, ((565_248,),), ("uint8",), "align", 0)
    layers = [("model.layers.0.linear_attn", mamba)] + [(f"drafter.layers.{i}", _sliding(16)) for i in range(5)]
    unified, _ = unify_with_policy(
        layers,
        "promote-divisor",
        rules_for("0.28.0"),
        primary_block=2208,
        backends={"FLASH_ATTN": BACKENDS["FLASH_ATTN"]},
    )
    blocks = [s.block_size for n, s in unified if n.startswith("drafter")]
    # covering block 16 * cdiv(565248, 65536) = 144; smallest divisor of 2208 from 144 up: 184
    assert blocks == [184] * 5
    assert {s.page_size_bytes for _, s in unified} == {184 * 4096}
