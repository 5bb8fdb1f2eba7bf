"""dryboot: know what a (patched) vLLM boot will do before you boot.

The public Python API, for planning a KV cache offline::

    from dryboot import EngineArgs, load_model, plan

    p = plan(load_model("config.json"), EngineArgs(max_model_len=262144, kv_cache_memory_bytes=40 << 30))
    p.block_size, p.ok
    if p.capacity is not None:  # None without a KV budget, or when one request does not fit
        p.capacity.num_blocks, p.capacity.kv_cache_size_tokens

* :func:`plan` -- what vLLM computes about its KV cache at engine start (a :class:`Plan`).
* :func:`load_model` -- a Hugging Face ``config.json`` (or a directory holding one) as a
  :class:`ModelGeometry`.
* :class:`EngineArgs` -- vLLM's engine flags that shape the KV cache, with vLLM's names.
* :class:`Drafter`, :class:`Policies` -- a speculative drafter; downstream planner policies.
* :class:`InputError` -- bad input, with the file or flag, the field and the reason.

Everything else (``dryboot.report``, ``dryboot.patching``...) is importable but not promised to
stay. The package root imports nothing heavy, so ``dryboot`` answers in a fraction of a second:
the names above load on first use. ``dryboot.plan`` is the function; the planner's modules are
``dryboot.planner`` (``from dryboot.planner.plan import ...``).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself is not imported at run time: `dryboot series apply` starts faster
if TYPE_CHECKING:
    from typing import Any

    from dryboot.errors import InputError
    from dryboot.planner.plan import Drafter, Plan, Policies
    from dryboot.vllm.config.hf import ModelGeometry
    from dryboot.vllm.engine_args import EngineArgs
    from dryboot.vllm.transformers_utils.config import load_model

__version__ = "0.1.0"

__all__ = [
    "Drafter",
    "EngineArgs",
    "InputError",
    "ModelGeometry",
    "Plan",
    "Policies",
    "__version__",
    "load_model",
    "plan",
]

_LAZY = {
    "Drafter": "dryboot.planner.plan",
    "EngineArgs": "dryboot.vllm.engine_args",
    "InputError": "dryboot.errors",
    "ModelGeometry": "dryboot.vllm.config.hf",
    "Plan": "dryboot.planner.plan",
    "Policies": "dryboot.planner.plan",
    "load_model": "dryboot.vllm.transformers_utils.config",
}


def plan(
    model: ModelGeometry,
    args: EngineArgs | None = None,
    *,
    drafter: Drafter | None = None,
    policies: Policies | None = None,
) -> Plan:
    """Plan the KV cache vLLM builds for ``model`` under ``args`` (vLLM's defaults when ``None``).

    A boot failure is part of the plan (``p.ok`` is False; ``p.memory_error``,
    ``p.unify_error``, ``p.invariants`` say which); ``p.capacity`` is ``None`` without a KV
    budget or when one full-length request does not fit.

    :raises InputError: a flag the model cannot take (the message names flag and field).
    """
    from dryboot.planner.plan import plan as _plan  # at call: `import dryboot` stays fast (the planner is ~0.25 s)

    return _plan(model, args, drafter=drafter, policies=policies)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dryboot' has no attribute {name!r}")
    __import__(module)  # not importlib: importing it costs start-up time
    value = getattr(sys.modules[module], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
