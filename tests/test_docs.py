"""The docs the code cites are the repository's own, and the sections cited exist."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CITING = [*REPO.glob("src/dryboot/**/*.py"), *REPO.glob("tests/**/*.py"), REPO / "README.md", *REPO.glob("examples/*")]


def citations() -> list[tuple[Path, str, str | None]]:
    found = []
    for path in CITING:
        if path.is_file() and path.name != "test_docs.py":
            text = path.read_text(encoding="utf-8")
            for m in re.finditer(r"(?<![\w/.])(docs/[\w.-]+\.md)`*(?: section (\d+))?", text):
                found.append((path, m.group(1), m.group(2)))
    return found


def test_cited_docs_and_sections_exist() -> None:
    cited = citations()
    assert {doc for _, doc, _ in cited} >= {"docs/kv-geometry-rules.md", "docs/patch-semantics.md"}
    for path, doc, section in cited:
        target = REPO / doc
        assert target.is_file(), f"{path.relative_to(REPO)} cites {doc}, which is not in the repository"
        if section is not None:
            headings = re.findall(r"^## (\d+)\.", target.read_text(encoding="utf-8"), re.M)
            assert section in headings, f"{path.relative_to(REPO)} cites {doc} section {section}"
