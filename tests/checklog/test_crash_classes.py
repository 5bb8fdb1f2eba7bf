"""One test per crash class of issue 19, each failing on the check-log that preceded it."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from dryboot.checklog.literal import parse_args_text
from dryboot.errors import InputError

from .conftest import DATA, REPO


def dryboot(*args: str, stdin: str | None = None, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dryboot", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
        input=stdin,
    )


def _mtp_with(tmp_path: Path, old: str, new: str) -> Path:
    text = (DATA / "mtp.log").read_text()
    assert old in text
    log = tmp_path / "edited.log"
    log.write_text(text.replace(old, new))
    return log


def test_a_lone_differing_concurrency_line_does_not_crash(tmp_path: Path, hf_cache: Path) -> None:
    """0.27.1 prints 'Maximum concurrency for N tokens per request' on a line of its own; a
    differing one ended in KeyError: 'tokens'."""
    text = (DATA / "mtp.log").read_text()
    lines = [ln for ln in text.splitlines(keepends=True) if "GPU KV cache size" not in ln]
    prefix = "(EngineCore pid=1) INFO 11-30 17:11:30 [kv_cache_utils.py:1870] "
    lines.append(prefix + "Maximum concurrency for 262,144 tokens per request: 9.99x\n")
    log = tmp_path / "lone.log"
    log.write_text("".join(lines))
    r = dryboot("check-log", str(log))
    assert "Traceback" not in r.stderr and "KeyError" not in r.stderr
    assert r.returncode == 1, r.stdout + r.stderr
    assert "differs" in r.stdout and "9.99x" in r.stdout


def test_a_cut_engine_init_line_gives_the_version(tmp_path: Path, hf_cache: Path) -> None:
    """'Initializing a V1 LLM engine (v0.27.1) with config: ...' cut short fell back to 0.28.0."""
    text = (DATA / "mtp.log").read_text()
    kept = [ln for ln in text.splitlines(keepends=True) if "version 0.28.0" not in ln and "Initializing" not in ln]
    kept.insert(
        0, "(EngineCore pid=7) INFO 11-30 17:11:22 [core.py:122] Initializing a V1 LLM engine (v0.27.1) with con\n"
    )
    log = tmp_path / "cut.log"
    log.write_text("".join(kept))
    r = dryboot("check-log", str(log))
    assert "Traceback" not in r.stderr
    assert "vLLM 0.27.1" in r.stdout, r.stdout + r.stderr


def test_the_older_models_s_wording_is_recognised(tmp_path: Path, hf_cache: Path) -> None:
    """'the models's max seq len' (older releases) refused the whole log."""
    log = _mtp_with(tmp_path, "x", "x")
    text = (DATA / "oom.log").read_text().replace("the model's max seq len", "the models's max seq len")
    log.write_text(text)
    r = dryboot("check-log", str(log))
    assert "Traceback" not in r.stderr
    assert r.returncode == 0, r.stdout + r.stderr
    assert "matches: To serve at least one request with the models's max seq len" in r.stdout


def test_nothing_checked_is_not_exit_0(tmp_path: Path, hf_cache: Path) -> None:
    """A log whose only KV line needs a budget it does not state exited 0 ('the boot agrees')."""
    text = (DATA / "mtp.log").read_text()
    keep = ("non-default args", "version 0.28.0", "GPU KV cache size")
    lines = [ln for ln in text.splitlines(keepends=True) if any(k in ln for k in keep)]
    log = tmp_path / "nobudget.log"
    log.write_text("".join(ln.replace("'kv_cache_memory_bytes': 42949672960, ", "") for ln in lines))
    r = dryboot("check-log", str(log))
    assert r.returncode == 4, r.stdout + r.stderr
    assert "the boot agrees" not in r.stdout
    assert "explained only with the searched KV budget" in r.stdout
    # the one budget searched holds the 40 GiB (42,949,672,960 B) the boot was given
    assert "a KV budget of 39.99–40.0 GiB (42,939,187,200–42,954,096,639 B) gives" in r.stdout


def test_known_flags_without_a_budget_need_one_budget_for_every_figure(tmp_path: Path, hf_cache: Path) -> None:
    """With the flags known and no budget stated, a capacity line whose tokens and concurrency no
    single budget gives (here the concurrency edited) is unexplained (exit 1), not 'nothing checked'."""
    text = (DATA / "mtp.log").read_text()
    keep = ("non-default args", "version 0.28.0", "GPU KV cache size")
    lines = [ln for ln in text.splitlines(keepends=True) if any(k in ln for k in keep)]
    log = tmp_path / "inconsistent.log"
    edited = "".join(ln.replace("'kv_cache_memory_bytes': 42949672960, ", "") for ln in lines)
    assert "per request: 5.95x" in edited
    log.write_text(edited.replace("per request: 5.95x", "per request: 2.95x"))
    r = dryboot("check-log", str(log))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "no single KV budget gives every line" in r.stdout


def test_without_an_args_line_the_unknown_flags_are_named(tmp_path: Path, hf_cache: Path) -> None:
    """Without an args line vLLM's defaults were assumed silently and 'the tree differs' blamed."""
    text = (DATA / "mtp.log").read_text()
    lines = [ln for ln in text.splitlines(keepends=True) if "non-default args" not in ln]
    log = tmp_path / "noargs.log"
    log.write_text("".join(lines))
    r = dryboot("check-log", str(log))
    assert "Traceback" not in r.stderr
    assert "vLLM's defaults assumed" not in r.stdout
    assert "unknown flags" in r.stdout, r.stdout + r.stderr
    assert "the tree differs" not in r.stdout


def test_dev_zero_ends_cleanly() -> None:
    """/dev/zero ended in MemoryError."""
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    r = dryboot("check-log", "/dev/zero", timeout=60)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "text",
    [
        "{'max_model_len': nan, 'model': 'a/b'}",
        "{'max_model_len': float('nan')}",
        "{'model': 'a\x00b', 'x': 1}",
        "{'a': " + "[" * 5000 + "]" * 5000 + "}",
        "{'a': " + "[" * 100000 + "]" * 100000 + "}",
        "{'a': " + "-" * 100000 + "1}",
        "{'a': 1, 'b': <x " + "(" * 100000 + ">}",
        "{'a': " + "(" * 200 + ")" * 200 + "}",
        "Namespace(a=" + "[" * 5000 + ")",
        "{'a': 1e999999, 'b': -1e999999}",
    ],
)
def test_hostile_args_texts_never_crash(text: str) -> None:
    """NaN, NUL bytes and deeply nested literals crashed the args reader."""
    with contextlib.suppress(InputError):
        parse_args_text(text, "log")


def test_a_nan_in_the_logged_args_is_one_clear_line(tmp_path: Path, hf_cache: Path) -> None:
    log = _mtp_with(tmp_path, "'max_model_len': 262144", "'max_model_len': nan")
    r = dryboot("check-log", str(log))
    assert "Traceback" not in r.stderr
    assert r.returncode in (1, 2, 3, 4)
