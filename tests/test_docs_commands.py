"""Every command of the README's and docs/*.md's shell blocks runs as written (issue 35 item 11),
from a copy of the working tree (nothing is written into the checkout), with ``dryboot`` the
copy's own code: exit 0 or 1 (a finding), never 2 (the page gives input dryboot refuses) and
never a traceback. The extraction is generic: a new ``bash`` block on any page is run too.

What cannot run here is listed in :data:`SKIPPED`, each pattern with its reason (the network,
vLLM's boot environment, a Hugging Face cache); a command whose ``&&`` parts are all skipped is
reported as skipped, one with some parts left runs those. The vLLM releases ``series port
--from-version`` fetches are stood in for by the files of 0.27.1, 0.28.0 and 0.29.0 that the
bundled stack touches (``tests/data/port/syv-qwen38-27b-rtx3090/releases.tar.xz``), laid out in a
``$DRYBOOT_CACHE`` of the run's own as a fetched release is."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

#: pattern (searched in one ``&&`` part of a command) -> why that part is not run here
SKIPPED: dict[str, str] = {
    r"\bpip install\b": "installs packages from the network",
    r"python3 -m pytest\b": "the test suite itself",
    r"\bdryboot boot-env\b": "builds vLLM's boot environment from the network (2.2 GB)",
    r"\bdryboot boot\b|--boot\b|~/\.cache/dryboot/boot-env|\"\$tree\"": "needs vLLM's boot environment",
    r"reference-deployment-matrix\.toml": "needs vLLM's boot environment (a matrix of booted arms)",
    r"fidelity-env\.sh|tests/fidelity/": "needs vLLM's own environment (DRYBOOT_VLLM_PYTHON)",
    r"vllm serve Qwen/Qwen3-8B(?!.*--model)": "",  # filled below: a hub model without --model
    r"^ray (start|stop)\b|--ray\b": "starts, uses or stops a Ray cluster (tests/matrix/test_ray_backend.py runs one)",
    r"series port patches/": "a walk-through on a stack of the reader's own (a conflict is edited by hand between "
    "its commands)",
}
HUB = "names a hub model without --model: needs it in the Hugging Face cache"


def skip_reason(part: str) -> str | None:
    for pattern, why in SKIPPED.items():
        if re.search(pattern, part):
            if "vllm serve" in pattern and "--model" in part:
                continue
            return why or HUB
    return None


def commands(page: Path) -> list[tuple[int, str]]:
    """(line number, command) of every shell block of ``page`` (``bash``, ``sh``, ``shell``, or
    unlabelled and starting with ``dryboot``): continuation lines joined, comment-only lines left
    out."""
    out: list[tuple[int, str]] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        unlabelled_shell = lines[i] == "```" and i + 1 < len(lines) and lines[i + 1].startswith("dryboot ")
        if re.match(r"^```(bash|sh|shell)\s*$", lines[i]) or unlabelled_shell:
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                start, text = i + 1, lines[i]
                while text.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    text = text[:-1] + " " + lines[i].strip()
                if text.strip() and not text.lstrip().startswith("#"):
                    out.append((start, text))
                i += 1
        i += 1
    return out


def runnable(command: str) -> tuple[str | None, list[str]]:
    """(the command without its skipped ``&&`` parts, or ``None``; the reasons of those left out)."""
    kept, why = [], []
    for part in re.split(r"\s+&&\s+", command):
        reason = skip_reason(part)
        if reason is None:
            kept.append(part)
        else:
            why.append(reason)
    return (" && ".join(kept) if kept else None), why


def test_the_pages_have_commands_and_the_skips_are_named() -> None:
    found = {page.name: commands(page) for page in PAGES}
    assert sum(map(len, found.values())) >= 30
    for name in ("README.md", "plan.md", "series.md", "check-log.md", "budget.md", "boot.md", "sweep.md"):
        assert found[name], name
    skipped = [c for cmds in found.values() for _, c in cmds if runnable(c)[0] is None]
    assert all(runnable(c)[1] for c in skipped)
    # what the issue named now runs
    ran = [c for cmds in found.values() for _, c in cmds if runnable(c)[0] is not None]
    assert any("examples/serve.yaml" in c for c in ran)
    assert any("Qwen--Qwen3-8B/ --gpu" in c for c in ran)
    assert any("syv-qwen38-27b-rtx3090/patches --from-version" in c for c in ran)
    assert any('--from "$trees/0.27.1"' in c for c in ran)


def release_cache(dest: Path) -> Path:
    """A ``$DRYBOOT_CACHE`` whose ``releases/X/`` hold the bundled stack's files of each release,
    stamped as ``boot.releases.release_tree`` stamps a fetched one (so nothing is fetched)."""
    with tarfile.open(REPO / "tests" / "data" / "port" / "syv-qwen38-27b-rtx3090" / "releases.tar.xz") as t:
        t.extractall(dest / "releases", filter="data")
    for tree in (dest / "releases").iterdir():
        (tree / ".dryboot-release").write_text(f"vllm=={tree.name}: the bundled sample of the touched files\n")
    return dest


def copy_of_the_tree(dest: Path) -> Path:
    """The working tree's files (tracked, and untracked ones git does not ignore) under ``dest``."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout.split(b"\0")
    except (OSError, subprocess.CalledProcessError):
        shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(".git", "__pycache__", ".e2e-work"))
        return dest
    for name in filter(None, listed):
        src = REPO / os.fsdecode(name)
        if src.is_file():
            target = dest / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target, follow_symlinks=False)
    return dest


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_command_of_the_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    cmds = [(n, c, runnable(c)[0]) for n, c in commands(page)]
    cmds = [(n, c, r) for n, c, r in cmds if r is not None]
    if not cmds:
        pytest.skip(f"{page.name}: no command runs here")
    tree = copy_of_the_tree(tmp_path / "tree")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "dryboot"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m dryboot "$@"\n')
    shim.chmod(0o755)
    results = tmp_path / "results"
    script = [f"exec 3>{results}"]
    for k, (_, _, command) in enumerate(cmds):
        script += ["{", command, f"}} >{tmp_path}/out{k} 2>{tmp_path}/err{k} </dev/null", "echo $? >&3"]
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "DRYBOOT_VLLM_PYTHON", "DRYBOOT_BOOT_PYTHON")},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(tree / "src"),
        "HF_HUB_CACHE": str(tmp_path / "no-hub-cache"),
        "DRYBOOT_CACHE": str(release_cache(tmp_path / "dryboot-cache")),
        "TMPDIR": str(tmp_path),
    }
    subprocess.run(["bash", "-c", "\n".join(script)], cwd=tree, env=env, timeout=600, check=False)
    codes = results.read_text().split()
    problems = []
    for k, (line, _, command) in enumerate(cmds):
        code = int(codes[k]) if k < len(codes) else None
        err = (tmp_path / f"err{k}").read_text(errors="replace")
        if code not in (0, 1) or "Traceback" in err:
            problems.append(f"{page.name}:{line}: {command}\n    exit {code}: {err.strip()[-400:]}")
    assert not problems, "\n".join(problems)


def test_the_check_log_page_counts_the_public_corpus_as_its_index_records() -> None:
    """docs/check-log.md said "11 explained / 19 refused" where the corpus gave 12 / 18: the
    sentence is checked against the verdicts tests/data/checklog/public/INDEX.json records."""
    import json
    from collections import Counter

    index = json.loads((REPO / "tests" / "data" / "checklog" / "public" / "INDEX.json").read_text())
    exits = Counter(entry["exit"] for entry in index.values())
    configs = sum(1 for entry in index.values() if entry.get("config"))
    page = " ".join((REPO / "docs" / "check-log.md").read_text(encoding="utf-8").split())
    assert f"holds {len(index)} boot logs people posted" in page
    assert f"the published config used — {configs} logs have one" in page
    assert (
        f"check-log gives: {exits[0]} matched, {exits[4]} explained, {exits[5]} unexplained under unknown flags "
        f"(exit 5;" in page
    )
    assert f"{exits[2]} refused, {exits[3]} with nothing to check" in page
    assert exits[1] == 0 and "no log exits 1" in page
