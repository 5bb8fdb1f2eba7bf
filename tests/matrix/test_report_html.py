"""``render_html``: one self-contained page whose grid cells say what ``--json`` says, with every
string from the input escaped; read back by Python's HTML parser and by headless Chromium after the
page's own script ran."""

from __future__ import annotations

import re
from pathlib import Path

from chromium import Cells, check_cells, dump_dom
from reports_sample import ARMS, HOSTILE, cli_matrix, run_cli, sample

from dryboot.matrix.model import MatrixResult
from dryboot.matrix.report_html import arm_attribute, arm_attributes, render_html


def test_cells_match_the_json_document() -> None:
    result = sample()
    cells = Cells(render_html(result))
    check_cells(cells, result.as_json())
    # the model x GPU without a cell in the second flag set is an empty cell, not a missing column
    assert len(cells.cells) == 7


def test_hostile_strings_are_text_not_markup() -> None:
    page = render_html(sample())
    cells = Cells(page)
    assert cells.tags.count("script") == 1  # the page's own; none from a model name or message
    assert "img" not in cells.tags and "a" not in cells.tags and "b" not in cells.tags
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    # escaped twice where it already held an entity: "&amp;" stays visible as written
    assert "&amp;amp;" in page
    assert not re.search(r"\son\w+=", page.replace("onerror=alert(1)&gt;", ""))


def test_self_contained_no_network() -> None:
    page = render_html(sample())
    assert "default-src 'none'" in page  # the page may fetch nothing, whatever its text says
    assert not re.search(r"<(link|iframe|object|embed|img)\b", page)
    assert not re.search(r"""\b(src|href)=["']?(https?:)?//""", page)


def test_arm_attribute_names() -> None:
    assert arm_attribute("PR #12 </template>") == "pr-12-template"
    assert arm_attribute("0.28.0") == "0.28.0"
    assert arm_attribute("☃") == "arm"
    # a clash (and dryboot's plan arm) gets a suffix in arm order
    assert arm_attributes(["a b", "a-b"]) == {"dryboot": "dryboot", "a b": "a-b", "a-b": "a-b-2"}
    assert arm_attributes(["Dryboot!"])["Dryboot!"] == "dryboot-2"  # not the plan's


def test_page_in_headless_chromium(tmp_path: Path) -> None:
    """The page as Chromium builds it, its script run, opened at the differing cell's link."""
    result: MatrixResult = sample()
    page = tmp_path / "matrix.html"
    page.write_text(render_html(result), encoding="utf-8")
    differing = next(c for c in result.cells if c.agreement == "differs")
    from urllib.parse import quote

    cells = Cells(dump_dom(page, quote(differing.id, safe="")))
    assert cells.body.get("data-ready") == str(len(result.cells))  # the script ran to its end
    check_cells(cells, result.as_json())
    assert "img" not in cells.tags
    # the link opened that cell's details: its diff, each arm's figures
    assert not cells.detail_hidden
    text = "".join(cells.detail_text)
    for line in differing.diff:
        assert line in text
    assert f"{ARMS[1]}: 140,000 / 448 / ok" in text
    assert "selected" in cells.cells[differing.id]["class"].split()


def test_cli_report_in_headless_chromium_matches_its_json(tmp_path: Path) -> None:
    """``dryboot matrix --json --html --junit`` on a real matrix: the page Chromium builds holds
    every cell of the JSON document, each arm's tokens equal, the differing cell marked; the JUnit
    file has a test case per cell, failures where the JSON says."""
    import json
    import xml.etree.ElementTree as ET

    html, xml = tmp_path / "m.html", tmp_path / "m.xml"
    code, out, err = run_cli(
        "matrix",
        str(cli_matrix(tmp_path)),
        "--no-cache",
        "--workers",
        "2",
        "--json",
        "--html",
        str(html),
        "--junit",
        str(xml),
    )
    doc = json.loads(out)
    assert code == doc["exit_code"] == 1, err
    assert {c["agreement"] for c in doc["cells"]} == {"identical", "differs", "both refuse"}
    cells = Cells(dump_dom(html))
    assert cells.body.get("data-ready") == str(len(doc["cells"]))
    check_cells(cells, doc)
    root = ET.fromstring(xml.read_bytes())
    cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    assert set(cases) == {(c["flag_set"], f"{c['model']} @ {c['gpu']}") for c in doc["cells"]}
    for c in doc["cells"]:
        case = cases[(c["flag_set"], f"{c['model']} @ {c['gpu']}")]
        assert (case.find("failure") is not None) == (c["status"] == "failed")
