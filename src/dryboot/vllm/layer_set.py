"""Layers grouped by shared spec: the planner's working set.

A model's layers of one kind all carry the same spec, so every rule (unification, grouping,
kernel checks) runs once per distinct spec. :class:`LayerSet` keeps the distinct specs in
first-appearance order with the names of the layers that carry each, in module order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dryboot.vllm.kv_cache_interface import LayerSpec


@dataclass(frozen=True)
class LayerSet:
    """``specs[i]`` is the spec of every layer named in ``names[i]``.

    Specs are distinct and in the order their first layer appears; each ``names[i]`` is in
    module order. ``order`` is every layer name in module order.
    """

    specs: tuple[LayerSpec, ...]
    names: tuple[tuple[str, ...], ...]
    order: tuple[str, ...]

    @classmethod
    def from_pairs(cls, layers: Sequence[tuple[str, LayerSpec]]) -> LayerSet:
        """Group ``(name, spec)`` pairs by spec (identical objects first, then equal specs)."""
        by_id: dict[int, int] = {}
        specs: list[LayerSpec] = []
        members: list[list[str]] = []
        for name, spec in layers:
            slot = by_id.get(id(spec))
            if slot is None:
                for j, known in enumerate(specs):
                    if known == spec:
                        slot = j
                        break
                else:
                    slot = len(specs)
                    specs.append(spec)
                    members.append([])
                by_id[id(spec)] = slot
            members[slot].append(name)
        return cls(tuple(specs), tuple(tuple(m) for m in members), tuple(n for n, _ in layers))

    @classmethod
    def concat(cls, parts: Iterable[LayerSet]) -> LayerSet:
        """Layers of ``parts`` one after the other (e.g. target then drafter)."""
        specs: tuple[LayerSpec, ...] = ()
        names: tuple[tuple[str, ...], ...] = ()
        order: tuple[str, ...] = ()
        for p in parts:
            specs += p.specs
            names += p.names
            order += p.order
        return cls(specs, names, order)

    def with_specs(self, specs: Sequence[LayerSpec]) -> LayerSet:
        return LayerSet(tuple(specs), self.names, self.order)

    def first_name(self, i: int) -> str:
        return self.names[i][0]

    def count(self, i: int) -> int:
        return len(self.names[i])

    def pairs(self) -> list[tuple[str, LayerSpec]]:
        """``(name, spec)`` for every layer, in module order."""
        spec_of = {name: spec for spec, names in zip(self.specs, self.names, strict=True) for name in names}
        return [(name, spec_of[name]) for name in self.order]

    def __len__(self) -> int:
        return len(self.order)


@dataclass(frozen=True)
class LayerTable:
    """Every layer, as built (``initial``) and as unified; the first ``num_target`` layers (in
    module order) are the target model's, the rest the drafter's."""

    initial: LayerSet
    unified: LayerSet
    num_target: int
