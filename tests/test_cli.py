"""The CLI as a user meets it: real subprocesses, exit codes, one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QWEN3_NEXT = str(REPO / "examples" / "models" / "Qwen3-Next-80B-A3B-Thinking.config.json")


def dryboot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dryboot", *args], capture_output=True, text=True, cwd=REPO, timeout=60
    )


def test_plan_prints_vllm_lines() -> None:
    r = dryboot("plan", "--model", QWEN3_NEXT, "--max-model-len", "262144", "--kv-cache-memory", "40G")
    assert r.returncode == 0, r.stderr
    assert "GPU KV cache size: 1,725,423 tokens, Maximum concurrency for 262,144 tokens per request: 6.58x" in r.stdout
    assert "verdict: OK" in r.stdout


def test_plan_json_and_exit_1_when_it_does_not_fit() -> None:
    r = dryboot("plan", "--model", QWEN3_NEXT, "--max-model-len", "262144", "--kv-cache-memory-bytes", "2G", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["errors"]["estimated_max_model_len"] == 83776
    assert data["errors"]["request_bytes"] == 6_524_239_872
    assert data["ok"] is False


def test_speculative_config_drafter() -> None:
    drafter = str(REPO / "examples" / "models" / "dflash2-drafter-sw5.config.json")
    target = str(REPO / "examples" / "models" / "Qwen3.5-27B.config.json")
    spec = json.dumps({"method": "dflash", "model": drafter, "num_speculative_tokens": 7})
    r = dryboot(
        "plan",
        "--model",
        target,
        "--speculative-config",
        spec,
        "--mamba-ssm-cache-dtype",
        "float16",
        "--max-model-len",
        "65536",
        "--max-num-batched-tokens",
        "2048",
        "--kv-cache-memory-bytes",
        "5583457484",
        "--grouping",
        "pad-sliding-window-buckets",
        "--unification",
        "promote-divisor",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["kv_cache_size_tokens"] == 68_605


def one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


def test_bad_inputs_are_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"num_hidden_layers": 4,')
    assert str(bad) in one_line_error(dryboot("plan", "--model", str(bad)))
    assert "--kv-cache-dtype" in one_line_error(dryboot("plan", "--model", QWEN3_NEXT, "--kv-cache-dtype", "int3"))
    assert "--kv-cache-memory-bytes" in one_line_error(
        dryboot("plan", "--model", QWEN3_NEXT, "--kv-cache-memory", "1.5G")
    )
    assert "no such file" in one_line_error(dryboot("plan", "--model", str(tmp_path / "missing.json")))
    assert "--speculative-config" in one_line_error(
        dryboot("plan", "--model", QWEN3_NEXT, "--speculative-config", "{oops")
    )
    assert "--bogus" in one_line_error(dryboot("plan", "--model", QWEN3_NEXT, "--bogus", "1"))


def test_profiles_compare_identical() -> None:
    r = dryboot(
        "profiles",
        "examples/reference-deployment.toml",
        "--compare",
        "main",
        "pr",
        "--expect-identical",
        "--format",
        "markdown",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("identical to the token") == 4


def test_profiles_compare_differs_exit_1() -> None:
    r = dryboot(
        "profiles",
        "examples/reference-deployment.toml",
        "--compare",
        "main",
        "upstream",
        "--expect-identical",
        "--json",
    )
    assert r.returncode == 1
    rows = json.loads(r.stdout)
    assert all(not row["identical"] for row in rows)


def test_promote_explains() -> None:
    r = dryboot("promote", "--primary-block", "1840", "--covering-block", "96", "--granularity", "16")
    assert r.returncode == 0
    assert "divisors of 1840 from 96 up: 115, 184, 230, 368, 460, 920, 1840" in r.stdout
    assert "promote-divisor: 115" in r.stdout and "promote-granular: 368" in r.stdout


def test_speculative_flags_conflicts_are_refused() -> None:
    drafter = str(REPO / "examples" / "models" / "dflash2-drafter-sw5.config.json")
    spec = json.dumps({"method": "dflash", "model": drafter, "num_speculative_tokens": 7})
    line = one_line_error(
        dryboot("plan", "--model", QWEN3_NEXT, "--speculative-config", spec, "--num-speculative-tokens", "3")
    )
    assert "give it once" in line
    line = one_line_error(dryboot("plan", "--model", QWEN3_NEXT, "--speculative-model", drafter))
    # issue 28: the flag given is named, not --speculative-config
    assert line.startswith(f"dryboot: error: --speculative-model: {drafter}: a draft model needs its number")
    line = one_line_error(dryboot("plan", "--model", QWEN3_NEXT, "--speculative-config", '{"method": "bogus"}'))
    assert "unknown speculative method 'bogus'" in line


def test_profile_errors_name_the_file_and_profile(tmp_path: Path) -> None:
    import shutil

    shutil.copytree(REPO / "examples" / "models", tmp_path / "models")
    text = (REPO / "examples" / "reference-deployment.toml").read_text()
    bad = tmp_path / "p.toml"
    bad.write_text(text.replace('model = "models/Qwen3.5-27B.config.json"', 'model = "models/nope.json"'))
    line = one_line_error(dryboot("profiles", str(bad)))
    assert line.startswith(f"dryboot: error: {bad}: defaults.model: ")  # where the file spells it
    bad.write_text(
        text.replace(
            'attention-backend = "TRITON_ATTN"\nmax-model-len = 131072',
            'attention-backend = "FOO"\nmax-model-len = 131072',
        )
    )
    line = one_line_error(dryboot("profiles", str(bad)))
    assert line.startswith(f"dryboot: error: {bad}: profiles.CTX=long (arm main): --attention-backend: FOO")


def test_interrupt_and_usage_errors_are_one_line() -> None:
    line = one_line_error(dryboot("profiles", "examples/reference-deployment.toml", "--expect-identical"))
    assert "--expect-identical needs --compare" in line


def test_input_errors_exit_2_from_every_command_group(tmp_path: Path) -> None:
    """One handler in the click group: plan, profiles and the patch commands all end at exit 2
    with one line, whether run as ``dryboot`` or through click's own runner."""
    from click.testing import CliRunner

    from dryboot.cli import cli

    missing = str(tmp_path / "missing")
    assert one_line_error(dryboot("hunks", "check", missing)).startswith(f"dryboot: error: {missing}: ")
    assert one_line_error(dryboot("series", "list", missing)).startswith(f"dryboot: error: {missing}: ")
    assert one_line_error(dryboot("profiles", missing)) == f"dryboot: error: {missing}: no such file"
    result = CliRunner().invoke(cli, ["series", "list", missing])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [f"dryboot: error: {missing}: not a directory"]


QWEN35 = str(REPO / "examples" / "models" / "Qwen3.5-27B.config.json")
DRAFTER = str(REPO / "examples" / "models" / "dflash2-drafter-sw5.config.json")
PLAN_5G = ("plan", "--model", QWEN35, "--max-model-len", "65536", "--kv-cache-memory", "5G")


def _spec(**extra: object) -> str:
    return json.dumps({"method": "dflash", "model": DRAFTER, "num_speculative_tokens": 7, **extra})


def refused(*args: str) -> str:
    """The one-line error of a refused command, which prints nothing on stdout."""
    r = dryboot(*args)
    line = one_line_error(r)
    assert r.stdout == ""
    return line


def test_unknown_drafter_kv_cache_dtype_is_refused() -> None:
    # vLLM's CacheDType is a case-sensitive Literal: "FP8" is not "fp8"
    for dtype in ("fp9", "FP8"):
        line = refused(*PLAN_5G, "--speculative-config", _spec(kv_cache_dtype=dtype))
        head = "dryboot: error: --speculative-config: kv_cache_dtype: unknown KV cache dtype"
        assert line.startswith(f"{head} '{dtype}'")


def test_unknown_drafter_kv_cache_dtype_in_a_profile_is_refused(tmp_path: Path) -> None:
    import shutil

    shutil.copytree(REPO / "examples" / "models", tmp_path / "models")
    text = (REPO / "examples" / "reference-deployment.toml").read_text()
    bad = tmp_path / "p.toml"
    old, new = 'drafter = { kv_cache_dtype = "int8_per_token_head"', 'drafter = { kv_cache_dtype = "fp9"'
    bad.write_text(text.replace(old, new))
    line = refused("profiles", str(bad))
    assert line.startswith(f"dryboot: error: {bad}: profiles.CTX=long.drafter.kv_cache_dtype: unknown KV cache dtype")


def test_draft_tensor_parallel_size_must_be_1_or_the_targets() -> None:
    # SpeculativeConfig: draft_tensor_parallel_size >= 1, and in (1, tensor_parallel_size)
    line = refused(*PLAN_5G, "--speculative-config", _spec(draft_tensor_parallel_size=0))
    assert "draft_tensor_parallel_size: must be an integer >= 1, got 0" in line
    line = refused(*PLAN_5G, "--speculative-config", _spec(draft_tensor_parallel_size=3))
    assert "draft_tensor_parallel_size: 3 is neither 1 nor the target's tensor parallel size (1)" in line
    ok = dryboot(*PLAN_5G, "--speculative-config", _spec(draft_tensor_parallel_size=1), "--json")
    assert ok.returncode != 2, ok.stderr
    assert json.loads(ok.stdout)["num_speculative_tokens"] == 7


def test_a_custom_kv_cache_dtype_declared_twice_is_refused() -> None:
    line = refused(
        *PLAN_5G,
        "--custom-kv-cache-dtype",
        "kvarn:210*head_dim//256:kernel_block=128",
        "--custom-kv-cache-dtype",
        "kvarn:100",
        "--kv-cache-dtype",
        "kvarn",
    )
    assert line == (
        "dryboot: error: --custom-kv-cache-dtype: kvarn:100: 'kvarn' is already declared; declare each name once"
    )


def test_kv_heads_must_divide_attention_heads(tmp_path: Path) -> None:
    # vLLM's Attention asserts num_heads % num_kv_heads == 0: 32 heads over 5 KV heads cannot group
    data = json.loads((REPO / "examples" / "models" / "gpt-oss-20b.config.json").read_text())
    data.update(num_attention_heads=32, num_key_value_heads=5)
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(data))
    line = refused("plan", "--model", str(cfg), "--max-model-len", "4096", "--kv-cache-memory", "1G")
    assert line.startswith(f"dryboot: error: {cfg}: num_key_value_heads: 5 KV heads do not divide the 32 attention")
    data.update(num_key_value_heads=8)
    cfg.write_text(json.dumps(data))
    assert dryboot("plan", "--model", str(cfg), "--max-model-len", "4096", "--kv-cache-memory", "1G").returncode == 0


def test_no_command_prints_the_help_as_click_does() -> None:
    """Before: `dryboot: error: dryboot: Usage: ...` (the help as an error, prefixed twice).
    Now the help itself, on stderr with exit 2, as click's `no_args_is_help` does."""
    for args, usage in (((), "Usage: dryboot [OPTIONS] COMMAND"), (("series",), "Usage: dryboot series [OPTIONS]")):
        r = dryboot(*args)
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith(usage), r.stderr
        assert "error" not in r.stderr and "Commands:" in r.stderr


def test_a_usage_error_names_the_command_once() -> None:
    """Before: `dryboot: error: dryboot plan: No such option ...`."""
    line = one_line_error(dryboot("plan", "--model", QWEN3_NEXT, "--bogus", "1"))
    assert line.startswith("dryboot plan: error: No such option '--bogus'"), line
    assert one_line_error(dryboot("bogus")).startswith("dryboot: error: No such command 'bogus'")


def test_packed_layout_logs_size_and_concurrency_apart_where_the_release_does() -> None:
    """vLLM 0.27.1 logs "GPU KV cache size" and "Maximum concurrency" on two lines for every layout
    (``kv_cache_utils.py``), DeepSeek-V4's packed pool included; 0.28.0+ join them."""
    dsv4 = str(REPO / "tests" / "fidelity" / "data" / "architectures" / "DeepseekV4ForCausalLM.json")
    flags = ("--kv-cache-memory-bytes", "1000000000", "--kv-cache-dtype", "fp8")
    size, most = "GPU KV cache size: 100,599 tokens", "Maximum concurrency for 65,536 tokens per request: 1.54x"
    old = dryboot("plan", "--model", dsv4, "--vllm-version", "0.27.1", *flags)
    assert old.returncode == 0, old.stderr
    assert f"  {size}\n  {most}\n" in old.stdout
    new = dryboot("plan", "--model", dsv4, "--vllm-version", "0.30.0", *flags)
    assert f"{size}, {most}" in new.stdout
