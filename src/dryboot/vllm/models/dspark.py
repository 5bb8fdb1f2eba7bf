"""DSpark drafters (``v1/worker/gpu/spec_decode/dspark/``): the model types whose layers take the target's
attention backend when the speculative config names none."""

from __future__ import annotations

#: (first release, drafter ``model_type``s) newest first: ``_resolve_dspark_attention_backend`` hands these
#: drafters the target's backend ("DeepSeek-V4 draft layers share the target's KV-cache layout"); 0.29.0 names
#: ``deepseek_v4``, 0.30.0-0.33.0 ``deepseek_v4`` and ``deepseek_v41``
DSPARK_TARGET_BACKEND_MODEL_TYPES: tuple[tuple[str, frozenset[str]], ...] = (
    ("0.30.0", frozenset({"deepseek_v4", "deepseek_v41"})),
    ("0.29.0", frozenset({"deepseek_v4"})),
)
