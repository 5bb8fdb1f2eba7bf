"""Downstream planner policies: the rules a patch stack changes, one registry each.

The CLI's choices, profile validation and the sweep read these registries; the rules live in
:mod:`dryboot.planner.policies.promotion` (unification) and :mod:`dryboot.vllm.kv_cache_utils.groups`
(grouping).
"""

from __future__ import annotations

#: KV cache group sizing: name -> what it does.
GROUPING: dict[str, str] = {
    "upstream": "vLLM's group size (smallest bucket, or largest when below 1.5x the smallest)",
    "pad-sliding-window-buckets": "a small sliding-window bucket is padded up to a divisor of the other buckets",
}

#: Page-size unification: name -> what it does.
UNIFICATION: dict[str, str] = {
    "upstream": "vLLM's unify_kv_cache_spec_page_size (pad or scale to the maximum page)",
    "promote-cover": "a sliding-window page that does not divide the maximum is promoted to cover it",
    "promote-divisor": "promote-cover, the block also dividing the primary block",
    "promote-granular": "promote-divisor, the block also a multiple of the layer's current block",
    "promote-kernel": "promote-granular, the block also addressable by the layer's backend",
}

GROUPING_POLICIES: tuple[str, ...] = tuple(GROUPING)
UNIFICATION_POLICIES: tuple[str, ...] = tuple(UNIFICATION)
