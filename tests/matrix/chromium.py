"""Headless Chromium for the HTML report tests: the page as its DOM stands after its own script
ran (``--dump-dom``), parsed into the cells a test compares with ``--json``.

Debian's ``chromium`` (``.ci/run`` installs it); without it the tests skip, saying so, unless ``CI``
is set, where they fail. Chromium runs with no network use of its own (no sync, no component
updates, no background networking) in a fresh profile directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from dryboot.matrix.model import PLAN_ARM
from dryboot.matrix.report_html import arm_attributes

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium() -> str:
    """The Chromium binary, or a skip (a failure when ``CI`` is set)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        reason = "headless Chromium is not installed (apt-get install -y chromium; .ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def dump_dom(page: Path, fragment: str = "") -> str:
    """The DOM of ``page`` (``file://``, ``#fragment`` appended) after its scripts ran."""
    with tempfile.TemporaryDirectory(prefix="dryboot-chromium-") as profile:
        url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
        run = subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


class Cells(HTMLParser):
    """Every ``<td data-cell>``'s attributes, the body's attributes, the detail panel's text,
    and the tags seen (a test asserts no injected ``<img>`` or second ``<script>``)."""

    def __init__(self, dom: str) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: dict[str, dict[str, str]] = {}
        self.body: dict[str, str] = {}
        self.tags: list[str] = []
        self.detail_hidden = True
        self.detail_text: list[str] = []
        self._in_detail = 0
        self.feed(dom)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append(tag)
        if tag == "body":
            self.body = a
        if tag == "td" and "data-cell" in a:
            self.cells[a["data-cell"]] = a
        if self._in_detail and tag not in ("br", "img", "input", "meta"):
            self._in_detail += 1
        if a.get("id") == "detail":
            self.detail_hidden = "hidden" in a
            self._in_detail = 1

    def handle_endtag(self, tag: str) -> None:
        if self._in_detail:
            self._in_detail -= 1

    def handle_data(self, data: str) -> None:
        if self._in_detail:
            self.detail_text.append(data)


def check_cells(cells: Cells, doc: dict[str, Any]) -> None:
    """Every cell of the ``--json`` document ``doc`` is on the page once, with its status,
    agreement and each arm's tokens (dryboot's plan's too); a differing cell is marked."""
    attrs = arm_attributes(doc["arms"])
    assert set(cells.cells) == {c["id"] for c in doc["cells"]}
    for c in doc["cells"]:
        got = cells.cells[c["id"]]
        assert got["data-status"] == c["status"], c["id"]
        assert got["data-agreement"] == c["agreement"], c["id"]
        for arm, task in [(PLAN_ARM, c["plan"]), *c["arms"].items()]:
            want = "" if task["tokens"] is None else str(task["tokens"])
            assert got[f"data-tokens-{attrs[arm]}"] == want, (c["id"], arm)
        classes = got["class"].split()
        assert c["status"] in classes or "differs" in classes, (c["id"], classes)
        assert ("differs" in classes) == (c["agreement"] == "differs"), (c["id"], classes)
