"""Page unification under a named policy: upstream vLLM, or a downstream promotion rule.

Policies (``docs/kv-geometry-rules.md`` section 7, the reference deployment's drafter patch):

* ``upstream`` - vLLM 0.28.0's ``unify_kv_cache_spec_page_size`` (:mod:`dryboot.vllm.kv_cache_utils.unify`).
* ``promote-cover`` - a sliding-window layer whose page does not divide the maximum page is
  promoted instead of padded: its block rises to the smallest multiple of its current block
  whose page covers the maximum (the covering block ``C``).
* ``promote-divisor`` - the promoted block must also divide the primary (attention) block
  ``P`` (the scheduler LCM invariant): the smallest divisor of ``P`` that is ``>= C``.
* ``promote-granular`` - that divisor must also be a multiple of the layer's current block
  (its kernel granularity).
* ``promote-kernel`` - dryboot's stricter variant: the divisor must be a block the layer's
  backend supports (``supports_block_size`` over its declared kernel block sizes).

A promotion is logged as the block-promotion patch logs it ("Raising block size of
model.layers.64.self_attn.attn from 16 to 864 tokens so its page (1824768 B) covers the maximum
(1797120 B) instead of being padded to it at block 16."): the plan's log carries the line.

Every promotion policy falls back to upstream (pad at the small block, or vLLM's error)
when no block qualifies, and skips a promotion whose page some other layer could neither
scale nor pad to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from dryboot.planner.policies import UNIFICATION_POLICIES
from dryboot.vllm.backends import AttentionBackend
from dryboot.vllm.kv_cache_interface import AttentionSpec, LayerKind, LayerSpec
from dryboot.vllm.kv_cache_utils.unify import Decision, can_reach, unify_layer_set
from dryboot.vllm.layer_set import LayerSet
from dryboot.vllm.platforms import cdiv
from dryboot.vllm.versions import VersionRules


@lru_cache(maxsize=4096)
def _divisors(value: int) -> tuple[int, ...]:
    small: list[int] = []
    large: list[int] = []
    d = 1
    while d * d <= value:
        if value % d == 0:
            small.append(d)
            if d * d != value:
                large.append(value // d)
        d += 1
    return tuple(small + large[::-1])


def divisors_from(value: int, lower: int) -> list[int]:
    """Divisors of ``value`` that are ``>= lower``, ascending."""
    return [d for d in _divisors(value) if d >= lower]


def covering_block(block_size: int, bytes_per_token: int, max_page: int) -> int:
    """Smallest multiple of ``block_size`` whose page (``block * bytes_per_token``) is
    ``>= max_page`` (tokens)."""
    return block_size * cdiv(max_page, block_size * bytes_per_token)


@dataclass(frozen=True)
class PromotionChoice:
    """What one policy picks for a (primary block, covering block) pair.

    :param block: the promoted block (tokens), or ``None`` (fall back to padding).
    :param candidates: the divisors it considered, ascending.
    :param reason: one line, as the patch logs it.
    """

    policy: str
    block: int | None
    candidates: tuple[int, ...]
    reason: str


def choose_block(
    policy: str,
    *,
    primary_block: int,
    covering: int,
    granularity: int,
    supports: Callable[[int], bool] | None = None,
) -> PromotionChoice:
    """The block ``policy`` promotes to, given the covering block ``C``.

    ``granularity`` is the layer's current block; ``supports`` its backend's
    ``supports_block_size`` (``promote-kernel``).
    """
    if policy == "promote-cover":
        return PromotionChoice(policy, covering, (covering,), f"covering block {covering}")
    cands = divisors_from(primary_block, covering)
    if policy == "promote-divisor":
        ok = cands
    elif policy == "promote-granular":
        ok = [d for d in cands if d % granularity == 0]
    elif policy == "promote-kernel":
        if supports is None:
            raise ValueError("promote-kernel needs the backend's supports_block_size")
        ok = [d for d in cands if supports(d)]
    else:
        raise ValueError(f"unknown promotion policy {policy!r}")
    if not ok:
        return PromotionChoice(
            policy,
            None,
            tuple(cands),
            f"no divisor of the primary block {primary_block} is >= its covering block "
            f"{covering}" + ("" if policy == "promote-divisor" or not cands else " and qualifies"),
        )
    return PromotionChoice(policy, ok[0], tuple(cands), f"divisor {ok[0]} of {primary_block}")


def unify_with_policy(
    layers: Sequence[tuple[str, LayerSpec]],
    policy: str,
    rules: VersionRules,
    *,
    primary_block: int,
    backends: Mapping[str, AttentionBackend],
) -> tuple[list[tuple[str, LayerSpec]], list[Decision]]:
    """:func:`unify_layer_set_with_policy` over ``(name, spec)`` pairs, order kept."""
    unified, decisions = unify_layer_set_with_policy(
        LayerSet.from_pairs(layers), policy, rules, primary_block=primary_block, backends=backends
    )
    return unified.pairs(), decisions


def unify_layer_set_with_policy(
    layers: LayerSet,
    policy: str,
    rules: VersionRules,
    *,
    primary_block: int,
    backends: Mapping[str, AttentionBackend],
) -> tuple[LayerSet, list[Decision]]:
    """Unify page sizes under ``policy``.

    Promotion runs once per distinct sliding-window spec, against the largest page before
    any promotion, so identical layers reach one decision.

    :param primary_block: the attention block ``P`` (tokens).
    :param backends: backend name (``AttentionSpec.backend``) -> the backend, for
        ``promote-kernel``.
    :returns: the unified set and the decisions, promotions first.
    :raises UnifyError: vLLM's ``NotImplementedError`` when a layer can neither scale nor pad.
    """
    if policy not in UNIFICATION_POLICIES:
        raise ValueError(f"unknown unification policy {policy!r}")
    if policy == "upstream":
        return unify_layer_set(layers, rules)
    specs = list(layers.specs)
    decisions: list[Decision] = []
    max_page = max(spec.page_size_bytes for spec in specs)
    for i, spec in enumerate(layers.specs):
        if not isinstance(spec, AttentionSpec) or spec.layer_kind is not LayerKind.SLIDING:
            continue
        page = spec.page_size_bytes
        if max_page % page == 0:
            continue
        name, count = layers.first_name(i), layers.count(i)
        cover = covering_block(spec.block_size, spec.bytes_per_token, max_page)
        backend = backends.get(spec.backend)
        choice = choose_block(
            policy,
            primary_block=primary_block,
            covering=cover,
            granularity=spec.block_size,
            supports=backend.supports_block_size if backend else None,
        )
        if choice.block is None:
            decisions.append(Decision(name, "skip-promotion", "Not promoting {}: {}", (name, choice.reason), count))
            continue
        new_page = choice.block * spec.bytes_per_token
        # the page every other layer must reach: the largest page after this promotion
        others = [(layers.first_name(j), s) for j, s in enumerate(specs) if j != i]
        target_page = max([new_page] + [s.page_size_bytes for _, s in others])
        blockers = [other for other, s in others if not can_reach(s, target_page, rules)]
        if blockers:
            decisions.append(
                Decision(
                    name,
                    "skip-promotion",
                    "Not promoting {} to block {}: {} could neither scale nor pad to its page ({} B)",
                    (name, choice.block, blockers[0], new_page),
                    count,
                )
            )
            continue
        specs[i] = spec.with_block_size(choice.block)
        decisions.append(
            Decision(
                name,
                "promote",
                "Raising block size of {} from {} to {} tokens so its page ({} B) covers the maximum ({} B) "
                "instead of being padded to it at block {}.",
                (name, spec.block_size, choice.block, new_page, max_page, spec.block_size),
                count,
            )
        )
    unified, rest = unify_layer_set(layers.with_specs(specs), rules)
    return unified, decisions + rest
