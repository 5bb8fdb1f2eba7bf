"""``dryboot plan``'s weights line: vLLM's ``Model loading took X GiB`` per rank, from a checkpoint
directory's safetensors headers or the config alone, and hostile checkpoints refused in one line."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "fidelity"))

from test_weights import DATA, RECORDED, _config, hf_tensors, write_header_only_shards


def dryboot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dryboot", *args], capture_output=True, text=True, check=False)


def _checkpoint(tmp_path: Path, name: str) -> Path:
    shutil.copy(DATA / "configs" / name / "config.json", tmp_path / "config.json")
    config, hq = _config(name)
    write_header_only_shards(tmp_path, hf_tensors(config, hq))
    return tmp_path


def test_plan_prints_model_loading_from_headers(tmp_path: Path) -> None:
    d = _checkpoint(tmp_path, "meta-llama--Meta-Llama-3.1-8B")
    r = dryboot("plan", "--model", str(d), "-tp", "2", "--kv-cache-memory-bytes", "10G")
    assert r.returncode == 0, r.stderr
    assert "\n  Model loading took 7.51 GiB memory\n" in r.stdout
    # the tensors' bytes, then the 2 MiB segments of the embedding and LM head (501 MiB each at TP 2)
    assert (
        "(TP 2: 8,064,180,224 bytes, from the checkpoint headers; + 2,097,152 bytes of the allocator's unsplit "
        "segments while loading)" in " ".join(r.stdout.split())
    )
    r = dryboot("plan", "--model", str(d), "-tp", "2", "--kv-cache-memory-bytes", "10G", "--json")
    w = json.loads(r.stdout)["weights"]
    want = RECORDED["meta-llama--Meta-Llama-3.1-8B --tensor-parallel-size 2"]
    assert w["source"] == "checkpoint headers"
    assert w["stages"][0]["param_bytes"] == want["param_bytes"]
    assert w["stages"][0]["buffer_bytes"] == want["buffer_bytes"]


def test_plan_config_alone_says_so_and_pp_stages(tmp_path: Path) -> None:
    cfg = DATA / "configs" / "Qwen--Qwen3-8B"
    r = dryboot("plan", "--model", str(cfg), "-pp", "2", "--kv-cache-memory-bytes", "10G", "--json")
    w = json.loads(r.stdout)["weights"]
    assert w["source"] == "config alone" and "from the config alone" in w["notes"][0]
    first, last = w["stages"]
    assert "embedding" in first["by_kind"] and "lm_head" in last["by_kind"]
    tp1 = RECORDED["Qwen--Qwen3-8B --tensor-parallel-size 1"]["param_bytes"]
    assert first["param_bytes"] + last["param_bytes"] == tp1


def test_unmodelled_architecture_is_stated_not_guessed() -> None:
    cfg = DATA.parents[2] / "data" / "configs" / "public" / "deepseek-ai--DeepSeek-V4-Flash"
    r = dryboot("plan", "--model", str(cfg), "--kv-cache-memory-bytes", "10G", "--kv-cache-dtype", "fp8")
    text = " ".join(r.stdout.split())
    # the plan's GPU here is SM 9.0, whose fp8 block layout vLLM's oracle cannot build
    assert "Weights: not given (--gpu: DeepseekV4ForCausalLM: SM 9.0's fp8 block layers take DeepGEMM's" in text


def test_hostile_header_one_line_exit_2(tmp_path: Path) -> None:
    d = _checkpoint(tmp_path, "Qwen--Qwen3-0.6B")
    shard = sorted(d.glob("*.safetensors"))[0]
    shard.write_bytes(struct.pack("<Q", 1 << 62) + b"{")
    r = dryboot("plan", "--model", str(d), "--kv-cache-memory-bytes", "1G")
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "above the 100000000-byte bound" in r.stderr
    assert "Traceback" not in r.stderr


def _partial_checkpoint(tmp_path: Path, name: str, keep: object) -> Path:
    tmp_path.mkdir()
    shutil.copy(DATA / "configs" / name / "config.json", tmp_path / "config.json")
    config, hq = _config(name)
    tensors = {k: v for k, v in hf_tensors(config, hq).items() if keep(k)}  # type: ignore[operator]
    write_header_only_shards(tmp_path, tensors, shards=1)
    return tmp_path


def test_a_checkpoint_without_the_configs_layers_is_refused_by_name(tmp_path: Path) -> None:
    """New user's trial, item 12. Before: a Qwen3-0.6B config beside headers holding only
    model.embed_tokens.weight gave 'Model loading took 0.30 GiB ... from the checkpoint headers',
    exit 0, its 28 layers missing. Now one line, exit 2, naming the first missing tensor."""
    d = _partial_checkpoint(tmp_path / "a", "Qwen--Qwen3-0.6B", lambda k: k == "model.embed_tokens.weight")
    r = dryboot("plan", "--model", str(d), "--gpu", "rtx3090")
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert r.stderr == (
        "dryboot: error: safetensors headers: model.norm: no such tensor, though the config implies it: "
        "the checkpoint does not hold the config's model (or is cut)\n"
    )
    # one layer's MLP missing: named with its layer
    d = _partial_checkpoint(tmp_path / "b", "Qwen--Qwen3-0.6B", lambda k: not k.startswith("model.layers.3.mlp."))
    r = dryboot("plan", "--model", str(d), "--kv-cache-memory-bytes", "10G")
    assert r.returncode == 2, r.stdout
    assert r.stderr.startswith("dryboot: error: safetensors headers: model.layers.3.mlp.gate_proj: no such tensor")
