"""What vLLM does at engine start, mirrored module by module (vLLM 0.28.0 baseline).

Each module names the vLLM file whose behaviour it reproduces; none contains vLLM's code.

- :mod:`.config` -- reading ``config.json`` as the Hugging Face config classes do (their
  defaults, derived layer kinds) plus vLLM's overrides; resolving engine flags once
  (``vllm/config/``, ``vllm/engine/arg_utils.py``).
- :mod:`.models` -- one module per model family: the KV-cache-carrying layers of each
  architecture, registered by architecture name (``vllm/model_executor/models/registry.py``).
- :mod:`.kv_cache_interface` -- spec kinds and their page/memory rules (``v1/kv_cache_interface.py``).
- :mod:`.kv_cache_utils` -- unify, groups, capacity (``v1/core/kv_cache_utils.py``).
- :mod:`.platforms` -- hybrid block alignment, mamba padding (``platforms/interface.py``).
- :mod:`.backends` -- attention backends: kernel block sizes, dtype support (``v1/attention/backends``).
- :mod:`.coordinator` -- scheduler / hash block invariants (``v1/core/kv_cache_coordinator.py``).
- :mod:`.versions` -- per-release switches.
- :mod:`.transformers_utils` -- reading a ``config.json`` and choosing the family that reads it.
- :mod:`.distributed` -- TP/PP/DP checks and the layers each pipeline stage builds.
"""

from pathlib import Path

#: the package's data directory: vLLM 0.28.0's registry, its SupportsPP table (both recorded from
#: vLLM by ``scripts/``) and each planned architecture's ``model_type``
DATA = Path(__file__).resolve().parent.parent / "data"
