"""The minimal end-to-end cases: dryboot against vLLM 0.28.0's own engine start.

``tests/data/e2e-min/README.md`` records, for each case, the ``dryboot plan`` command a user
types and the figures vLLM 0.28.0 computed from the *same* config.json and CLI flags (its CLI
parser, ``create_engine_config``, the model class on the meta device, ``get_kv_cache_spec``,
the planner and capacity functions; CPU with a stand-in H200). The README is parsed here, so
each figure is stated once, as vLLM printed it. Paths in the commands are relative to
``shared/data``; ``models/`` maps to the repository's ``examples/models``.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from dryboot.cli import main

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
README = DATA / "e2e-min" / "README.md"

KIND_NAMES = {
    "full": "FullAttention",
    "sliding": "SlidingWindow",
    "chunked": "ChunkedLocalAttention",
    "mla": "MLAAttention",
    "mamba": "Mamba",
}


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    expected: str  # the "vLLM 0.28.0: ..." line


def _cases() -> list[Case]:
    text = README.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"^## (.+?)\n```\n(dryboot plan .+?)\n```\nvLLM 0\.28\.0: (.+)$", text, re.M):
        title, command, expected = m.groups()
        argv = []
        for word in shlex.split(command)[2:]:
            if word.startswith(("e2e-min/", "models/")):
                word = str(DATA / word) if word.startswith("e2e-min/") else str(REPO / "examples" / word)
            elif word.startswith("{"):
                spec = json.loads(word)
                if "model" in spec:
                    spec["model"] = str(DATA / spec["model"])
                word = json.dumps(spec)
            argv.append(word)
        out.append(Case(title.split()[0], tuple(argv), expected))
    return out


CASES = _cases()


def test_readme_parsed() -> None:
    assert len(CASES) == 23


def _figures(expected: str) -> dict[str, object]:
    m = re.match(
        r"block=(\d+) groups=(\[.*\]) num_blocks=(\d+) tokens=([\d,]+) conc=([\d.]+) max_model_len=(\d+)$", expected
    )
    assert m, expected
    return {
        "block": int(m[1]),
        "groups": sorted(ast.literal_eval(m[2])),
        "num_blocks": int(m[3]),
        "tokens": int(m[4].replace(",", "")),
        "conc": round(float(m[5]), 2),
        "max_model_len": int(m[6]),
    }


@dataclass
class Run:
    exit_code: int
    output: str
    stderr: str


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Run:
    """The console-script entry point, as a user runs it."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    out, err = capsys.readouterr()
    return Run(int(done.value.code or 0), out, err)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_e2e_min(case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(["plan", *case.argv, "--json"], capsys)
    if case.expected.startswith("stage="):
        # vLLM refuses this input: dryboot must refuse it too (exit 2), or report the same
        # boot failure (exit 1) for errors vLLM raises while planning.
        stage = case.expected.split()[0].removeprefix("stage=")
        reason = case.expected.split("error=", 1)[1]
        if stage == "plan":
            assert result.exit_code == 1, result.output
            doc = json.loads(result.output)
            message = reason.split(": ", 1)[1]
            assert message in (doc["errors"]["memory"] or ""), doc["errors"]
        else:
            assert result.exit_code == 2, result.output
            line = result.stderr.strip()
            assert "\n" not in line, line
            if not reason.startswith("ValidationError"):  # pydantic's text names no reason
                words = re.findall(r"[A-Za-z_]{5,}", reason.split(": ", 1)[1])[:3]
                assert all(w.lower() in line.lower() for w in words), (line, reason)
        return
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.output)
    want = _figures(case.expected)
    groups = sorted(
        (KIND_NAMES[g["kind"]], g["block_size"], g["page_size_bytes"], len(g["layer_names"]))
        for g in doc["grouping"]["groups"]
    )
    cap = doc["capacity"]
    got = {
        "block": doc["block_size"],
        "groups": groups,
        "num_blocks": cap["num_blocks"],
        "tokens": cap["kv_cache_size_tokens"],
        "conc": round(cap["max_concurrency"], 2),
        "max_model_len": doc["max_model_len"],
    }
    assert got == want
