"""``dryboot matrix --html FILE``: the whole matrix as one self-contained HTML page.

One file, no server, no network: inline CSS and a small inline script, no fonts, images or
scripts fetched. Per flag set a grid of models (rows) × GPUs (columns); each cell lists dryboot's
plan and every arm's GPU KV cache tokens / block size / verdict, coloured where the first two arms
differ, where an expectation fails and where a task is in error; a click (or Enter) on a cell shows
its details under the grid: the expectation, each arm's reason, and the unified diff of the first
two arms' KV lines (or the lines themselves when they agree); ``report.html#<cell id>`` opens with
that cell's details shown.

Every cell element carries the attributes a test reads back against ``--json`` (MATRIX-SPEC.md):
``data-cell`` (the cell id), ``data-status`` (``met``/``failed``/``error``), ``data-agreement``,
and ``data-tokens-<arm>`` per arm (and for dryboot's plan, arm ``dryboot``): the tokens as an
integer, empty when the arm did not boot. ``<arm>`` is the arm's name as :func:`arm_attribute`
makes it an attribute name.

Every string from the input (model, GPU, flag set and arm names, vLLM's lines and messages) is
escaped with :func:`html.escape`; the script reads the page's DOM and never builds markup from text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from html import escape

from dryboot.matrix.model import PLAN_ARM, CellResult, MatrixResult, TaskResult

_NOT_ATTR = re.compile(r"[^a-z0-9_.-]+")


def arm_attribute(arm: str) -> str:
    """The ``data-tokens-`` suffix for ``arm``: lowercased, every run of characters outside
    ``[a-z0-9_.-]`` one ``-`` (``"PR #12"`` -> ``pr-12``), ``arm`` when nothing is left.
    Two arms that map to the same suffix are told apart by :func:`arm_attributes`."""
    text = _NOT_ATTR.sub("-", arm.lower()).strip("-")
    return text or "arm"


def arm_attributes(arms: Sequence[str]) -> dict[str, str]:
    """Each arm's ``data-tokens-`` suffix, unique over ``arms`` and dryboot's plan arm (a
    clash gets ``-2``, ``-3``... in arm order). The page's ``<body data-arms>`` holds the map as JSON."""
    taken = {PLAN_ARM}
    out = {PLAN_ARM: PLAN_ARM}
    for arm in arms:
        base = arm_attribute(arm)
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        out[arm] = name
    return out


def arm_summary(task: TaskResult) -> str:
    """One arm's cell text: ``tokens / block / verdict`` (``68,605 / 448 / ok``), or the status
    alone (``refused``, ``error``) when it did not boot."""
    if task.status != "ok":
        return task.status
    tokens = "-" if task.tokens is None else f"{task.tokens:,}"
    block = "-" if task.block_size is None else str(task.block_size)
    return f"{tokens} / {block} / ok"


_CSS = """
body{font:14px/1.35 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.2em;color:#1d232a;background:#fafbfc}
h1{font-size:1.3em;margin:0 0 .3em}h2{font-size:1.1em;margin:1.4em 0 .4em}
.summary span{margin-right:1.2em}.legend span{display:inline-block;padding:.1em .5em;margin:.2em .4em .2em 0;
border:1px solid #c8ced6;border-radius:3px}
table.grid{border-collapse:collapse;margin:.3em 0}
.grid th{background:#eef1f5;padding:.3em .6em;border:1px solid #c8ced6;text-align:left;font-weight:600}
.grid td{border:1px solid #c8ced6;padding:.3em .5em;vertical-align:top;min-width:11em;cursor:pointer}
.grid td.none{background:repeating-linear-gradient(45deg,#f3f4f6,#f3f4f6 5px,#e9ebee 5px,#e9ebee 10px);cursor:default}
.grid td:focus{outline:2px solid #2b6cb0;outline-offset:-2px}
td.met{background:#eaf7ee}td.differs{background:#fff4d6}td.failed{background:#fde2e1}
td.error{background:#ece4f7}td.failed.differs{border-left:5px solid #e0a800}
td.selected{box-shadow:inset 0 0 0 2px #2b6cb0}
.arm{white-space:nowrap;font-variant-numeric:tabular-nums}.arm strong{font-weight:600;margin-right:.4em}
.arm.plan{color:#5b6573}.arm.refused{color:#9a3412}.arm.error{color:#6b21a8}
.verdict{font-size:.85em;color:#5b6573;margin-top:.15em}
#detail{position:sticky;bottom:0;background:#fff;border-top:2px solid #2b6cb0;padding:.5em 1em;max-height:45vh;
overflow:auto;margin:1em -1.2em -1.2em}
#detail[hidden]{display:none}#detail h3{margin:.2em 0;font-size:1em}
pre{margin:.3em 0;font:12px/1.3 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap}
pre .add{color:#166534;background:#e8f7ec;display:block}pre .del{color:#9f1239;background:#fdecee;display:block}
pre .hunk{color:#5b6573;display:block}
""".strip()

_SCRIPT = """
(function(){
  var panel=document.getElementById('detail');
  var body=document.getElementById('detail-body');
  var current=null;
  function show(cell){
    if(current){current.classList.remove('selected');}
    if(current===cell){current=null;panel.hidden=true;return;}
    current=cell;cell.classList.add('selected');
    try{history.replaceState(null,'','#'+encodeURIComponent(cell.getAttribute('data-cell')));}catch(e){}
    var tpl=cell.querySelector('template');
    body.replaceChildren(tpl.content.cloneNode(true));
    panel.hidden=false;
  }
  var cells=document.querySelectorAll('td[data-cell]');
  cells.forEach(function(cell){
    cell.addEventListener('click',function(){show(cell);});
    cell.addEventListener('keydown',function(e){if(e.key==='Enter'||e.key===' '){e.preventDefault();show(cell);}});
  });
  document.getElementById('detail-close').addEventListener('click',function(){if(current){show(current);}});
  // report.html#<cell id> opens with that cell's details shown (a link to one cell)
  if(location.hash.length>1){
    var id=decodeURIComponent(location.hash.slice(1));
    cells.forEach(function(cell){if(cell.getAttribute('data-cell')===id){show(cell);}});
  }
  document.body.setAttribute('data-ready',String(cells.length));
})();
""".strip()


def _attr(value: str) -> str:
    return escape(value, quote=True)


def _diff_lines(lines: Iterable[str]) -> str:
    out = []
    for line in lines:
        css = (
            "hunk"
            if line.startswith(("@@", "---", "+++"))
            else "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else ""
        )
        out.append(f'<span class="{css}">{escape(line)}</span>' if css else escape(line) + "\n")
    return "".join(out)


def _arm_line(label: str, task: TaskResult, plan: bool = False) -> str:
    css = "arm plan" if plan else f"arm {task.status}"
    title = f' title="{_attr(task.reason)}"' if task.reason else ""
    return f'<div class="{css}"{title}><strong>{escape(label)}</strong>{escape(arm_summary(task))}</div>'


def _detail(cell: CellResult, arms: Sequence[str]) -> str:
    parts = [f"<h3>{escape(cell.model)} @ {escape(cell.gpu)} — {escape(cell.flag_set)}</h3>"]
    verdict = cell.status + (f": {cell.why}" if cell.why else "")
    parts.append(f"<p>agreement: {escape(cell.agreement)}; expectation: {escape(cell.expectation or 'none stated')}")
    parts.append(f"; {escape(verdict)}</p>")
    parts.append("<ul>")
    for label, task in [(PLAN_ARM, cell.plan), *((a, cell.arms[a]) for a in arms if a in cell.arms)]:
        reason = f" — {escape(task.reason)}" if task.reason else ""
        where = f" ({escape(task.worker)}, {task.seconds:.2f} s{', cached' if task.cached else ''})"
        parts.append(f"<li><strong>{escape(label)}</strong>: {escape(arm_summary(task))}{reason}{where}</li>")
    parts.append("</ul>")
    if cell.changes:
        parts.append("<p>" + "<br>".join(escape(c) for c in cell.changes) + "</p>")
    if cell.diff:
        parts.append(f'<pre class="diff">{_diff_lines(cell.diff)}</pre>')
    else:
        first = next((cell.arms[a] for a in arms if a in cell.arms), None)
        if first is not None and first.lines:
            parts.append("<p>the arms' KV lines (no difference):</p>")
            parts.append(f'<pre class="lines">{escape(chr(10).join(first.lines))}</pre>')
    return "".join(parts)


def _cell(cell: CellResult, arms: Sequence[str], attrs: dict[str, str]) -> str:
    css = cell.status
    if cell.status == "met" and cell.agreement == "differs":
        css = "differs"  # met (an expectation that allows it), yet the arms differ
    elif cell.status == "failed" and cell.agreement == "differs":
        css = "failed differs"
    data = [
        f'data-cell="{_attr(cell.id)}"',
        f'data-status="{_attr(cell.status)}"',
        f'data-agreement="{_attr(cell.agreement)}"',
        f'data-tokens-{PLAN_ARM}="{"" if cell.plan.tokens is None else cell.plan.tokens}"',
    ]
    lines = [_arm_line(PLAN_ARM, cell.plan, plan=True)]
    for arm in arms:
        task = cell.arms.get(arm)
        if task is None:
            continue
        data.append(f'data-tokens-{attrs[arm]}="{"" if task.tokens is None else task.tokens}"')
        lines.append(_arm_line(arm, task))
    verdict = cell.agreement + ("" if cell.status == "met" else f" · {cell.status}")
    title = f' title="{_attr(cell.why)}"' if cell.why else ""
    return (
        f'<td class="{css}" tabindex="0" {" ".join(data)}{title}>'
        + "".join(lines)
        + f'<div class="verdict">{escape(verdict)}</div>'
        + f"<template>{_detail(cell, arms)}</template></td>"
    )


def render_html(result: MatrixResult) -> str:
    """The page for ``result``: one HTML5 document (UTF-8), self-contained.

    Grids in ``result.flag_sets`` order, rows ``result.models``, columns ``result.gpus``; a model ×
    GPU with no cell in a flag set is an empty hatched ``<td class="none">`` (no ``data-cell``).
    """
    arms = list(result.arms)
    attrs = arm_attributes(arms)
    by_key = {(c.flag_set, c.model, c.gpu): c for c in result.cells}
    counts = {s: sum(1 for c in result.cells if c.status == s) for s in ("met", "failed", "error")}
    differs = sum(1 for c in result.cells if c.agreement == "differs")
    title = f"dryboot matrix: {result.source}" if result.source else "dryboot matrix"
    attr_map = json.dumps({a: attrs[a] for a in arms})
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # nothing may be fetched: no network, whatever the input holds
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">",
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>",
        f'<body data-exit-code="{result.exit_code}" data-arms="{_attr(attr_map)}">',
        f"<h1>{escape(title)}</h1>",
        '<p class="summary">'
        f"<span>{len(result.cells)} cells</span><span>{counts['met']} met</span>"
        f"<span>{counts['failed']} failed</span><span>{counts['error']} in error</span>"
        f"<span>{differs} where {escape(' and '.join(arms[:2]))} differ</span>"
        f"<span>exit {result.exit_code}</span><span>{result.seconds:.1f} s</span>"
        f"<span>{result.cache_hits} tasks from the cache</span></p>",
        '<p class="legend">each cell: arm tokens / block size / verdict; '
        '<span class="met" style="background:#eaf7ee">met</span>'
        '<span style="background:#fff4d6;border-left:5px solid #e0a800">arms differ</span>'
        '<span style="background:#fde2e1">expectation not met</span>'
        '<span style="background:#ece4f7">error</span> — click a cell for its diff</p>',
    ]
    for flag_set in result.flag_sets:
        out.append(f"<h2>{escape(flag_set)}</h2>")
        out.append(f'<table class="grid" data-flag-set="{_attr(flag_set)}"><thead><tr><th>model \\ GPU</th>')
        out.extend(f"<th>{escape(gpu)}</th>" for gpu in result.gpus)
        out.append("</tr></thead><tbody>")
        for model in result.models:
            out.append(f'<tr><th scope="row">{escape(model)}</th>')
            for gpu in result.gpus:
                cell = by_key.get((flag_set, model, gpu))
                out.append('<td class="none"></td>' if cell is None else _cell(cell, arms, attrs))
            out.append("</tr>")
        out.append("</tbody></table>")
    out.append(
        '<section id="detail" hidden><button id="detail-close" type="button">close</button>'
        '<div id="detail-body"></div></section>'
    )
    out.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(out) + "\n"
