"""``plan --engram-config JSON`` (issue 37): vLLM 0.30.0+'s option, by its name and meaning, on plan's
own flags as ``plan --serve`` maps it (``cpu_offload`` false: the n-gram embedding tables sized on the
GPU, in the weights); refused by name on the releases whose ``vllm serve`` lacks it (0.27.1-0.29.0,
read from each release's serve-options table).

The Qwen4-Exp PLE figures are vLLM's own (``tests/fidelity/data/weights/qwen4-exp-side/
recorded-0.33.0.json``, as :mod:`test_serve_releases` reads them).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dryboot.checklog.serve import ENGRAM_OPTION, _table, engram_option_refusal, parser_release
from dryboot.vllm.versions import VERSIONS

from .test_serve_releases import ENGRAM_OFF, QWEN_NEXT, _plan, _recorded, ple_model  # noqa: F401

OFF = '{"cpu_offload": false}'
WITH = tuple(r for r in VERSIONS if ENGRAM_OPTION in _table(r)[0])
WITHOUT = tuple(r for r in VERSIONS if r not in WITH)


def test_the_releases_with_the_option_are_the_tables() -> None:
    assert WITH == ("0.30.0", "0.31.0", "0.32.0", "0.33.0") and WITHOUT == ("0.27.1", "0.28.0", "0.29.0")
    assert all(engram_option_refusal(r) is None for r in WITH)
    assert engram_option_refusal("0.31.2") is None and parser_release("0.31.2") == "0.31.0"


@pytest.mark.parametrize("tp", [1, 2])
def test_cpu_offload_false_sizes_the_tables_on_the_gpu_as_vllm_does(ple_model: Path, tp: int) -> None:  # noqa: F811
    base = ["--vllm-version", "0.33.0", "--gpu", "H100"]
    code, doc, out = _plan(*base, "--model", str(ple_model), "-tp", str(tp), "--engram-config", OFF)
    assert code in (0, 4), out
    assert doc["weights"]["refused"] is None and doc["weights"]["stages"][0]["allocated_bytes"] == _recorded(tp)
    assert "engram_config cpu_offload false" in out
    # vLLM's default (cpu_offload true, the flag left out) stays refused by name
    _, default, _ = _plan(*base, "--model", str(ple_model), "-tp", str(tp))
    assert "--engram-config" in (default["weights"]["refused"] or "")


@pytest.mark.parametrize("release", WITH)
def test_the_flag_plans_as_the_serve_line_does(ple_model: Path, release: str) -> None:  # noqa: F811
    base = ["--vllm-version", release, "--gpu", "H100"]
    code, doc, out = _plan(*base, "--model", str(ple_model), "--engram-config", OFF)
    served_code, served, _ = _plan(*base, "--serve", f"vllm serve {ple_model} {ENGRAM_OFF}")
    assert (code, doc["weights"], doc["verdict"]) == (served_code, served["weights"], served["verdict"]), out
    assert doc["weights"]["refused"] is None


@pytest.mark.parametrize("release", WITHOUT)
def test_refused_by_name_on_a_release_without_it(ple_model: Path, release: str) -> None:  # noqa: F811
    code, _, out = _plan("--vllm-version", release, "--model", str(ple_model), "--engram-config", OFF)
    assert code == 2, out
    assert f"--engram-config: vLLM {release}'s 'vllm serve' has no such option" in out


def test_refused_when_the_compared_release_lacks_it(ple_model: Path) -> None:  # noqa: F811
    args = ["--vllm-version", "0.33.0", "--compare-version", "0.29.0", "--model", str(ple_model)]
    code, _, out = _plan(*args, "--engram-config", OFF)
    assert code == 2 and "--compare-version 0.29.0: vLLM 0.29.0's 'vllm serve' has no such option" in out, out


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ('{"cpu_offload": false, "use_thp": true}', "use_thp: requires cpu_offload true"),
        ('{"dp_shared_memory": true}', "requires data_parallel_size > 1"),
        ('{"offload": false}', "EngramConfig has no such field"),
        ("{cpu_offload: false}", "invalid JSON"),
    ],
)
def test_what_engram_config_refuses(ple_model: Path, value: str, match: str) -> None:  # noqa: F811
    code, _, out = _plan("--vllm-version", "0.33.0", "--model", str(ple_model), "--engram-config", value)
    assert code == 2 and match in out and out.count("\n") <= 1, out


def test_embedding_across_dp_reads_the_planned_dp(ple_model: Path) -> None:  # noqa: F811
    value = json.dumps({"cpu_offload": False, "embedding_across_dp": True})
    code, _, out = _plan("--vllm-version", "0.33.0", "--model", str(ple_model), "-dp", "2", "--engram-config", value)
    assert code == 2 and "engram_config.embedding_across_dp" in out, out


def test_a_model_without_ngram_layers(tmp_path: Path) -> None:
    shutil.copy(QWEN_NEXT, tmp_path / "config.json")
    code, _, out = _plan("--vllm-version", "0.33.0", "--model", str(tmp_path), "--engram-config", OFF)
    assert code == 2 and "no n-gram embedding layers (EngramConfig.verify_model_config)" in out, out


def test_with_serve_it_belongs_in_the_command_line(ple_model: Path) -> None:  # noqa: F811
    code, _, out = _plan("--vllm-version", "0.33.0", "--engram-config", OFF, "--serve", f"vllm serve {ple_model}")
    assert code == 2 and "--engram-config in the command line" in out, out
