"""Byte intervals and the named terms a budget is built from."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

GIB = 1 << 30
MIB = 1 << 20


@dataclass(frozen=True)
class Interval:
    """A closed range of bytes, ``low <= high``."""

    low: int
    high: int

    def __add__(self, other: Interval) -> Interval:
        return Interval(self.low + other.low, self.high + other.high)

    @property
    def width(self) -> int:
        return self.high - self.low

    @property
    def mid(self) -> int:
        return (self.low + self.high) // 2

    def to_dict(self) -> dict[str, int]:
        return {"low": self.low, "high": self.high}

    @staticmethod
    def total(parts: Iterable[Interval]) -> Interval:
        """The sum of ``parts`` (``Interval(0, 0)`` for none)."""
        out = Interval(0, 0)
        for p in parts:
            out = out + p
        return out


@dataclass(frozen=True)
class Term:
    """One part of the non-KV memory: ``name`` (``activation: sampler``...), its bytes as an
    interval, the estimate inside it, and ``source`` (the vLLM code it follows and the method)."""

    name: str
    low: int
    high: int
    source: str
    estimate: int | None = None

    @property
    def interval(self) -> Interval:
        return Interval(self.low, self.high)

    @property
    def point(self) -> int:
        """The estimate (the interval's middle when none is stated)."""
        return self.estimate if self.estimate is not None else (self.low + self.high) // 2

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "low": self.low, "estimate": self.point, "high": self.high, "source": self.source}


def term_sum(terms: Iterable[Term]) -> tuple[Interval, int]:
    """(interval, estimate) of the sum of ``terms``."""
    items = list(terms)
    return Interval.total(t.interval for t in items), sum(t.point for t in items)
