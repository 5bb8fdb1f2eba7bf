"""``vllm/v1/core/kv_cache_utils.py``: page unification (:mod:`.unify`), KV cache groups
(:mod:`.groups`) and capacity (:mod:`.capacity`)."""
