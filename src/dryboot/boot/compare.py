"""A tree's engine start against dryboot's model of its release, figure by figure.

Both sides are reduced to the figures vLLM logs or decides at engine start (block size, KV
cache groups as ``(spec type, block, page bytes, layers)``, blocks, token capacity, concurrency
to two decimals, max model length, mamba padding) or to a refusal; they agree when every figure
is equal, or when both refuse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from dryboot.planner.plan import Plan
from dryboot.planner.report import plan_to_dict
from dryboot.textout import clip

#: dryboot's group kinds -> vLLM's KV cache spec class names without ``Spec``.
KIND_TO_VLLM = {
    "full": "FullAttention",
    "sliding": "SlidingWindow",
    "chunked": "ChunkedLocalAttention",
    "mla": "MLAAttention",
    "sliding_mla": "SlidingWindowMLA",
    "mamba": "Mamba",
    "hidden_state": "HiddenStateCache",
    "rswa": "RSWA",
    "circular_buffer": "CircularBuffer",
    "kpool_tail": "KpoolTail",
    "cross": "CrossAttention",
}

_PADDING = re.compile(r"Padding mamba page size by ([0-9.]+)%")


@dataclass(frozen=True)
class Figures:
    """What one engine start decided, or why it refused (``refusal``; figures then ``None``).

    :param groups: sorted ``(spec type, block tokens, page bytes, layers)``.
    :param concurrency: rounded to two decimals, as vLLM logs it.
    :param mamba_padding_pct: the logged mamba page padding (two decimals), ``None`` if none.
    :param weights_gib: the tree's weights per rank of pipeline stage 0 as ``Model loading took``
        prints them (parameters and buffers on the meta device, two decimals); ``None`` for
        dryboot's plan.
    :param available_gib: ``Available KV cache memory`` (two decimals) when the budget was
        computed (no ``--kv-cache-memory-bytes``): the tree's weights and dryboot's other terms.
    """

    refusal: str | None = None
    block_size: int | None = None
    groups: tuple[tuple[str, int, int, int], ...] = ()
    num_blocks: int | None = None
    tokens: int | None = None
    concurrency: float | None = None
    max_model_len: int | None = None
    mamba_padding_pct: float | None = None
    kv_log: tuple[str, ...] = field(default=(), compare=False)
    weights_gib: float | None = None
    available_gib: float | None = None
    available_bytes: int | None = field(default=None, compare=False)

    def row(self) -> str:
        """``block / mamba padding / tokens``, as a launcher's table reads (``448/3.23%/68,605``)."""
        if self.refusal is not None:
            return f"refused: {self.refusal}"
        pad = "-" if self.mamba_padding_pct is None else f"{self.mamba_padding_pct:.2f}%"
        tokens = "-" if self.tokens is None else f"{self.tokens:,}"
        return f"{self.block_size}/{pad}/{tokens}"


def _padding(lines: list[str]) -> float | None:
    for line in lines:
        m = _PADDING.search(line)
        if m:
            return round(float(m.group(1)), 2)
    return None


def boot_figures(answer: dict[str, Any]) -> Figures:
    """The figures of one ``engine_start.py`` answer."""
    kv_log = [str(x) for x in answer.get("kv_log") or []]
    if not answer.get("ok"):
        return Figures(refusal=f"[{answer.get('stage')}] {answer.get('error')}", kv_log=tuple(kv_log))
    conc = answer.get("concurrency")
    weights = answer.get("weights_bytes") or []
    budget = answer.get("budget") or {}
    return Figures(
        weights_gib=round(int(weights[0]) / (1 << 30), 2) if weights else None,
        available_gib=round(int(budget["available"][1]) / (1 << 30), 2) if budget.get("available") else None,
        available_bytes=int(budget["available"][1]) if budget.get("available") else None,
        block_size=answer.get("block_size"),
        groups=tuple(sorted((str(g[0]), int(g[1]), int(g[2]), int(g[3])) for g in answer.get("groups") or [])),
        num_blocks=answer.get("num_blocks"),
        tokens=answer.get("tokens"),
        concurrency=None if conc is None else round(float(conc), 2),
        max_model_len=answer.get("max_model_len"),
        mamba_padding_pct=_padding(kv_log),
        kv_log=tuple(kv_log),
    )


def plan_figures(p: Plan) -> Figures:
    """The same figures from dryboot's plan (pipeline stage 0's projection of the groups, as
    vLLM's scheduler keeps)."""
    doc = plan_to_dict(p)
    errors = doc.get("errors") or {}
    refusal = errors.get("unify") or errors.get("memory")
    if refusal:
        return Figures(refusal=str(refusal), kv_log=tuple(doc.get("log") or []))
    stage0 = set(doc["pipeline_stages"][0]) if doc.get("pipeline_stages") else None
    cap = doc.get("capacity") or {}
    groups = [
        (
            KIND_TO_VLLM.get(g["kind"], g["kind"]),
            int(g["block_size"]),
            int(g["page_size_bytes"]),
            len(g["layer_names"]) if stage0 is None else len(stage0.intersection(g["layer_names"])),
        )
        for g in (doc.get("grouping") or {}).get("groups") or []
    ]
    conc = cap.get("max_concurrency")
    pad = doc.get("mamba_padding_pct")
    return Figures(
        block_size=doc.get("block_size"),
        groups=tuple(sorted(groups)),
        num_blocks=cap.get("num_blocks"),
        tokens=cap.get("kv_cache_size_tokens"),
        concurrency=None if conc is None else round(float(conc), 2),
        max_model_len=doc.get("max_model_len"),
        mamba_padding_pct=None if not pad else round(float(pad), 2),
        kv_log=tuple(doc.get("log") or []),
    )


#: (attribute, label) of the compared figures, in report order.
COMPARED = (
    ("block_size", "block size"),
    ("mamba_padding_pct", "mamba padding %"),
    ("groups", "KV cache groups"),
    ("num_blocks", "blocks"),
    ("tokens", "GPU KV cache tokens"),
    ("concurrency", "maximum concurrency"),
    ("max_model_len", "max_model_len"),
    ("weights_gib", "Model loading took (GiB)"),
    ("available_gib", "Available KV cache memory (GiB)"),
)
#: Figures only the trees' answers carry (compared when both sides have them).
_TREE_ONLY = ("weights_gib", "available_gib")


def differences(a: Figures, b: Figures, a_name: str = "tree", b_name: str = "dryboot") -> list[str]:
    """Each figure that differs, as ``label: <a_name> X, <b_name> Y``; empty when they agree
    (equal figures, or both refuse: the refusal texts are not compared)."""
    if a.refusal is not None or b.refusal is not None:
        if a.refusal is not None and b.refusal is not None:
            return []
        ra = "refuses" if a.refusal is not None else "starts"
        rb = "refuses" if b.refusal is not None else "starts"
        why = str(a.refusal or b.refusal)
        return [f"engine start: {a_name} {ra}, {b_name} {rb} ({clip(why, 120)})"]
    return [
        f"{label}: {a_name} {getattr(a, attr)}, {b_name} {getattr(b, attr)}"
        for attr, label in COMPARED
        if getattr(a, attr) != getattr(b, attr)
        and not (attr in _TREE_ONLY and (getattr(a, attr) is None or getattr(b, attr) is None))
    ]
