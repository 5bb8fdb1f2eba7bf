"""Page unification under a named policy (upstream vLLM or a downstream promotion rule)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dryboot.backends import AttentionBackend
from dryboot.specs import LayerSpec
from dryboot.unify import Decision, unify_page_sizes
from dryboot.versions import VersionRules

UNIFICATION_POLICIES: tuple[str, ...] = ("upstream",)


def unify_with_policy(
    layers: Sequence[tuple[str, LayerSpec]],
    policy: str,
    rules: VersionRules,
    *,
    primary_block: int,
    backends: Mapping[str, AttentionBackend],
) -> tuple[list[tuple[str, LayerSpec]], list[Decision]]:
    """Unify page sizes under ``policy`` (``upstream`` is vLLM's rule).

    :raises UnifyError: vLLM's ``NotImplementedError``.
    """
    if policy != "upstream":
        raise ValueError(f"unknown unification policy {policy!r}")
    return unify_page_sizes(layers, rules)
