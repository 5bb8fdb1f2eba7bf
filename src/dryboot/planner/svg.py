"""A picture of the KV pool as vLLM lays it out (``dryboot plan --svg``, ``profiles --svg``).

One row per KV cache group: its kind, block and layers; the group's slots (``group_size`` of
them: a group with fewer layers carries padding layers, whose memory is wasted); one page to
scale (the bytes the layer kind needs, and the padding inside the page: mamba padding, a
drafter page padded to the maximum); and the blocks one full-length request takes in that
group. Below, the pool: ``num_blocks`` blocks, with one full-length request's share. The figures
vLLM logs are the labels.

Drawn with ``drawsvg``, imported here only, so the command line does not load it unless asked.
Every shape carries a ``class`` and its figures as ``data-*`` attributes, so a reader (or a
test) can find them.
"""

from __future__ import annotations

from pathlib import Path

import drawsvg as draw

from dryboot.errors import InputError
from dryboot.planner.plan import Plan

WIDTH = 1260
ROW = 30
FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
COLOURS = {
    "mamba": "#4c78a8",
    "full": "#f58518",
    "rswa": "#f58518",
    "sliding": "#54a24b",
    "chunked": "#b279a2",
    "mla": "#e45756",
}
PADDING = "url(#padding)"

# columns (x positions, widths) of a group row
LABEL_X = 20
SLOTS_X, SLOTS_W = 330, 170
PAGE_X, PAGE_W = 530, 220
REQUEST_X, REQUEST_W = 950, 200
POOL_W = 900


def _text(x: float, y: float, text: str, size: int = 12, **attrs: object) -> draw.Text:
    return draw.Text(text, size, x, y, font_family=FONT, fill="#222", **attrs)


def _hatch() -> draw.Pattern:
    pattern = draw.Pattern(
        width=6, height=6, patternUnits="userSpaceOnUse", patternTransform="rotate(45)", id="padding"
    )
    pattern.append(draw.Rectangle(0, 0, 6, 6, fill="#e4e4e4"))
    pattern.append(draw.Line(0, 0, 0, 6, stroke="#8a8a8a", stroke_width=2))
    return pattern


def render(p: Plan) -> str:
    """The plan's KV pool as an SVG document (text)."""
    groups = p.grouping.groups if p.grouping is not None else ()
    head = [
        f"{p.model.source} ({p.model.architecture})",
        f"vLLM {p.rules.version}, TP {p.args.tensor_parallel_size}, KV {p.kv_cache_dtype} on {p.backend.name}, "
        f"policies {p.policies.grouping} / {p.policies.unification}",
    ]
    if p.drafter is not None:
        head.append(f"drafter: {p.drafter.model.source} ({p.drafter.method})")
    head += [f"vLLM: {line}" for line in p.log]
    if p.unify_error is not None:
        head.append(f"vLLM: NotImplementedError: {p.unify_error}")
    top = 24 + 18 * len(head) + 28
    height = top + ROW * max(1, len(groups)) + 150
    d = draw.Drawing(WIDTH, height, font_family=FONT)
    d.append(draw.Rectangle(0, 0, WIDTH, height, fill="white"))
    d.append_def(_hatch())
    for i, line in enumerate(head):
        kind = "vllm-log" if line.startswith("vLLM: ") else "title"
        d.append(_text(LABEL_X, 24 + 18 * i, line, 14 if i == 0 else 12, class_=kind))
    if not groups:
        return str(d.as_svg())

    cap = p.capacity
    per_request = cap.blocks_per_request if cap is not None else ()
    max_page = max(g.spec.page_size_bytes for g in groups)
    max_blocks = max(per_request, default=0)
    group_size = p.grouping.group_size if p.grouping is not None else 1
    slot_w = SLOTS_W / max(group_size, 1)

    y = top - 10
    d.append(_text(LABEL_X, y, "KV cache group", class_="heading"))
    d.append(_text(SLOTS_X, y, f"its {group_size} layer slots", class_="heading"))
    d.append(_text(PAGE_X, y, "one page (bytes)", class_="heading"))
    if per_request:
        d.append(_text(REQUEST_X, y, "blocks one full-length request takes", class_="heading"))
    for i, g in enumerate(groups):
        y = top + ROW * i
        colour = COLOURS.get(g.kind, "#888")
        layers = len(g.layer_names)
        row = draw.Group(
            class_="group-row",
            data_group=i,
            data_kind=g.kind,
            data_layers=layers,
            data_block_size=g.block_size,
            data_page_bytes=g.spec.page_size_bytes,
        )
        row.append(_text(LABEL_X, y + 15, f"#{i} {g.kind}, block {g.block_size}, {layers} layers", class_="label"))
        slots = group_size if not g.uniform_type else layers
        for s in range(slots):
            real = s < layers
            row.append(
                draw.Rectangle(
                    SLOTS_X + s * slot_w,
                    y,
                    max(slot_w - 1, 0.5),
                    20,
                    fill=colour if real else PADDING,
                    class_="layer" if real else "padding-layer",
                )
            )
        page = g.spec.page_size_bytes
        natural = page if g.uniform_type else min(g.spec.natural_page_size_bytes, page)
        content_w = PAGE_W * natural / max_page
        padding_w = PAGE_W * (page - natural) / max_page
        row.append(draw.Rectangle(PAGE_X, y, content_w, 20, fill=colour, class_="page-content", data_bytes=natural))
        if page > natural:
            row.append(
                draw.Rectangle(
                    PAGE_X + content_w, y, padding_w, 20, fill=PADDING, class_="page-padding", data_bytes=page - natural
                )
            )
        # as vLLM logs it: the padding relative to the unpadded page
        pad = f" (+{100 * (page - natural) / natural:.2f}% padding)" if page > natural else ""
        row.append(_text(PAGE_X + PAGE_W + 6, y + 15, f"{page:,}{pad}", 11, class_="page-label"))
        if per_request:
            blocks = per_request[i]
            bar = REQUEST_W * blocks / max_blocks if max_blocks else 0
            row.append(draw.Rectangle(REQUEST_X, y, bar, 20, fill=colour, class_="request-blocks", data_blocks=blocks))
            row.append(_text(REQUEST_X + bar + 6, y + 15, f"{blocks:,}", 11, class_="request-label"))
        d.append(row)

    y = top + ROW * len(groups) + 24
    padding_layers = sum(max(group_size - len(g.layer_names), 0) for g in groups if not g.uniform_type)
    d.append(
        _text(
            LABEL_X,
            y,
            f"{len(groups)} groups of {group_size} layer slots, {padding_layers} of them padding layers (hatched); "
            "hatched in a page: padding inside the page",
            11,
            class_="legend",
        )
    )
    y += 28
    if cap is not None:
        share = min(1.0, cap.total_blocks_per_request / cap.num_blocks) if cap.num_blocks else 1.0
        pool = draw.Group(
            class_="pool",
            data_num_blocks=cap.num_blocks,
            data_blocks_per_request=cap.total_blocks_per_request,
            data_available_bytes=cap.available_bytes,
        )
        pool.append(
            _text(
                LABEL_X,
                y,
                f"KV pool: {cap.num_blocks:,} blocks x {cap.group_size} slots x {cap.page_size_bytes:,} B "
                f"= {cap.num_blocks * cap.group_size * cap.page_size_bytes:,} B of {cap.available_bytes:,} B",
                class_="pool-label",
            )
        )
        pool.append(draw.Rectangle(LABEL_X, y + 8, POOL_W, 20, fill="#dfe7f2", stroke="#4c78a8", class_="pool-bar"))
        pool.append(
            draw.Rectangle(
                LABEL_X,
                y + 8,
                POOL_W * share,
                20,
                fill="#4c78a8",
                class_="request-share",
                data_blocks=cap.total_blocks_per_request,
            )
        )
        pool.append(
            _text(
                LABEL_X,
                y + 46,
                f"one {cap.max_model_len:,}-token request: {cap.total_blocks_per_request:,} blocks; "
                f"GPU KV cache size: {cap.kv_cache_size_tokens:,} tokens, "
                f"Maximum concurrency: {cap.max_concurrency:.2f}x",
                class_="capacity",
            )
        )
        d.append(pool)
    elif p.memory_error is not None:
        e = p.memory_error
        fits = draw.Group(class_="pool", data_available_bytes=e.available, data_needed_bytes=e.needed)
        fits.append(
            _text(
                LABEL_X,
                y,
                f"does not fit: one {e.max_model_len:,}-token request needs {e.needed:,} B, "
                f"{e.available:,} B available; estimated maximum model length {e.estimated_max_model_len:,}",
                class_="capacity",
            )
        )
        fits.append(draw.Rectangle(LABEL_X, y + 8, POOL_W, 20, fill=PADDING, class_="needed-bar"))
        fits.append(
            draw.Rectangle(LABEL_X, y + 8, POOL_W * e.available / e.needed, 20, fill="#4c78a8", class_="available-bar")
        )
        d.append(fits)
    else:
        d.append(_text(LABEL_X, y, "no KV budget given: blocks and concurrency not computed", class_="capacity"))
    return str(d.as_svg())


def write(p: Plan, path: str | Path, source: str = "--svg") -> None:
    """Write :func:`render` of ``p`` to ``path``.

    :raises InputError: when the file cannot be written (named with ``source``).
    """
    text = render(p)
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(source, str(path), f"cannot write: {exc.strerror or exc}") from None


def file_name(profile: str, arm: str) -> str:
    """A file name for one profile and arm: ``CTX=fast_DFLASH_TOKENS=15--main.svg``."""
    safe = "".join(c if c.isalnum() or c in "._=-" else "_" for c in f"{profile}--{arm}")
    return f"{safe}.svg"
