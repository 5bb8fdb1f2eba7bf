"""The KV budget of an engine start without ``--kv-cache-memory-bytes``.

vLLM's ``Worker.determine_available_memory`` gives ``requested - (weights + non-torch + transient
activation) - CUDA-graph estimate``. The boot has no profile run: the tree's own weights per rank
are counted on the meta device by ``engine_start.py`` (its model class, so a patch that changes
what a model holds changes them), and every other term is dryboot's budget model
(:func:`dryboot.vllm.worker.budget.estimate_budget`, with the weights left out) for the same
flags and GPU. The child subtracts the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dryboot.planner.plan import Plan
from dryboot.vllm.worker.budget import Budget, Verdict, estimate_budget, load_verdict
from dryboot.vllm.worker.profile_run import forward_shape

__all__ = ["BootBudget", "boot_budget", "needs_budget"]

GIB = 1 << 30


@dataclass(frozen=True)
class BootBudget:
    """``requested`` (bytes) and the non-weight terms ``other`` = (low, estimate, high) bytes,
    from dryboot's ``budget`` (computed with no weights)."""

    requested: int
    other: tuple[int, int, int]
    budget: Budget

    def case(self) -> dict[str, Any]:
        """The engine-start case's ``budget`` field (``engine_start.py``)."""
        return {"requested": self.requested, "other": list(self.other)}

    def load_verdict(self, weights_bytes: list[int]) -> Verdict | None:
        """``won't`` when the heaviest rank's weights (the tree's own count, bytes) exceed the
        requested memory or the GPU (:func:`dryboot.vllm.worker.budget.load_verdict`): vLLM never
        reaches a KV budget there, so no ``--kv-cache-memory-bytes`` follows; ``None`` otherwise."""
        if not weights_bytes:
            return None
        b = self.budget
        return load_verdict(
            max(weights_bytes),
            total_bytes=b.gpu_total_bytes,
            requested_bytes=b.requested_bytes,
            free=b.startup_gate.free_bytes,
        )

    def describe(self) -> str:
        lo, est, hi = (x / GIB for x in self.other)
        return (
            f"requested {self.requested / GIB:.2f} GiB (CUDA total {self.budget.gpu_total_bytes / GIB:.2f} GiB x "
            f"{self.budget.gpu_memory_utilization}) - the tree's weights - dryboot's other terms {est:.2f} GiB "
            f"({lo:.2f}-{hi:.2f}: activation, CUDA-graph estimate, non-torch; {self.budget.runner} runner)"
        )


def needs_budget(argv: list[str]) -> bool:
    """Whether vLLM ``argv`` gives no ``--kv-cache-memory-bytes`` (nor ``--kv-cache-memory``)."""
    return not any(
        f in ("--kv-cache-memory-bytes", "--kv-cache-memory")
        or f.startswith(("--kv-cache-memory-bytes=", "--kv-cache-memory="))
        for f in argv
    )


def boot_budget(p: Plan, config: dict[str, Any], source: str = "config.json") -> BootBudget:
    """The budget's terms other than the weights for plan ``p``'s flags and GPU (``p.args.device``).

    :raises InputError: a term that cannot be bounded (named), as ``estimate_budget``.
    """
    args = p.args.evolve(kv_cache_memory_bytes=None, non_kv_memory_bytes=None)
    shape = forward_shape(config, source, args.dtype if args.dtype != "auto" else p.model_dtype)
    backend = p.backend.name if p.backend is not None else "FLASH_ATTN"
    b = estimate_budget(
        p.model, args, weights_bytes=0, gpu=args.device, rules=p.rules, drafter=p.drafter, shape=shape, backend=backend
    )
    kv = b.available_kv_cache_bytes
    other = (b.requested_bytes - kv.high, b.requested_bytes - kv.estimate, b.requested_bytes - kv.low)
    return BootBudget(b.requested_bytes, other, b)
