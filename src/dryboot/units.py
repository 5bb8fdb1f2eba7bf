"""Human-readable integers as vLLM's argument parser reads them.

Mirrors ``vllm/utils/argparse_utils.py`` (``human_readable_int`` and
``human_readable_int_or_auto``) in vLLM 0.28.0: a lowercase suffix k/m/g/t is decimal
(10**3 ...), an uppercase K/M/G/T is binary (2**10 ...); decimals are allowed only with a
decimal suffix and are evaluated in binary floating point, then truncated, exactly as
``int(float(number) * multiplier)`` does.
"""

from __future__ import annotations

import re

_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_PATTERN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


def parse_human_int(text: str) -> int:
    """Parse ``'42949672960'``, ``'40G'`` (binary), ``'25.6k'`` (decimal) into an int.

    :raises ValueError: with a one-line reason when ``text`` is not such an integer
        (e.g. ``'1.5G'``: decimals are not allowed with binary suffixes).
    """
    value = text.strip()
    match = _PATTERN.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        if "." in number:
            raise ValueError(
                f"decimals are not allowed with binary suffix {suffix!r} (did you mean {number}{suffix.lower()}?)"
            )
        return int(number) * _BINARY[suffix]
    if value.startswith("-") and _PATTERN.fullmatch(value[1:]):
        raise ValueError(f"{text!r} is negative; sizes must be >= 0")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{text!r} is not an integer (plain, or with a k/m/g/t or K/M/G/T suffix)") from None


def parse_human_int_or_auto(text: str) -> int:
    """Like :func:`parse_human_int`, but ``'auto'`` and ``'-1'`` give ``-1`` (auto-fit)."""
    value = text.strip()
    if value == "-1" or value.lower() == "auto":
        return -1
    return parse_human_int(value)
