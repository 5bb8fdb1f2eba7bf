import pytest

from dryboot.units import parse_human_int, parse_human_int_or_auto


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42949672960", 42949672960),
        ("40G", 40 * 2**30),  # uppercase: binary
        ("40g", 40 * 10**9),  # lowercase: decimal
        ("1k", 1000),
        ("1K", 1024),
        ("25.6k", 25600),  # vLLM's own docstring example
        ("128k", 128000),
        (" 2M ", 2 * 2**20),
    ],
)
def test_human_readable_ints_follow_vllm(text: str, value: int) -> None:
    assert parse_human_int(text) == value


def test_decimals_with_binary_suffix_are_rejected() -> None:
    with pytest.raises(ValueError, match="decimals are not allowed"):
        parse_human_int("1.5G")


def test_garbage_is_rejected() -> None:
    with pytest.raises(ValueError, match="not an integer"):
        parse_human_int("forty")


def test_auto() -> None:
    assert parse_human_int_or_auto("auto") == -1
    assert parse_human_int_or_auto("-1") == -1
    assert parse_human_int_or_auto("64k") == 64000
