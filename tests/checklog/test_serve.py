"""``dryboot plan --serve 'vllm serve ...'`` / ``dryboot plan -- vllm serve ...``: the command line
read as the planned release's parser reads it (0.28.0 unless given), mapped as check-log maps a logged args line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dryboot.checklog.serve import parse_serve
from dryboot.cli import cli
from dryboot.errors import InputError

from .conftest import REPO

QWEN_NEXT = "Qwen/Qwen3-Next-80B-A3B-Thinking"
CONFIG = REPO / "examples" / "models" / "Qwen3-Next-80B-A3B-Thinking.config.json"


def plan_json(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, object], str]:
    r = CliRunner().invoke(cli, ["plan", "--json", *args], env=env, catch_exceptions=False)
    out = r.stdout if hasattr(r, "stdout") else r.output
    start = out.find("{")
    return r.exit_code, (json.loads(out[start:]) if start >= 0 else {}), r.output


def without_paths(doc: dict[str, object]) -> dict[str, object]:
    text = json.dumps(doc)
    text = text.replace(str(CONFIG), "CONFIG")
    out: dict[str, object] = json.loads(text)
    for key in ("model", "config", "given", "flags", "drafter"):
        out.pop(key, None)
    return out


def test_parse_the_forms_vllm_accepts() -> None:
    cmd = parse_serve(
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve -tp=2 --model Qwen/Qwen3-8B --max_model_len 32768 "
        "--kv-cache-dtype=fp8 --no-enable-prefix-caching --gpu-memory-util 0.9 -O3 "
        "--speculative-config.method mtp --speculative-config.num_speculative_tokens 2 --served-model-name a b",
        {},
    )
    a = cmd.args
    assert a["model"] == a["model_tag"] == "Qwen/Qwen3-8B"
    assert a["tensor_parallel_size"] == 2 and a["max_model_len"] == 32768 and a["kv_cache_dtype"] == "fp8"
    assert a["enable_prefix_caching"] is False and a["gpu_memory_utilization"] == 0.9
    assert a["optimization_level"] == 3
    assert a["speculative_config"] == {"method": "mtp", "num_speculative_tokens": 2}
    assert a["served_model_name"] == ["a", "b"]
    assert cmd.env == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
    assert any("--gpu-memory-utilization" in n for n in cmd.notes)


def test_python_module_form_and_line_continuations() -> None:
    cmd = parse_serve("$ python3 -m vllm.entrypoints.openai.api_server \\\n  --model m/x \\\n  -tp 4\n", {})
    assert cmd.args["model"] == "m/x" and cmd.args["tensor_parallel_size"] == 4


def test_config_yaml_keys_then_the_command_line_wins(tmp_path: Path) -> None:
    cfg = tmp_path / "serve.yaml"
    cfg.write_text(
        "tensor-parallel-size: 4\nmax_model_len: 8192\nenable-prefix-caching: false\n"
        "speculative-config:\n  method: mtp\n  num_speculative_tokens: 1\n"
    )
    cmd = parse_serve(f"vllm serve m/x --config {cfg} -tp 2", {})
    assert cmd.args["tensor_parallel_size"] == 2  # the command line wins
    assert cmd.args["max_model_len"] == 8192 and cmd.args["enable_prefix_caching"] is False
    assert cmd.args["speculative_config"] == {"method": "mtp", "num_speculative_tokens": 1}


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("vllm serve m/x --bogus 1", "no such option"),
        ("vllm serve m/x --max-model-len", "expected a value"),
        ("vllm serve m/x extra", "extra positional"),
        ("llama-server -m x", "expected a command 'vllm serve MODEL"),
        ("vllm serve 'm/x", "cannot split"),
        ("vllm serve m/x --config a.json", "only .yaml"),
        ("vllm serve m/x --enable-prefix-caching=1", "takes no value"),
    ],
)
def test_bad_command_lines_are_one_line(line: str, reason: str) -> None:
    with pytest.raises(InputError, match=reason):
        parse_serve(line, {})


def test_environment_variables_are_read_from_the_environment_and_the_prefix() -> None:
    cmd = parse_serve("VLLM_KV_CACHE_LAYOUT=HND vllm serve m/x", {"VLLM_LOGGING_LEVEL": "DEBUG", "HOME": "/root"})
    assert cmd.env == {"VLLM_LOGGING_LEVEL": "DEBUG", "VLLM_KV_CACHE_LAYOUT": "HND"}


def test_serve_plans_what_the_same_flags_plan() -> None:
    native = plan_json("--model", str(CONFIG), "-tp", "2", "--kv-cache-dtype", "fp8", "--max-model-len", "65536",
                       "--kv-cache-memory-bytes", "40G", "--no-enable-prefix-caching")  # fmt: skip
    served = plan_json(
        "--model", str(CONFIG), "--kv-cache-memory-bytes", "40G", "--serve",
        f"vllm serve {QWEN_NEXT} --tensor-parallel-size=2 --kv_cache_dtype fp8 --max-model-len 65536 "
        "--no-enable-prefix-caching --port 8000 --trust-remote-code",
    )  # fmt: skip
    after_dashes = plan_json(
        "--model", str(CONFIG), "--kv-cache-memory-bytes", "40G", "--",
        "vllm", "serve", QWEN_NEXT, "-tp", "2", "--kv-cache-dtype", "fp8", "--max-model-len=65536",
        "--no-enable-prefix-caching",
    )  # fmt: skip
    assert native[0] == served[0] == after_dashes[0]
    assert without_paths(native[1]) == without_paths(served[1]) == without_paths(after_dashes[1])
    assert "ignored port: does not touch the KV cache" in served[2]


def test_the_model_is_resolved_through_the_hub_cache(hf_cache: Path) -> None:
    code, doc, out = plan_json("--kv-cache-memory-bytes", "40G", "--serve", f"vllm serve {QWEN_NEXT} -tp 2")
    assert code in (0, 1), out
    assert "the Hugging Face cache" in out and doc


def test_refused_options_and_variables_name_themselves() -> None:
    r = CliRunner().invoke(
        cli, ["plan", "--model", str(CONFIG), "--", "vllm", "serve", QWEN_NEXT, "--hf-overrides", '{"a": 1}']
    )
    assert r.exit_code == 2 and "--serve: hf_overrides:" in r.output and "dryboot cannot model it" in r.output
    r = CliRunner().invoke(
        cli, ["plan", "--model", str(CONFIG), "--serve", f"VLLM_USE_SIMPLE_KV_OFFLOAD=1 vllm serve {QWEN_NEXT}"]
    )
    assert r.exit_code == 2 and "VLLM_USE_SIMPLE_KV_OFFLOAD" in r.output


def test_allow_long_max_model_len_from_the_prefix_is_applied() -> None:
    too_long = f"vllm serve {QWEN_NEXT} --max-model-len 1000000"
    r = CliRunner().invoke(cli, ["plan", "--model", str(CONFIG), "--kv-cache-memory-bytes", "40G", "--serve", too_long])
    assert r.exit_code == 2, r.output
    r = CliRunner().invoke(
        cli,
        ["plan", "--model", str(CONFIG), "--kv-cache-memory-bytes", "40G", "--serve",
         "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 " + too_long],
    )  # fmt: skip
    assert r.exit_code in (0, 1), r.output


QWEN3_30B = REPO / "tests" / "data" / "configs" / "public" / "Qwen--Qwen3-30B-A3B" / "config.json"
DEEPSEEK_V3 = REPO / "tests" / "data" / "configs" / "public" / "deepseek-ai--DeepSeek-V3" / "config.json"


@pytest.mark.parametrize(
    ("served", "native"),
    [
        ("--enforce-eager", ["--enforce-eager"]),
        ("-O0", ["--optimization-level", "0"]),
        ("-O 3", ["--optimization-level", "3"]),
        ("-cc.cudagraph_mode=PIECEWISE", ["--compilation-config", '{"cudagraph_mode": "PIECEWISE"}']),
        ('--compilation-config \'{"cudagraph_mode": "NONE"}\'', ["-cc", '{"cudagraph_mode": "NONE"}']),
        ("--cudagraph-capture-sizes 1 2 4", ["--compilation-config", '{"cudagraph_capture_sizes": [1, 2, 4]}']),
        ("--max-cudagraph-capture-size 64", ["--compilation-config", '{"max_cudagraph_capture_size": 64}']),
    ],
)
def test_serve_maps_the_flags_the_predicted_budget_reads(served: str, native: list[str]) -> None:
    """newuser-report item 4: these were dropped as "measured in the KV budget vLLM profiles"."""
    common = ["--model", str(QWEN3_30B), "--gpu", "H100"]
    a = plan_json(*common, "--max-model-len", "32768", *native)
    b = plan_json(*common, "--serve", f"vllm serve x --max-model-len 32768 {served}")
    assert a[0] == b[0] and a[1]["summary"] == b[1]["summary"], b[2]
    assert "ignored" not in b[2] or "its memory is measured" not in b[2]


def test_enforce_eager_from_serve_gives_the_native_tokens() -> None:
    common = ["--model", str(QWEN3_30B), "--gpu", "H100"]
    eager = plan_json(*common, "--serve", "vllm serve x --max-model-len 32768 --enforce-eager")
    graphs = plan_json(*common, "--serve", "vllm serve x --max-model-len 32768")
    # = plan --enforce-eager (the weights with the load's 1 MiB of unsplit allocator segments)
    assert eager[1]["summary"]["kv_cache_size_tokens"] == 146_640
    # compiled: the first start (cold compile cache) decides and is planned, below the later starts'
    starts = {s["start"]: s for s in graphs[1]["budget"]["starts"]}
    assert starts["later"]["kv_cache_size_tokens"]["estimate"] == 141_008
    first = starts["first"]["kv_cache_size_tokens"]["estimate"]
    assert graphs[1]["summary"]["kv_cache_size_tokens"] == first < 141_008


def test_capture_sizes_twice_are_refused_as_vllm_refuses_them() -> None:
    line = "vllm serve x --cudagraph-capture-sizes 1 2 -cc.cudagraph_capture_sizes=[4]"
    r = CliRunner().invoke(cli, ["plan", "--model", str(QWEN3_30B), "--gpu", "H100", "--serve", line])
    assert r.exit_code == 2 and "cudagraph_capture_sizes: " in r.output and "mutually exclusive" in r.output


def test_lora_from_serve_reaches_the_weights_or_is_refused_by_name(tmp_path: Path) -> None:
    # Qwen3-30B-A3B (MoE): the experts' LoRA stacks reach the weights (4 x rank 64: 25.35 GiB)
    line = "vllm serve x --max-model-len 32768 --enable-lora --max-loras 4 --max-lora-rank 64"
    code, doc, out = plan_json("--model", str(QWEN3_30B), "--gpu", "H100", "--serve", line)
    assert code == 1 and doc["weights"]["refused"] is None, out
    assert doc["weights"]["stages"][0]["lora_bytes"] == 27_218_398_208
    assert "give it to dryboot" not in out and "ignored max_loras" not in out
    # DeepSeek-V3 (MLA): LoRA's stacks are not modelled there, so the budget is undetermined (the
    # config taken unquantized, so that the LoRA refusal is the one checked)
    unquantized = {k: v for k, v in json.loads(DEEPSEEK_V3.read_text()).items() if k != "quantization_config"}
    (tmp_path / "config.json").write_text(json.dumps(unquantized))
    code, doc, out = plan_json("--model", str(tmp_path / "config.json"), "--gpu", "H100", "--serve", line)
    assert code == 3, out
    assert "--enable-lora: LoRA's allocations are not modelled for DeepseekV3ForCausalLM" in doc["weights"]["refused"]
    _, _, out = plan_json("--model", str(QWEN3_30B), "--gpu", "H100", "--serve", "vllm serve x --max-loras 4")
    assert "ignored max_loras: LoRA is off (no enable_lora)" in out


def test_expert_parallel_from_serve_reaches_the_weights() -> None:
    common = ["--model", str(QWEN3_30B), "--gpu", "H100", "--max-model-len", "32768", "-tp", "2"]
    native = plan_json(*common, "--enable-expert-parallel")
    served = plan_json(*common, "--serve", "vllm serve x --enable-expert-parallel")
    assert native[1]["weights"] == served[1]["weights"]
    assert plan_json(*common)[1]["weights"] != native[1]["weights"]


def test_interactivity_mode_is_noted_as_not_followed_by_the_predicted_budget() -> None:
    line = "vllm serve x --max-model-len 32768 --performance-mode interactivity"
    code, _, out = plan_json("--model", str(QWEN3_30B), "--gpu", "H100", "--serve", line)
    assert code in (0, 1) and "ignored performance_mode 'interactivity': it changes the CUDA graph" in out


@pytest.mark.parametrize(
    "words", [["-dp", "2", "--enable-expert-parallel"], ["-tp", "16", "--nnodes", "2"]], ids=["dp-ep", "nnodes"]
)
def test_serve_maps_data_parallelism_and_nodes(words: list[str]) -> None:
    common = ["--model", str(QWEN3_30B), "--gpu", "H100"]
    native = plan_json(*common, "--max-model-len", "32768", *words)
    served = plan_json(*common, "--serve", f"vllm serve x --max-model-len 32768 {' '.join(words)}")
    assert native[0] == served[0] == 0, served[2]
    assert native[1]["summary"] == served[1]["summary"] and native[1]["weights"] == served[1]["weights"]


def test_a_load_format_of_the_default_loader_is_noted_as_not_changing_sizes() -> None:
    line = "vllm serve x --max-model-len 32768 --load-format dummy"
    _, _, out = plan_json("--model", str(QWEN3_30B), "--gpu", "H100", "--serve", line)
    assert "ignored load_format 'dummy': where vLLM reads the weights from, not their size" in out


def test_estimate_cudagraphs_off_is_noted_as_not_followed_by_the_predicted_budget() -> None:
    line = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 vllm serve x --max-model-len 32768"
    _, _, out = plan_json("--model", str(QWEN3_30B), "--gpu", "H100", "--serve", line)
    assert "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0: vLLM then does not subtract" in out
