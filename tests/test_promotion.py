from dryboot.backends import BACKENDS
from dryboot.promotion import choose_block, covering_block, divisors_from


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
