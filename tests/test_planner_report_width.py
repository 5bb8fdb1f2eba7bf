"""Output fits the reader: at 80 columns (COLUMNS=80, and a pipe without COLUMNS) no line is
longer than the width except vLLM's own log lines (quoted verbatim), no line ends in spaces,
and no name or number is cut. Markdown and JSON do not depend on the width."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dryboot.textout import Column, table

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "examples" / "models"
PROFILES = "examples/reference-deployment.toml"

README_PLAN = [
    "plan",
    "--model",
    str(MODELS / "Qwen3-Next-80B-A3B-Thinking.config.json"),
    "--max-model-len",
    "262144",
    "--kv-cache-memory",
    "40G",
]
DRAFTER_PLAN = [
    "plan",
    "--model",
    str(MODELS / "Qwen3.5-27B.config.json"),
    "--speculative-config",
    json.dumps(
        {"method": "dflash", "model": str(MODELS / "dflash2-drafter-sw5.config.json"), "num_speculative_tokens": 7}
    ),
    "--mamba-ssm-cache-dtype",
    "float16",
    "--max-model-len",
    "131072",
    "--kv-cache-memory-bytes",
    "5583457484",
    "--kv-cache-dtype",
    "int8_per_token_head",
    "--max-num-batched-tokens",
    "2048",
    "--grouping",
    "pad-sliding-window-buckets",
    "--unification",
    "promote-divisor",
]
NOT_FITTING_PLAN = [*README_PLAN[:-1], "2G"]


def run(args: list[str], columns: int | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "dryboot", *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=120
    )


def check_fits(text: str, width: int, verbatim: frozenset[str] | set[str] = frozenset()) -> None:
    for line in text.splitlines():
        assert line == line.rstrip(), f"trailing spaces: {line!r}"
        assert "…" not in line, f"truncated: {line!r}"
        if len(line) > width:
            assert line in verbatim, f"{len(line)} > {width} columns: {line!r}"


def vllm_lines(args: list[str]) -> set[str]:
    """vLLM's log lines as the report quotes them (two spaces, then the line itself)."""
    data = json.loads(run([*args, "--json"], None).stdout)
    quoted = {f"  {line}" for line in data["log"]}
    if data["errors"]["memory"]:
        quoted.add(f"  ValueError: {data['errors']['memory']}")
    return quoted


@pytest.mark.parametrize("columns", [80, None], ids=["COLUMNS=80", "piped"])
def test_plan_fits_80_columns(columns: int | None) -> None:
    for args, figures in (
        # vLLM 0.28.0's boot log for the README example
        (README_PLAN, ["1,725,423 tokens", "6.58x", "1,114,112", "3,212"]),
        # the reference deployment, CTX=long: 864 tokens/block, mamba pad 1.09%, 136,429 tokens
        (DRAFTER_PLAN, ["136,429 tokens", "1.09%", "864"]),
        # 40 GiB -> 2 GiB: vLLM's estimated maximum model length
        (NOT_FITTING_PLAN, ["83,776", "6,524,239,872"]),
    ):
        r = run(args, columns)
        assert r.returncode in (0, 1), r.stderr
        check_fits(r.stdout, 80, vllm_lines(args))
        for figure in figures:
            assert figure in r.stdout


def test_plan_tables_are_drawn_when_the_terminal_is_wide() -> None:
    r = run(README_PLAN, 160)
    table_lines = [line for line in r.stdout.splitlines() if line.startswith(("┃", "│"))]
    assert any("Gated DeltaNet state 3x8192 + 32x128x128" in line for line in table_lines)
    check_fits(r.stdout, 160, vllm_lines(README_PLAN))


@pytest.mark.parametrize("columns", [80, None], ids=["COLUMNS=80", "piped"])
@pytest.mark.parametrize("compare", [[], ["--compare", "main", "pr"], ["--compare", "main", "upstream"]])
def test_profiles_fit_80_columns(columns: int | None, compare: list[str]) -> None:
    r = run(["profiles", PROFILES, *compare], columns)
    check_fits(r.stdout, 80)
    lines = r.stdout.splitlines()
    # every profile name whole on one line; the deployment's logged figures all present
    for name in ("CTX=fast", "CTX=long", "CTX=huge", "CTX=fast DFLASH_TOKENS=15"):
        assert any(line.startswith(name) for line in lines), name
    for figure in ("68,605", "136,429", "268,169", "57,669", "3.23", "1.09", "2.82", "1.27", "2,176"):
        assert figure in r.stdout


def test_markdown_and_json_do_not_depend_on_the_width() -> None:
    for args in (
        ["profiles", PROFILES, "--compare", "main", "pr", "--format", "markdown"],
        ["profiles", PROFILES, "--json"],
        [*README_PLAN, "--json"],
    ):
        narrow, wide = run(args, 40), run(args, 300)
        assert narrow.stdout == wide.stdout
    md = run(["profiles", PROFILES, "--compare", "main", "pr", "--format", "markdown"], 40).stdout.splitlines()
    assert len(md) == 2 + 4  # header, rule, one row per profile
    assert md[-1].startswith("| CTX=fast DFLASH_TOKENS=15 | 480 |")


def test_table_is_drawn_when_it_fits_and_stacked_when_not() -> None:
    columns = [Column("profile"), Column("KV cache tokens", right=True), Column("verdict", wrap=True)]
    rows = [["CTX=fast DFLASH_TOKENS=15", "57,669", "identical to the token"]]
    wide = table("t", columns, rows, 80)
    assert wide[1].startswith("┏") and len(wide) == 6
    assert "│ CTX=fast DFLASH_TOKENS=15 │" in wide[4]
    narrow = table("t", columns, rows, 44)
    assert narrow == [
        "t",
        "  CTX=fast DFLASH_TOKENS=15",
        "    KV cache tokens  57,669",
        "    verdict          identical to the token",
    ]
