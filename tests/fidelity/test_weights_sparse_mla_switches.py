"""Each sparse-MLA weights switch of :class:`~dryboot.vllm.versions.VersionRules` is pinned by a
recorded case: flipped on the first release where it holds, some row of the sparse-MLA weights
sets (``quant-recorded-sparsemla-`` / ``-nvfp4smla-<version>.json``, vLLM's own figures) that
dryboot matches byte-exact is no longer matched (another figure, or a refusal). Nothing here needs
vLLM."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import test_weights_sparsemla as SM

from dryboot.errors import InputError
from dryboot.vllm import versions
from dryboot.vllm.versions import VersionRules

pytestmark = pytest.mark.fidelity

#: switch -> the record sets (rows, dryboot's answer for a row) that pin it
SETS: dict[str, list[tuple[dict[str, dict[str, Any]], Callable[[dict[str, Any], str], Any]]]] = {
    "sparse_mla_index_groups": [(SM.RECORDED, SM._weights)],
    "sparse_mla_index_group_request_ids": [(SM.RECORDED, SM._weights)],
    "flash_attn_mla_sparse_cu_seqlens": [(SM.RECORDED, SM._weights)],
    "flashmla_sparse_prefill_buffers": [(SM.RECORDED, SM._weights)],
    "flashmla_sparse_padded_query": [(SM.RECORDED, SM._weights)],
}


def _first_release(switch: str) -> str:
    return next(v for v, r in versions.VERSIONS.items() if getattr(r, switch))


def _answer(weights: Callable[[dict[str, Any], str], Any], row: dict[str, Any], version: str) -> Any:
    try:
        report = weights(row, version)
    except InputError as e:
        return ("refused", str(e))
    return (report.refused, None if report.refused else report.stages[0].allocated_bytes)


@pytest.mark.parametrize("switch", sorted(SETS))
def test_switch_is_needed(switch: str, flip_rules: Callable[..., VersionRules]) -> None:
    version = _first_release(switch)
    exact = {}
    for recorded, weights in SETS[switch]:
        for cid, row in recorded.get(version, {}).items():
            if row["ok"]:
                exact[cid] = (weights, row, _answer(weights, row, version))
    assert exact, f"no recorded row on {version} for {switch}"
    flip_rules(version, **{switch: False})
    changed = [cid for cid, (weights, row, before) in exact.items() if _answer(weights, row, version) != before]
    assert changed, f"flipping {switch} off on {version} changes no recorded row's answer"
