"""The docs the code cites are the repository's own, and the sections cited exist."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CITING = [*REPO.glob("src/dryboot/**/*.py"), *REPO.glob("tests/**/*.py"), REPO / "README.md", *REPO.glob("examples/*")]


#: Reference pages the README links that other branches of issue 28 write (budget, weights,
#: gpumem): allowed to be missing until those branches are merged, checked once present.
PENDING: frozenset[str] = frozenset()
#: dryboot's commands, each with its reference page under docs/.
COMMAND_PAGES = {
    "plan": "docs/plan.md",
    "check-log": "docs/check-log.md",
    "profiles": "docs/profiles.md",
    "sweep": "docs/sweep.md",
    "boot": "docs/boot.md",
    "series": "docs/series.md",
}


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
        if doc in PENDING and not target.is_file():
            continue
        assert target.is_file(), f"{path.relative_to(REPO)} cites {doc}, which is not in the repository"
        if section is not None:
            headings = re.findall(r"^## (\d+)\.", target.read_text(encoding="utf-8"), re.M)
            assert section in headings, f"{path.relative_to(REPO)} cites {doc} section {section}"


def test_every_command_has_its_page_and_the_readme_links_it() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for command, page in COMMAND_PAGES.items():
        assert (REPO / page).is_file(), f"{command}: {page} is missing"
        assert f"]({page})" in readme, f"the README does not link {page}"
        assert (REPO / page).read_text(encoding="utf-8").startswith("# "), page


def test_readme_links_resolve_and_it_stays_short() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) < 8_000, "the README is a newcomer's page: reference goes to docs/"
    for target in re.findall(r"\]\(([^)#:]+)\)", readme):
        if target in PENDING:
            continue
        assert (REPO / target).exists(), f"the README links {target}, which is not in the repository"
    for page in REPO.glob("docs/*.md"):
        for target in re.findall(r"\]\(([\w.-]+\.md)\)", page.read_text(encoding="utf-8")):
            if f"docs/{target}" not in PENDING:
                assert (REPO / "docs" / target).is_file(), f"{page.name} links {target}"


def readme_commands() -> list[str]:
    """The dryboot commands of the README's bash blocks (after an install, before a comment);
    ``boot-env`` builds an environment from the network and is left out."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"```bash\n(.*?)```", readme, re.S):
        for line in block.splitlines():
            command = line.split(" && ")[-1].split("  #")[0].strip()
            if command.startswith("dryboot ") and not command.startswith("dryboot boot-env"):
                found.append(command)
    return found


def test_every_dryboot_example_in_the_readme_runs() -> None:
    import os
    import shlex
    import subprocess
    import sys

    commands = readme_commands()
    assert {c.split()[1] for c in commands} >= {"plan", "check-log", "profiles", "sweep", "series"}
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_CACHE": str(REPO / ".no-hub-cache")}
    for command in commands:
        r = subprocess.run(
            [sys.executable, "-m", "dryboot", *shlex.split(command)[1:]],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=300,
            check=False,
        )
        assert r.returncode == 0, f"{command}: exit {r.returncode}: {r.stderr[-500:]}"


def test_plan_page_states_the_tools_own_counts_and_gpu_names() -> None:
    """newuser-report item 13: the page said 306 architectures and left GPUs out of its --gpu list."""
    from dryboot.vllm.gpus import gpu_table
    from dryboot.vllm.models.registry import architecture_table

    page = " ".join((REPO / "docs" / "plan.md").read_text().split())
    table = architecture_table("0.28.0")
    verified = sum(r.status == "verified" for r in table)
    assert f"({len(table)}: {verified} verified, {len(table) - verified} refused;" in page
    gpu_list = page[page.index("- `--gpu NAME`") : page.index("Anything else: `--gpu sm86:24G`")]
    missing = [name for name in gpu_table() if name not in gpu_list]
    assert not missing, missing
