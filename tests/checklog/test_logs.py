"""``dryboot check-log`` on boot logs vLLM 0.28.0 wrote (tests/data/checklog, see its README).

Every figure asserted here is vLLM's: from the log text itself, from figures.json (what vLLM's
functions computed when writing the logs) or from tests/data/e2e-min/README.md. None is read
back from dryboot.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dryboot.checklog.check import check_log
from dryboot.checklog.parse import Kind

from .conftest import DATA, REPO, figures


def run(log: str, **kwargs: object):  # type: ignore[no-untyped-def]
    return check_log((DATA / log).read_text(), source=log, **kwargs)  # type: ignore[arg-type]


def dryboot(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "dryboot", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def statuses(report) -> dict[Kind, str]:  # type: ignore[no-untyped-def]
    return {c.line.kind: c.status for c in report.comparison.checks}


def test_tp2_two_workers_interleaved_all_match(hf_cache: Path) -> None:
    r = run("tp2.log")
    vllm = figures()["scenarios"]["tp2"]
    budgets = vllm["budgets"]
    # both workers' budgets were read, each from its own prefixed line
    assert sorted(a.line.process or "" for a in r.facts.available) == ["Worker_TP0", "Worker_TP1"]
    # the smallest worker's budget decides (vLLM keeps the fewest blocks)
    assert r.budget is not None and r.budget.lo <= min(budgets) <= r.budget.hi
    assert r.args.tensor_parallel_size == 2
    assert statuses(r) == {
        Kind.MAMBA_MODE: "matches",
        Kind.HYBRID_BLOCK: "matches",
        Kind.MAMBA_PADDING: "matches",
        Kind.CAPACITY: "matches",
    }
    # the block-size lines were logged by both workers: one check, both places
    hybrid = next(c for c in r.comparison.checks if c.line.kind is Kind.HYBRID_BLOCK)
    assert {ln.process for ln in hybrid.line.lines} == {"Worker_TP0", "Worker_TP1"}
    assert f"Setting attention block size to {vllm['vllm']['block_size']} tokens" in hybrid.line.text
    capacity = next(c for c in r.comparison.checks if c.line.kind is Kind.CAPACITY)
    assert f"GPU KV cache size: {vllm['vllm']['tokens']:,} tokens" in capacity.line.text
    assert r.ok
    assert "hub" in str(r.config.path) and r.config.how.startswith("the Hugging Face cache")


def test_not_enough_memory_error_matches(hf_cache: Path) -> None:
    r = run("oom.log")
    error = figures()["scenarios"]["oom"]["vllm"]["error"]
    check = next(c for c in r.comparison.checks if c.line.kind is Kind.NOT_ENOUGH_MEMORY)
    assert check.status == "matches"
    assert error.startswith(check.line.text[:120])
    assert "the estimated maximum model length is 207264" in error  # vLLM's figure
    assert len(check.line.lines) == 2  # logged by logger.exception and again by the process's traceback
    assert r.ok


def test_speculative_mtp_matches_the_recorded_e2e_figures(hf_cache: Path) -> None:
    r = run("mtp.log")
    assert r.speculative == {"method": "mtp", "num_speculative_tokens": 3}
    assert r.budget is not None and r.budget.exact and r.budget.lo == 42949672960
    texts = {c.line.kind: c.line.text for c in r.comparison.checks}
    # tests/data/e2e-min/README.md case 1b: block=560, tokens=1,559,865, conc=5.9504
    assert texts[Kind.HYBRID_BLOCK].startswith("Setting attention block size to 560 tokens")
    assert texts[Kind.CAPACITY].startswith("GPU KV cache size: 1,559,865 tokens")
    assert texts[Kind.CAPACITY].endswith("5.95x")
    assert all(c.status == "matches" for c in r.comparison.checks)


def test_colours_engine_core_prefixes_and_timestamps(hf_cache: Path) -> None:
    text = (DATA / "colour.log").read_text()
    assert "\x1b[" in text and "(EngineCore pid=" in text
    r = run("colour.log")
    vllm = figures()["scenarios"]["colour"]["vllm"]
    assert r.facts.version == "0.28.0"
    assert r.facts.architecture == "NemotronHForCausalLM"
    assert [a.gib for a in r.facts.available] == ["21.76"]
    assert {c.line.kind for c in r.comparison.checks} >= {Kind.HYBRID_BLOCK, Kind.PADDING_LAYERS, Kind.CAPACITY}
    capacity = next(c for c in r.comparison.checks if c.line.kind is Kind.CAPACITY)
    assert f"{vllm['tokens']:,} tokens" in capacity.line.text
    assert all(c.status == "matches" for c in r.comparison.checks), [c.reason for c in r.comparison.checks]


def test_edited_figure_differs_and_a_budget_explains_it(hf_cache: Path) -> None:
    r = run("edited.log")
    edited = figures()["edited"]
    original = figures()["scenarios"]["mtp"]["vllm"]
    check = next(c for c in r.comparison.checks if c.line.kind is Kind.CAPACITY)
    assert check.status == "differs"
    assert f"{edited['vllm']['tokens']:,} tokens" in check.line.text  # what vLLM logs at 39.5 GiB
    assert any(f"{original['tokens']:,} tokens" in t for t in check.predicted)  # what it logs at 40 GiB
    budget = check.explanations[0]
    assert budget.kind == "budget"
    assert budget.budget_lo is not None and budget.budget_hi is not None
    assert budget.budget_lo <= edited["kv_cache_memory_bytes"] <= budget.budget_hi
    assert check.reason is not None and "KV budget of 39.5 GiB" in check.reason.replace("39.49–39.5", "39.5")
    # the other lines are untouched
    assert [c.status for c in r.comparison.checks if c.line.kind is not Kind.CAPACITY] == ["matches"] * 3
    assert not r.ok


def test_cli_exit_codes_and_json(hf_cache: Path) -> None:
    ok = dryboot("check-log", str(DATA / "tp2.log"))
    assert ok.returncode == 0, ok.stderr
    assert "4 KV lines: 4 match, 0 differ" in ok.stdout
    edited = dryboot("check-log", str(DATA / "edited.log"), "--json")
    assert edited.returncode == 1, edited.stderr
    whole = json.loads(edited.stdout)
    assert whole["exit"] == 1 and len(whole["boots"]) == 1
    doc = whole["boots"][0]
    assert doc["summary"] == {"lines": 4, "matches": 3, "differs": 1, "unchecked": 0, "refused": 0}
    line = next(x for x in doc["lines"] if x["status"] == "differs")
    assert line["kind"] == "GPU KV cache size"
    assert line["explanations"][0]["kind"] == "budget"
    lo, hi = line["explanations"][0]["budget_bytes"]
    assert lo <= figures()["edited"]["kv_cache_memory_bytes"] <= hi
    assert doc["ok"] is False


def test_cli_text_names_logged_and_predicted(hf_cache: Path) -> None:
    r = dryboot("check-log", str(DATA / "edited.log"))
    assert r.returncode == 1
    differs = [ln for ln in r.stdout.splitlines() if ": differs: " in ln]
    assert len(differs) == 1
    assert "logged 1,540,366 tokens, 5.88x, predicted 1,559,865 tokens, 5.95x" in differs[0]
    assert "would explain it; the log says 40.0 GiB" in differs[0]


def test_model_option_instead_of_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    config = REPO / figures()["scenarios"]["mtp"]["config"]
    r = run("mtp.log", model_path=str(config))
    assert r.config.how == "--model"
    assert r.ok


def test_stdin(hf_cache: Path) -> None:
    import os

    p = subprocess.run(
        [sys.executable, "-m", "dryboot", "check-log", "-"],
        input=(DATA / "mtp.log").read_text(),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env=dict(os.environ),
    )
    assert p.returncode == 0, p.stderr
    assert "<stdin>" in p.stdout


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("hello\nworld\n", "no vLLM line found"),
    ],
)
def test_unreadable_logs_exit_2(tmp_path: Path, content: str, expected: str) -> None:
    log = tmp_path / "x.log"
    log.write_text(content)
    r = dryboot("check-log", str(log))
    assert r.returncode == 2
    assert expected in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_a_boot_without_kv_lines_is_nothing_checked_exit_3(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("INFO 01-01 00:00:00 [api_utils.py:272] non-default args: {'model': 'x/y'}\n")
    r = dryboot("check-log", str(log))
    assert r.returncode == 3, r.stdout + r.stderr
    assert "no KV cache line in this boot" in r.stdout and "exit 3: nothing could be checked" in r.stdout


def test_missing_log_file_exit_2(tmp_path: Path) -> None:
    r = dryboot("check-log", str(tmp_path / "nope.log"))
    assert r.returncode == 2
    assert r.stderr.strip() == f"dryboot: error: {tmp_path / 'nope.log'}: no such file"


def test_config_not_in_the_cache_says_what_is_needed(tmp_path: Path) -> None:
    r = dryboot("check-log", str(DATA / "tp2.log"), env={"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert r.returncode == 2
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1
    assert "Qwen/Qwen3-Next-80B-A3B-Thinking" in line
    assert "pass --model PATH, or fetch it: hf download Qwen/Qwen3-Next-80B-A3B-Thinking config.json" in line


def test_refused_key_exit_2_naming_it(tmp_path: Path, hf_cache: Path) -> None:
    text = (
        (DATA / "mtp.log")
        .read_text()
        .replace("'max_model_len': 262144", "'max_model_len': 262144, 'pipeline_parallel_size': 2")
    )
    log = tmp_path / "pp.log"
    log.write_text(text)
    r = dryboot("check-log", str(log))
    assert r.returncode == 2, r.stdout
    assert "pipeline_parallel_size" in r.stderr and "dryboot cannot model it" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_help_does_not_import_checklog() -> None:
    code = (
        "import sys; from dryboot.cli import cli\n"
        "try:\n    cli.main(['--help'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('dryboot.checklog', 'huggingface_hub'))))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.stdout.strip().splitlines()[-1] == "[]"
    assert "check-log" in r.stdout


def test_without_a_budget_the_capacity_line_is_unchecked(tmp_path: Path, hf_cache: Path) -> None:
    text = "".join(
        line for line in (DATA / "tp2.log").read_text().splitlines(keepends=True) if "Available KV cache" not in line
    )
    r = check_log(text, source="nobudget.log")
    assert r.budget is None
    assert statuses(r)[Kind.CAPACITY] == "unchecked"
    assert statuses(r)[Kind.HYBRID_BLOCK] == "matches"
    assert r.ok  # nothing differs


def test_a_predicted_line_missing_from_the_log_is_reported(hf_cache: Path) -> None:
    text = "".join(
        line for line in (DATA / "mtp.log").read_text().splitlines(keepends=True) if "Setting attention" not in line
    )
    r = check_log(text, source="cut.log")
    assert [k for k, _ in r.comparison.missing] == [Kind.HYBRID_BLOCK]
    assert r.ok


def test_a_log_older_than_the_rules_is_checked_against_the_oldest_modelled(tmp_path: Path, hf_cache: Path) -> None:
    text = (DATA / "mtp.log").read_text().replace("version 0.28.0", "version 0.9.2")
    log = tmp_path / "old.log"
    log.write_text(text)
    r = dryboot("check-log", str(log))
    assert "Traceback" not in r.stderr and r.returncode != 2, r.stderr
    assert "the log is from vLLM 0.9.2, older than any release dryboot models: checked against vLLM 0.27.1" in r.stdout
    assert dryboot("check-log", str(log), "--vllm-version", "0.28.0").returncode == 0


def test_drafter_hub_id_is_found_in_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only where the drafter's config comes from is asserted: no figure of this log is vLLM's."""
    from .conftest import make_hub_cache

    f = figures()
    repos = {s["model"]: REPO / s["config"] for s in f["scenarios"].values()}
    repos["org/dflash-drafter"] = REPO / "examples" / "models" / "dflash2-drafter-sw5.config.json"
    hub = make_hub_cache(tmp_path, repos, f["revision"])
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    text = (
        (DATA / "mtp.log")
        .read_text()
        .replace(
            "'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 3}",
            "'speculative_config': {'method': 'dflash', 'model': 'org/dflash-drafter', 'num_speculative_tokens': 7}",
        )
    )
    r = check_log(text, source="dflash.log")
    assert r.speculative is not None and str(r.speculative["model"]).startswith(str(hub))
    assert any(n.startswith("drafter config: ") for n in r.notes)


def test_two_boots_in_one_file_are_checked_one_by_one(tmp_path: Path, hf_cache: Path) -> None:
    log = tmp_path / "two.log"
    log.write_text((DATA / "mtp.log").read_text() + (DATA / "edited.log").read_text())
    r = dryboot("check-log", str(log), "--json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert [b["status"] for b in doc["boots"]] == ["matches", "differs"]
    assert doc["boots"][1]["summary"]["differs"] == 1 and doc["exit"] == 1
    text = dryboot("check-log", str(log)).stdout
    assert "== boot 1 (lines" in text and "== boot 2 (lines" in text
    assert "exit 1: a KV line differs (boot 2) — 2 boots" in text
