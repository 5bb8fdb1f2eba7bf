"""``render_junit``: well-formed JUnit XML, one test case per cell, read back by xml.etree and by
junitparser (a JUnit reader CI tools share), failures and errors where the cells say."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
from reports_sample import sample

from dryboot.matrix.report_junit import render_junit, xml_text


def test_one_testcase_per_cell_with_its_verdict() -> None:
    result = sample()
    root = ET.fromstring(render_junit(result).encode("utf-8"))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("7", "3", "1")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == list(result.flag_sets)
    cases = {(c.get("classname"), c.get("name")): c for s in suites for c in s.findall("testcase")}
    assert len(cases) == len(result.cells)
    for cell in result.cells:
        case = cases[(cell.flag_set, f"{cell.model} @ {cell.gpu}")]
        failure, error = case.find("failure"), case.find("error")
        assert (failure is not None) == (cell.status == "failed"), cell.id
        assert (error is not None) == (cell.status == "error"), cell.id
        out = case.findtext("system-out") or ""
        for task in cell.arms.values():
            assert all(line in out for line in task.lines), cell.id
        if failure is not None:
            assert failure.get("message") == cell.why
            assert all(line in (failure.text or "") for line in cell.diff)
    for suite in suites:
        n = len(suite.findall("testcase"))
        assert suite.get("tests") == str(n)


def test_control_characters_become_visible_escapes() -> None:
    assert xml_text("a\x1b[31mb\x00") == "a\\x1b[31mb\\x00"
    assert xml_text("tab\tnew\nline") == "tab\tnew\nline"
    xml = render_junit(sample())
    assert "\x1b" not in xml
    errors = ET.fromstring(xml).findall(".//error")
    assert len(errors) == 1 and "\\x1b[31m" in (errors[0].get("message") or "")


def test_junitparser_reads_it_back(tmp_path: Path) -> None:
    result = sample()
    path = tmp_path / "matrix.xml"
    path.write_text(render_junit(result), encoding="utf-8")
    xml = junitparser.JUnitXml.fromfile(str(path))
    seen = {}
    for suite in xml:
        for case in suite:
            kinds = [type(r).__name__ for r in case.result]
            seen[(suite.name, case.name)] = kinds
    want = {
        (c.flag_set, f"{c.model} @ {c.gpu}"): {"met": [], "failed": ["Failure"], "error": ["Error"]}[c.status]
        for c in result.cells
    }
    assert seen == want
