"""Render a :class:`~dryboot.planner.plan.Plan`: a JSON-ready dict and a human report.

The human report prints vLLM's own log lines verbatim (so a real boot log can be diffed
against it), then tables for layers, groups and capacity, then one verdict per invariant.
``rich`` is imported only when rendering.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection
from typing import Any

from dryboot.planner.assumptions import assumptions
from dryboot.planner.plan import Plan
from dryboot.textout import Column, output_width, table, wrap
from dryboot.vllm.kv_cache_interface import AttentionSpec, LayerSpec, MambaSpec


def spec_dict(spec: LayerSpec) -> dict[str, Any]:
    """A layer spec as JSON (bytes, tokens)."""
    common: dict[str, Any] = {
        "kind": spec.kind,
        "block_size": spec.block_size,
        "page_size_bytes": spec.page_size_bytes,
        "natural_page_size_bytes": spec.natural_page_size_bytes,
        "page_size_padded": spec.page_size_padded,
    }
    if isinstance(spec, MambaSpec):
        common.update(
            mamba_type=spec.layer_kind.value,
            shapes=[list(s) for s in spec.shapes],
            dtypes=list(spec.torch_dtypes),
            mamba_cache_mode=spec.mamba_cache_mode,
            num_speculative_blocks=spec.num_speculative_blocks,
        )
    else:
        common.update(
            num_kv_heads=spec.num_kv_heads,
            head_size=spec.head_size,
            head_size_v=spec.head_size_v,
            kv_cache_dtype=spec.kv_cache_dtype,
            torch_dtype=spec.torch_dtype,
            bytes_per_head_token=spec.content_bytes,
            backend=spec.backend,
            sliding_window=spec.sliding_window,
            attention_chunk_size=spec.attention_chunk_size,
        )
    return common


def summary(p: Plan) -> dict[str, Any]:
    """The figures a launcher profile is judged by (also what arms are compared on)."""
    drafter_blocks = sorted({lp.spec.block_size for lp in p.layers if lp.role == "drafter"})
    cap = p.capacity
    return {
        "attention_block_size": p.block_size,
        "drafter_block_size": drafter_blocks[0] if len(drafter_blocks) == 1 else drafter_blocks or None,
        "mamba_padding_pct": round(p.block_decision.padding_pct, 2)
        if p.block_decision and p.block_decision.padding_pct is not None
        else None,
        "page_size_bytes": p.page_size_bytes,
        "num_groups": p.grouping.num_groups if p.grouping else None,
        "group_size": p.grouping.group_size if p.grouping else None,
        "num_blocks": cap.num_blocks if cap else None,
        "blocks_per_request": cap.total_blocks_per_request if cap else None,
        "kv_cache_size_tokens": cap.kv_cache_size_tokens if cap else None,
        "max_concurrency": round(cap.max_concurrency, 2) if cap else None,
        "max_model_len": p.max_model_len,
        "estimated_max_model_len": p.memory_error.estimated_max_model_len if p.memory_error else None,
        "ok": p.ok,
        "violations": [i.name for i in p.invariants if not i.ok],
    }


def plan_to_dict(p: Plan, given: Collection[str] | None = None) -> dict[str, Any]:
    """Every figure of the plan as plain JSON types, with what they assume
    (``given``: the engine flags the user gave, see :func:`dryboot.planner.assumptions.assumptions`)."""

    cap = p.capacity
    return {
        "model": p.model.source,
        "architecture": p.model.architecture,
        "vllm_version": p.rules.version,
        "policies": {"grouping": p.policies.grouping, "unification": p.policies.unification},
        "model_dtype": p.model_dtype,
        "kv_cache_dtype": p.kv_cache_dtype,
        "attention_backend": p.backend.name,
        "tensor_parallel_size": p.args.tensor_parallel_size,
        "pipeline_parallel_size": p.args.pipeline_parallel_size,
        "data_parallel_size": p.args.data_parallel_size,
        "pipeline_stages": [list(s) for s in p.pipeline_stages],
        "num_speculative_tokens": p.args.num_speculative_tokens,
        "max_model_len": p.max_model_len,
        "block_size": p.block_size,
        "mamba_page_size_bytes": p.mamba_page_size_bytes,
        "mamba_page_size_padded": p.block_decision.mamba_page_size_padded if p.block_decision else None,
        "mamba_padding_pct": p.block_decision.padding_pct if p.block_decision else None,
        "summary": summary(p),
        "layers": [
            {"name": lp.name, "role": lp.role, "initial": spec_dict(lp.initial), "unified": spec_dict(lp.spec)}
            for lp in p.layers
        ],
        "decisions": [{"layer": d.layer, "action": d.action, "message": d.message} for d in p.decisions],
        "grouping": None
        if p.grouping is None
        else {
            "path": p.grouping.path,
            "group_size": p.grouping.group_size,
            "groups": [
                {
                    "kind": g.kind,
                    "block_size": g.block_size,
                    "page_size_bytes": g.spec.page_size_bytes,
                    "layer_names": list(g.layer_names),
                }
                for g in p.grouping.groups
            ],
            "decisions": list(p.grouping.decisions),
        },
        "capacity": None
        if cap is None
        else {
            "available_bytes": cap.available_bytes,
            "page_size_bytes": cap.page_size_bytes,
            "group_size": cap.group_size,
            "num_blocks": cap.num_blocks,
            "blocks_per_request": list(cap.blocks_per_request),
            "total_blocks_per_request": cap.total_blocks_per_request,
            "max_concurrency": cap.max_concurrency,
            "kv_cache_size_tokens": cap.kv_cache_size_tokens,
            "request_bytes": cap.request_bytes,
        },
        "scheduler_block_size": p.scheduler_block_size,
        "hash_block_size": p.hash_block_size,
        "errors": {
            "unify": str(p.unify_error) if p.unify_error else None,
            "memory": str(p.memory_error) if p.memory_error else None,
            "estimated_max_model_len": p.memory_error.estimated_max_model_len if p.memory_error else None,
            "request_bytes": p.memory_error.needed if p.memory_error else None,
        },
        "invariants": [
            {"name": i.name, "ok": i.ok, "detail": i.detail, "consequence": i.consequence} for i in p.invariants
        ],
        "log": list(p.log),
        "log_note": p.log_note,
        "notes": list(p.notes),
        "assumptions": [a.to_dict() for a in assumptions(p, given)],
        "ok": p.ok,
    }


def _as_built_and_unified(built: str, unified: str) -> str:
    """``544`` when unification kept the figure, ``16 -> 864`` when it changed it."""
    return built if built == unified else f"{built} -> {unified}"


def _layer_rows(p: Plan) -> list[tuple[str, ...]]:
    """Layers with the same role and spec (as built and as unified) folded into one row."""
    rows: list[tuple[str, ...]] = []
    counts: Counter[tuple[str, ...]] = Counter()
    order: list[tuple[str, ...]] = []
    for lp in p.layers:
        s = lp.spec
        if isinstance(s, AttentionSpec):
            what = f"{s.describe()}, {s.num_kv_heads}x{s.head_size} {s.kv_cache_dtype}"
        else:
            what = f"{s.describe()} state {' + '.join('x'.join(map(str, sh)) for sh in s.shapes)}"
        key: tuple[str, ...] = (
            lp.role,
            what,
            _as_built_and_unified(f"{lp.initial.block_size}", f"{s.block_size}"),
            _as_built_and_unified(f"{lp.initial.page_size_bytes:,}", f"{s.page_size_bytes:,}"),
            lp.backend,
        )
        if key not in counts:
            order.append(key)
        counts[key] += 1
    for key in order:
        rows.append((str(counts[key]), *key))
    return rows


def shown_path(path: str) -> str:
    """``path`` as the report shows it: relative to the current directory when it lies beneath
    it (a path is one word the report cannot wrap, so a deep clone's absolute path would widen
    the report), else as given."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if relative.startswith("..") else relative


def render_text(
    p: Plan, width: int | None = None, given: Collection[str] | None = None, verdict: str | None = None
) -> str:
    """The human report as text, fitted to ``width`` columns (default: the terminal's, or
    ``COLUMNS``, or 80 when piped; see :mod:`dryboot.textout`).

    Tables too wide for ``width`` are stacked; prose wraps. The lines vLLM would log are
    quoted verbatim, one per line, whatever the width, so a boot log can be diffed against
    them. ``given``: the engine flags the user gave (for what the figures assume). ``verdict``:
    the last line's replacement (``""``: none; ``dryboot plan`` prints its one verdict after the
    weights and the budget).
    """

    w = width or output_width()
    out: list[str] = []
    kv = f"{p.kv_cache_dtype} ({p.model_dtype})" if p.kv_cache_dtype == "auto" else p.kv_cache_dtype
    out += wrap(
        f"dryboot plan: {shown_path(p.model.source)} ({p.model.architecture}) on vLLM {p.rules.version}, "
        f"TP {p.args.tensor_parallel_size}, KV {kv} on {p.backend.name}, "
        f"policies {p.policies.grouping} / {p.policies.unification}",
        w,
        "",
        "  ",
    )
    if p.drafter is not None:
        out += wrap(f"drafter: {shown_path(p.drafter.model.source)} ({p.drafter.method})", w, "", "  ")
    out.append("")
    out.append("vLLM would log:")
    out += [f"  {line}" for line in p.log]
    if p.unify_error:
        out.append(f"  NotImplementedError: {p.unify_error}")
    if p.memory_error:
        out.append(f"  ValueError: {p.memory_error}")
    if p.log_note:
        out += wrap(f"({p.log_note})", w, "  ", "   ")
    elif not (p.log or p.unify_error or p.memory_error):
        out.append("  (no KV cache line predicted: no KV budget)")
    out.append("")

    layer_cols = [
        Column(h, right=h in ("n", "block", "page B"), wrap=h == "spec")
        for h in ("n", "role", "spec", "block", "page B", "backend/mode")
    ]
    out += table(
        "Layers (block and page as built -> as unified)",
        layer_cols,
        _layer_rows(p),
        w,
        key_columns=3,
        heading=lambda r: f"{r[0]} {r[1]} layer{'' if r[0] == '1' else 's'}: {r[2]}",
    )
    if p.decisions:
        out.append("Unification decisions:")
        for d in p.decisions:
            out += wrap(d.message, w, "  ", "    ")
    if p.grouping is not None and p.grouping.groups:
        per = p.capacity.blocks_per_request if p.capacity else ()
        group_rows = [
            [
                str(i),
                g.kind,
                str(len(g.layer_names)),
                str(g.block_size),
                f"{g.spec.page_size_bytes:,}",
                f"{per[i]:,}" if per else "-",
            ]
            for i, g in enumerate(p.grouping.groups)
        ]
        out += table(
            f"KV cache groups ({p.grouping.path}, group_size {p.grouping.group_size})",
            [Column(h, right=h != "kind") for h in ("#", "kind", "layers", "block", "page B", "blocks/request")],
            group_rows,
            w,
            key_columns=2,
            heading=lambda r: f"group {r[0]}: {r[1]}",
        )
        for line in p.grouping.decisions:
            out += wrap(line, w, "  ", "    ")
    cap = p.capacity
    if cap is not None:
        out += table(
            "Capacity",
            [Column("figure"), Column("value", right=True)],
            [
                ["KV budget", f"{cap.available_bytes:,} B"],
                ["page x group_size", f"{cap.page_size_bytes:,} B x {cap.group_size}"],
                ["num_blocks", f"{cap.num_blocks:,}"],
                ["blocks per request", f"{cap.total_blocks_per_request:,}"],
                ["GPU KV cache size", f"{cap.kv_cache_size_tokens:,} tokens"],
                ["max concurrency", f"{cap.max_concurrency:.2f}x at {cap.max_model_len:,} tokens"],
                ["one full-length request", f"{cap.request_bytes:,} B"],
            ],
            w,
            show_header=False,
        )
    if p.memory_error is not None:
        out += wrap(
            f"one {p.memory_error.max_model_len:,}-token request needs {p.memory_error.needed:,} B; "
            f"estimated maximum model length {p.memory_error.estimated_max_model_len:,}",
            w,
        )
    if p.scheduler_block_size is not None:
        out += wrap(f"scheduler block {p.scheduler_block_size}, hash block {p.hash_block_size}", w)
    for note in p.notes:
        out += wrap(f"note: {note}", w, "", "      ")
    for a in assumptions(p, given):
        out += wrap(a.line(), w, "", "  ")
    out.append("")
    out.append("Invariants:")
    for inv in p.invariants:
        mark = "ok  " if inv.ok else "FAIL"
        tail = f" -> {inv.consequence}" if not inv.ok and inv.consequence else ""
        out += wrap(f"[{mark}] {inv.name}: {inv.detail}{tail}", w, "  ", "         ")
    if verdict is None:
        verdict = "OK" if p.ok else "VIOLATED: " + ", ".join(i.name for i in p.invariants if not i.ok)
        if p.ok and any(n.startswith("KV budget not estimated") for n in p.notes):
            verdict += " (the geometry; whether the KV cache fits the GPU is undetermined: KV budget not estimated)"
        out += wrap(f"verdict: {verdict}", w, "", "  ")
    elif verdict:
        out += wrap(verdict, w, "", "  ")
    return "\n".join(out) + "\n"
