"""``dryboot matrix --junit FILE``: the matrix as JUnit XML, for a CI's test report.

One ``<testsuite>`` per flag set (``name`` = the flag set), one ``<testcase>`` per cell
(``classname`` = the flag set, ``name`` = ``model @ gpu``, ``time`` = the seconds its tasks took).
A cell whose status is ``failed`` (its expectation not met) carries ``<failure type="expectation">``,
one in ``error`` (a crash, a timeout, a tree that does not import) ``<error type="boot">``; the
message is the cell's one-line reason, the body each arm's figures and the diff of the first two
arms' KV lines. ``<system-out>`` holds each arm's figures and KV lines for every cell.

Built with :mod:`xml.etree.ElementTree` (every string escaped); characters XML 1.0 cannot hold
(a control character in a vLLM message, an ANSI colour code's ESC) are written as ``\\xNN``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from dryboot.matrix.model import PLAN_ARM, CellResult, MatrixResult
from dryboot.matrix.report_html import arm_summary

# what XML 1.0 cannot hold: C0 controls but tab, newline and carriage return; surrogates; U+FFFE/U+FFFF
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` with each character XML 1.0 cannot hold written as ``\\xNN`` (``\\uNNNN``)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


def _figures(cell: CellResult) -> list[str]:
    lines = []
    for arm, task in [(PLAN_ARM, cell.plan), *cell.arms.items()]:
        reason = f" ({task.reason})" if task.reason else ""
        lines.append(f"{arm}: {arm_summary(task)}{reason}")
    lines.append(f"agreement: {cell.agreement}; expectation: {cell.expectation or 'none stated'}")
    lines.extend(cell.changes)
    return lines


def _testcase(suite: ET.Element, cell: CellResult) -> None:
    seconds = sum(t.seconds for t in cell.arms.values()) + cell.plan.seconds
    case = ET.SubElement(
        suite,
        "testcase",
        classname=xml_text(cell.flag_set),
        name=xml_text(f"{cell.model} @ {cell.gpu}"),
        time=f"{seconds:.3f}",
    )
    body = "\n".join([*_figures(cell), *cell.diff])
    if cell.status != "met":
        tag, kind = ("error", "boot") if cell.status == "error" else ("failure", "expectation")
        element = ET.SubElement(case, tag, message=xml_text(cell.why or cell.status), type=kind)
        element.text = xml_text(body)
    out = _figures(cell)
    for arm, task in cell.arms.items():
        if task.lines:
            out.append(f"--- {arm}'s KV lines")
            out.extend(task.lines)
    ET.SubElement(case, "system-out").text = xml_text("\n".join(out))


def render_junit(result: MatrixResult) -> str:
    """``result`` as a JUnit XML document (UTF-8, with its declaration): ``<testsuites>`` with
    the totals (tests, failures, errors, time = the run's wall seconds), then a ``<testsuite>``
    per flag set in ``result.flag_sets`` order, its cells in ``result.cells`` order."""
    failures = sum(1 for c in result.cells if c.status == "failed")
    errors = sum(1 for c in result.cells if c.status == "error")
    root = ET.Element(
        "testsuites",
        name=xml_text(f"dryboot matrix {result.source}".strip()),
        tests=str(len(result.cells)),
        failures=str(failures),
        errors=str(errors),
        time=f"{result.seconds:.3f}",
    )
    for flag_set in result.flag_sets:
        cells = [c for c in result.cells if c.flag_set == flag_set]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=xml_text(flag_set),
            tests=str(len(cells)),
            failures=str(sum(1 for c in cells if c.status == "failed")),
            errors=str(sum(1 for c in cells if c.status == "error")),
            skipped="0",
            time=f"{sum(t.seconds for c in cells for t in (c.plan, *c.arms.values())):.3f}",
        )
        for cell in cells:
            _testcase(suite, cell)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
