"""Page-size unification: every KV cache group must share one page size.

The ``upstream`` rule mirrors vLLM 0.28.0's ``unify_kv_cache_spec_page_size``
(``vllm/v1/core/kv_cache_utils.py``): with ``max`` the largest page, a mamba layer pads its
page to ``max``; a layer whose page divides ``max`` scales its block by ``max // page``;
an attention layer whose backend indexes KV by block stride pads to ``max`` (from 0.29: any
non-MLA attention); anything else is vLLM's ``NotImplementedError``.

Downstream promotion policies (``promote-*``) are in :mod:`dryboot.planner.policies.promotion` and run
before this rule for the sliding-window layers they apply to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dryboot.vllm.kv_cache_interface import LayerKind, LayerSpec, MambaSpec
from dryboot.vllm.layer_set import LayerSet
from dryboot.vllm.versions import VersionRules

UNIFY_ERROR = (
    "page size is not divisible by the maximum page size and cannot be padded. Padding is "
    "only supported for attention layers whose backend indexes KV pages by the block stride "
    "(indexes_kv_by_block_stride is True)."
)


class UnifyError(Exception):
    """vLLM's ``NotImplementedError`` from ``unify_kv_cache_spec_page_size``.

    :param layer: the layer that can neither scale nor pad.
    """

    def __init__(self, layer: str, message: str) -> None:
        self.layer = layer
        super().__init__(f"Layer {layer}: {message}")


@dataclass(frozen=True)
class Decision:
    """One unification decision, for the report: ``action`` is ``keep``, ``scale``,
    ``pad``, ``promote`` or ``skip-promotion``. ``layer`` is the first layer it applies to;
    ``count`` how many layers share that spec and so the decision. The sentence is
    ``template.format(*values)``, formatted when read (planning does not pay for it)."""

    layer: str
    action: str
    template: str
    values: tuple[object, ...] = ()
    count: int = 1

    @property
    def message(self) -> str:
        return self.template.format(*self.values) if self.values else self.template


def can_pad(spec: LayerSpec, rules: VersionRules) -> bool:
    """Whether ``unify`` may pad this layer's page (mamba always; attention by version)."""
    if isinstance(spec, MambaSpec):
        return True
    if rules.pad_requires_block_stride:
        return spec.indexes_kv_by_block_stride
    # 0.29+: any non-MLA attention pads, unless its (custom) kernel cannot read a padded page.
    return spec.layer_kind not in (LayerKind.MLA, LayerKind.MLA_INDEXER, LayerKind.MM3_INDEXER) and (
        spec.indexes_kv_by_block_stride or spec.quant_mode.value != "custom"
    )


def fit_to_page(
    name: str, spec: LayerSpec, max_page: int, rules: VersionRules, count: int = 1
) -> tuple[LayerSpec, Decision | None]:
    """Bring one layer (and the ``count`` layers sharing its spec) to ``max_page`` bytes as
    upstream ``unify`` does; the decision is ``None`` when the page already is the maximum.

    :raises UnifyError: when the layer can neither scale nor pad.
    """
    page = spec.page_size_bytes
    if page == max_page:
        return spec, None
    if isinstance(spec, MambaSpec):
        return spec.with_padded_page(max_page), Decision(
            name, "pad", "Padding {} page from {} to {} B (mamba state)", (name, page, max_page), count
        )
    if max_page % page == 0:
        ratio = max_page // page
        new = spec.with_block_size(spec.block_size * ratio)
        return new, Decision(
            name,
            "scale",
            "Scaling block size of {} from {} to {} tokens (page {} B x {} = {} B)",
            (name, spec.block_size, new.block_size, page, ratio, max_page),
            count,
        )
    if can_pad(spec, rules):
        return spec.with_padded_page(max_page), Decision(
            name,
            "pad",
            "Padding {} page from {} to {} B at block {} ({:.2f}% of each block unused)",
            (name, page, max_page, spec.block_size, 100 * (max_page - page) / max_page),
            count,
        )
    raise UnifyError(name, UNIFY_ERROR)


def can_reach(spec: LayerSpec, max_page: int, rules: VersionRules) -> bool:
    """Whether ``spec`` can be brought to ``max_page`` (scale or pad) without error."""
    page = spec.page_size_bytes
    if page > max_page:
        return False
    return page == max_page or isinstance(spec, MambaSpec) or max_page % page == 0 or can_pad(spec, rules)


def unify_layer_set(layers: LayerSet, rules: VersionRules) -> tuple[LayerSet, list[Decision]]:
    """Upstream unification, once per distinct spec of ``layers``.

    :returns: the unified set and one :class:`Decision` per changed distinct spec.
    :raises UnifyError: vLLM's ``NotImplementedError`` (the first layer of the spec is named).
    """
    pages = {spec.page_size_bytes for spec in layers.specs}
    if len(pages) <= 1:
        return layers, []
    max_page = max(pages)
    new_specs: list[LayerSpec] = []
    decisions: list[Decision] = []
    for i, spec in enumerate(layers.specs):
        new, decision = fit_to_page(layers.first_name(i), spec, max_page, rules, layers.count(i))
        new_specs.append(new)
        if decision is not None:
            decisions.append(decision)
    return layers.with_specs(new_specs), decisions


def unify_page_sizes(
    layers: Sequence[tuple[str, LayerSpec]], rules: VersionRules
) -> tuple[list[tuple[str, LayerSpec]], list[Decision]]:
    """Upstream unification of ``layers`` (name, spec), order kept (see :func:`unify_layer_set`).

    :raises UnifyError: vLLM's ``NotImplementedError`` (the layer is named).
    """
    unified, decisions = unify_layer_set(LayerSet.from_pairs(layers), rules)
    return unified.pairs(), decisions
