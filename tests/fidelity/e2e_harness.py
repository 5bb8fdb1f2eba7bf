"""End-to-end fidelity harness: dryboot's CLI against vLLM 0.28.0's engine start, same inputs.

Both tools get exactly what a user gives: a directory holding ``config.json`` and the same flags.
dryboot runs in-process through its click group (``dryboot plan ... --json``); vLLM runs in
``src/dryboot/boot/engine_start.py`` inside the fidelity venv (``DRYBOOT_VLLM_PYTHON``). This module has no test of its
own: ``test_e2e.py`` drives it, and it can be run as a script for a report without pytest:

    DRYBOOT_VLLM_PYTHON=... python tests/fidelity/e2e_harness.py --cases 300 [--seed 0] [--jobs 2]

Cases are generated deterministically from (seed, index): the shipped configs in
``examples/models`` under many flag sets, and small generated configs of every family dryboot
handles. Generated configs are written under the work directory (``DRYBOOT_E2E_WORKDIR``,
default ``<repo>/.e2e-work``, git-ignored) so that every disagreement's command can be re-run.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import random
import re
import shlex
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dryboot.boot.compare import KIND_TO_VLLM  # dryboot's group kinds -> vLLM's spec type names

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
ORACLE = REPO / "src" / "dryboot" / "boot" / "engine_start.py"  # the one oracle: dryboot boot's
EXAMPLES = REPO / "examples" / "models"
E2E_MIN = HERE / "data" / "e2e-min"

COMPARED = ("block_size", "groups", "num_blocks", "tokens", "concurrency", "max_model_len")


# --------------------------------------------------------------------------- cases


def oracle_jobs() -> int:
    """How many oracle processes a live run starts: ``DRYBOOT_E2E_JOBS``, else one a core up to two
    (each process holds one vLLM import, ~1 GB)."""
    return int(os.environ.get("DRYBOOT_E2E_JOBS", str(min(2, os.cpu_count() or 1))))


def vllm_version(python: str) -> str:
    """The vLLM release installed beside interpreter ``python`` (a boot environment's)."""
    return subprocess.run(
        [python, "-c", "from importlib.metadata import version; print(version('vllm'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


#: what a config-case recorder keeps of each oracle answer
RECORD_KEPT = ("ok", "stage", "error", "block_size", "groups", "group_layers", "num_blocks")
#: ... and with the engine start's capacity as it logs it and its KV log lines (the HY V4 and
#: Dots3-Note records)
LOGGED_KEPT = (*RECORD_KEPT, "tokens", "concurrency", "max_model_len", "final_block_size", "kv_log")


def crashed_cases(res: dict[str, dict[str, Any]]) -> list[str]:
    """The case ids whose oracle process crashed, printed to stderr (a recorder then writes
    nothing and exits 1)."""
    crashed = sorted(k for k, v in res.items() if "OracleCrash" in str(v.get("error")))
    if crashed:
        print("oracle crashed on " + ", ".join(crashed) + "; nothing recorded, run again", file=sys.stderr)
    return crashed


def kept_answer(answer: dict[str, Any], fields: tuple[str, ...], error_chars: int) -> dict[str, Any]:
    """The ``fields`` of one oracle ``answer`` that it gives (not ``None``), its error cut to
    ``error_chars`` characters: what a record keeps."""
    kept = {k: answer.get(k) for k in fields if answer.get(k) is not None}
    if "error" in kept:
        kept["error"] = str(kept["error"])[:error_chars]
    return kept


def record_config_cases(
    python: str,
    version: str,
    cases: dict[str, tuple[str, list[str]]],
    config: Any,
    path: Path,
    error_chars: int,
    kept_fields: tuple[str, ...] = RECORD_KEPT,
    files: Callable[[str], Path | None] | None = None,
) -> int:
    """Run release ``version``'s engine start (interpreter ``python``) over ``cases`` (case id ->
    (config name, flags); ``config(name)`` gives the config) and write what :data:`RECORD_KEPT`
    names of each answer (or ``kept_fields``) to ``path`` (the error cut to ``error_chars``); prints a
    line per case. ``files(name)``: a directory whose files go beside that config (a checkpoint's
    own config Python files, :func:`with_files`), or ``None``.
    Returns the exit status: 1 (nothing written) when the oracle crashed on a case."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs = [
            {
                "id": cid,
                "model": with_files(_write_config(work, name, config(name)), files(name) if files else None),
                "argv": argv,
            }
            for cid, (name, argv) in cases.items()
        ]
        res = OracleRunner(python, jobs=1).run(inputs)
    if crashed_cases(res):
        return 1
    out = {}
    for cid, (name, argv) in cases.items():
        kept = kept_answer(res[cid], kept_fields, error_chars)
        out[cid] = {"config": name, "argv": argv, "vllm": kept}
        print(f"{cid:28} {'served' if kept.get('ok') else kept.get('error', '')[:90]}")
    path.write_text(json.dumps({"vllm": version, "cases": out}, indent=1) + "\n")
    print(f"vLLM {version}: {len(out)} cases recorded into {path}")
    return 0


@dataclass
class Case:
    id: str
    family: str
    model: str  # directory holding config.json (both tools get it)
    argv: list[str]
    source: str = ""  # where the config came from (shipped file or generator)
    note: str = ""
    env: dict[str, str] = field(default_factory=dict)  # environment both tools see (VLLM_PP_LAYER_PARTITION)

    def oracle_input(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "model": self.model, "argv": self.argv}
        if self.env:
            out["env"] = self.env
        return out

    def box_flags(self) -> list[str]:
        """The box the default oracle stands for, as dryboot's flags: a stand-in H200 without
        flashinfer-cubin (nothing installs it in the boot environments, and offline NVIDIA's
        artifactory is unreachable, so vLLM's ``has_nvidia_artifactory()`` is false there); a case
        that names ``--gpu`` runs as that GPU and arm and says so itself."""
        if "--gpu" in self.argv or any(a.endswith("flashinfer-cubin") for a in self.argv):
            return []
        return ["--no-flashinfer-cubin"]

    def dryboot_argv(self, vllm_version: str | None = None) -> list[str]:
        pin = ["--vllm-version", vllm_version] if vllm_version else []
        return ["plan", "--model", self.model, *self.argv, *self.box_flags(), *pin, "--json"]

    def command(self, vllm_version: str | None = None) -> str:
        pin = ["--vllm-version", vllm_version] if vllm_version else []
        env = "".join(f"{k}={shlex.quote(v)} " for k, v in self.env.items())
        return env + "dryboot plan " + shlex.join(["--model", self.model, *self.argv, *self.box_flags(), *pin])


#: the checkpoints' own config Python files (``remote-code/<checkpoint>/``, each with its SOURCE):
#: vLLM reads such a config only with --trust-remote-code, from files beside config.json
REMOTE_CODE = HERE / "data" / "remote-code"


def with_files(model: str, extra: Path | None) -> str:
    """``model`` with ``extra``'s ``*.py`` files beside its config.json (``None``: ``model`` as is)."""
    for f in sorted(extra.glob("*.py")) if extra is not None else ():
        target = Path(model) / f.name
        if not target.exists() or target.read_bytes() != f.read_bytes():
            target.write_bytes(f.read_bytes())
    return model


def _write_config(workdir: Path, name: str, config: dict[str, Any]) -> str:
    text = json.dumps(config, indent=1, sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    d = workdir / "configs" / f"{name}-{digest}"
    d.mkdir(parents=True, exist_ok=True)
    target = d / "config.json"
    if not target.exists() or target.read_text() != text:
        target.write_text(text)
    return str(d)


#: A stand-in tokenizer (``frontier_cases.py``'s ``gemma4-mm``): without one vLLM cannot build
#: Gemma-4's processing info and starts the multimodal model text-only (mm-prefix attention off,
#: so a backend without mm-prefix support passes), which no real checkpoint directory does.
MM_TOKENIZER = HERE / "data" / "frontier" / "files" / "gemma4-mm"
#: multimodal architectures whose generated directories get :data:`MM_TOKENIZER`
NEEDS_TOKENIZER = frozenset({"Gemma4ForConditionalGeneration"})


def _with_tokenizer(model: str, config: dict[str, Any]) -> str:
    """``model`` with :data:`MM_TOKENIZER`'s files beside its config.json when the config is of
    :data:`NEEDS_TOKENIZER`, so vLLM starts it as it starts a published checkpoint."""
    if NEEDS_TOKENIZER.isdisjoint(config.get("architectures") or ()):
        return model
    for f in MM_TOKENIZER.iterdir():
        target = Path(model) / f.name
        if not target.exists():
            target.write_bytes(f.read_bytes())
    return model


def materialize_file(workdir: Path, path: Path) -> str:
    """A directory holding ``path`` as config.json (vLLM takes model directories)."""
    if path.is_dir():
        return str(path.resolve())
    return _write_config(
        workdir, path.name.removesuffix(".config.json").removesuffix(".json"), json.loads(path.read_text())
    )


def _spec(d: dict[str, Any]) -> str:
    return json.dumps(d)


# ---- family templates (small, fast to build on the meta device)


def _pick(rng: random.Random, items: list[Any], weights: list[float] | None = None) -> Any:
    return rng.choices(items, weights=weights, k=1)[0]


def _heads(rng: random.Random) -> tuple[int, int]:
    n_heads = _pick(rng, [8, 16, 32])
    n_kv = _pick(rng, [h for h in (1, 2, 4, 8, 16) if n_heads % h == 0])
    return n_heads, n_kv


def _dense_base(rng: random.Random, arch: str, model_type: str) -> dict[str, Any]:
    n_heads, n_kv = _heads(rng)
    cfg: dict[str, Any] = {
        "architectures": [arch],
        "model_type": model_type,
        "num_hidden_layers": rng.randint(1, 6),
        "hidden_size": n_heads * _pick(rng, [64, 128]),
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv,
        "intermediate_size": 1024,
        "vocab_size": 1024,
        "torch_dtype": _pick(rng, ["bfloat16", "float16", "float32"], [8, 1, 1]),
    }
    if rng.random() < 0.85:
        cfg["max_position_embeddings"] = _pick(rng, [4096, 8192, 32768, 131072])
    if rng.random() < 0.5:
        cfg["head_dim"] = _pick(rng, [64, 96, 128, 256])
    return cfg


def _quant(rng: random.Random, cfg: dict[str, Any]) -> str:
    r = rng.random()
    if r < 0.12:
        cfg["quantization_config"] = {
            "quant_method": "modelopt",
            "quant_algo": "FP8",
            "kv_cache_quant_algo": _pick(rng, ["FP8", None], [4, 1]),
            "exclude_modules": ["lm_head"],
        }
        return "+modelopt"
    if r < 0.24:
        scheme = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False, "symmetric": True}
        cfg["quantization_config"] = {
            "quant_method": "compressed-tensors",
            "format": "float-quantized",
            "config_groups": {
                "group_0": {
                    "targets": ["Linear"],
                    "weights": {
                        "num_bits": 8,
                        "type": "float",
                        "strategy": "channel",
                        "dynamic": False,
                        "symmetric": True,
                    },
                    "input_activations": {
                        "num_bits": 8,
                        "type": "float",
                        "strategy": "token",
                        "dynamic": True,
                        "symmetric": True,
                    },
                }
            },
            "ignore": ["lm_head"],
            "kv_cache_scheme": scheme if rng.random() < 0.8 else None,
        }
        return "+compressed-tensors"
    return ""


def gen_llama(rng: random.Random) -> tuple[str, dict[str, Any]]:
    cfg = _dense_base(rng, "LlamaForCausalLM", "llama")
    return "llama" + _quant(rng, cfg), cfg


def gen_mistral(rng: random.Random) -> tuple[str, dict[str, Any]]:
    cfg = _dense_base(rng, "MistralForCausalLM", "mistral")
    r = rng.random()
    if r < 0.35:
        cfg["sliding_window"] = _pick(rng, [256, 1024, 4096])
    elif r < 0.6:
        cfg["sliding_window"] = None
    return "mistral", cfg


def gen_qwen2(rng: random.Random) -> tuple[str, dict[str, Any]]:
    cfg = _dense_base(rng, "Qwen2ForCausalLM", "qwen2")
    if rng.random() < 0.5:
        cfg["use_sliding_window"] = rng.random() < 0.7
        cfg["sliding_window"] = _pick(rng, [512, 4096, 32768])
        n = cfg["num_hidden_layers"]
        cfg["max_window_layers"] = _pick(rng, [n, max(0, n - 1), 28])
    return "qwen2", cfg


def gen_qwen3(rng: random.Random) -> tuple[str, dict[str, Any]]:
    cfg = _dense_base(rng, "Qwen3ForCausalLM", "qwen3")
    if rng.random() < 0.3:
        cfg["use_sliding_window"] = rng.random() < 0.7
        cfg["sliding_window"] = _pick(rng, [512, 4096])
        n = cfg["num_hidden_layers"]
        cfg["max_window_layers"] = _pick(rng, [n, max(0, n - 1)])
    return "qwen3" + _quant(rng, cfg), cfg


def gen_gemma2(rng: random.Random) -> tuple[str, dict[str, Any]]:
    n_heads, n_kv = _heads(rng)
    n = rng.randint(2, 6)
    cfg: dict[str, Any] = {
        "architectures": ["Gemma2ForCausalLM"],
        "model_type": "gemma2",
        "num_hidden_layers": n,
        "hidden_size": 1024,
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv,
        "head_dim": _pick(rng, [128, 256]),
        "intermediate_size": 2048,
        "vocab_size": 1024,
        "sliding_window": _pick(rng, [512, 4096]),
        "query_pre_attn_scalar": 256,
        "torch_dtype": "bfloat16",
        "max_position_embeddings": 8192,
    }
    if rng.random() < 0.4:
        cfg["layer_types"] = [_pick(rng, ["sliding_attention", "full_attention"]) for _ in range(n)]
    return "gemma2", cfg


def gen_gemma3(rng: random.Random) -> tuple[str, dict[str, Any]]:
    n_heads, n_kv = _heads(rng)
    n = rng.randint(2, 8)
    cfg: dict[str, Any] = {
        "architectures": ["Gemma3ForCausalLM"],
        "model_type": "gemma3_text",
        "num_hidden_layers": n,
        "hidden_size": 1152,
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv,
        "head_dim": _pick(rng, [128, 256]),
        "intermediate_size": 2048,
        "vocab_size": 1024,
        "sliding_window": _pick(rng, [512, 1024, 4096]),
        "torch_dtype": "bfloat16",
    }
    if rng.random() < 0.7:
        cfg["max_position_embeddings"] = _pick(rng, [32768, 131072])
    r = rng.random()
    if r < 0.4:
        cfg["layer_types"] = [_pick(rng, ["sliding_attention", "full_attention"], [3, 1]) for _ in range(n)]
        mode = "layer_types"
    elif r < 0.8:
        cfg["sliding_window_pattern"] = _pick(rng, [2, 3, 6])
        mode = "pattern"
    else:
        mode = "default"
    return f"gemma3[{mode}]", cfg


def gen_gemma4(rng: random.Random) -> tuple[str, dict[str, Any]]:
    base = json.loads((E2E_MIN / "gemma4_global" / "config.json").read_text())
    tc = base["text_config"]
    n = rng.randint(2, 8)
    tc["num_hidden_layers"] = n
    tc["layer_types"] = [_pick(rng, ["sliding_attention", "full_attention"], [4, 1]) for _ in range(n)]
    if "full_attention" not in tc["layer_types"] and rng.random() < 0.7:
        tc["layer_types"][-1] = "full_attention"
    tc["num_key_value_heads"] = _pick(rng, [2, 4, 8, 16])
    tc["head_dim"] = _pick(rng, [128, 256])
    r = rng.random()
    if r < 0.7:
        tc["global_head_dim"] = _pick(rng, [256, 512])
        tc["num_global_key_value_heads"] = _pick(rng, [1, 2, 4])
    elif r < 0.85:
        tc.pop("global_head_dim", None)
        tc.pop("num_global_key_value_heads", None)
    tc["attention_k_eq_v"] = rng.random() < 0.6
    tc["sliding_window"] = _pick(rng, [512, 1024])
    tc["num_experts"] = 8
    tc["top_k_experts"] = 2
    tc["vocab_size"] = 4096
    tc["vocab_size_per_layer_input"] = 4096
    if rng.random() < 0.3:
        # cross-layer KV sharing: the last layers read an earlier layer's cache
        tc["num_kv_shared_layers"] = rng.randint(1, max(1, n - 1))
    return "gemma4", base


def gen_gptoss(rng: random.Random) -> tuple[str, dict[str, Any]]:
    cfg = json.loads((E2E_MIN / "gptoss_parity" / "config.json").read_text())
    n = rng.randint(2, 6)
    cfg["num_hidden_layers"] = n
    r = rng.random()
    if r < 0.4:
        cfg["layer_types"] = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)]
    elif r < 0.8:
        cfg["layer_types"] = [_pick(rng, ["sliding_attention", "full_attention"]) for _ in range(n)]
    else:
        cfg.pop("layer_types", None)
    cfg["sliding_window"] = _pick(rng, [128, 256])
    cfg["num_local_experts"] = 8
    return "gpt-oss", cfg


def gen_qwen3_next(rng: random.Random) -> tuple[str, dict[str, Any]]:
    cfg = json.loads((E2E_MIN / "mtp" / "config.json").read_text())
    n = rng.randint(2, 8)
    cfg["num_hidden_layers"] = n
    r = rng.random()
    if r < 0.3:
        cfg["full_attention_interval"] = _pick(rng, [2, 3, 4])
    elif r < 0.6:
        cfg.pop("full_attention_interval", None)
    else:
        cfg["layer_types"] = [_pick(rng, ["linear_attention", "full_attention"], [3, 1]) for _ in range(n)]
    cfg["num_key_value_heads"] = _pick(rng, [1, 2, 4])
    cfg["linear_num_value_heads"] = _pick(rng, [16, 32])
    cfg["head_dim"] = _pick(rng, [128, 256])
    if rng.random() < 0.5:
        cfg["num_nextn_predict_layers"] = 1
    return "qwen3-next", cfg


def gen_qwen3_5(rng: random.Random) -> tuple[str, dict[str, Any]]:
    cfg = json.loads((E2E_MIN / "releases" / "gdn64" / "config.json").read_text())
    tc = cfg["text_config"]
    n = rng.randint(2, 8)
    tc["num_hidden_layers"] = n
    interval = _pick(rng, [2, 4])
    tc["full_attention_interval"] = interval
    if rng.random() < 0.7:
        tc["layer_types"] = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]
    else:
        tc.pop("layer_types", None)
    tc["num_key_value_heads"] = _pick(rng, [2, 4])
    tc["linear_num_value_heads"] = _pick(rng, [16, 32, 48])
    tc["hidden_size"] = 2048
    tc["intermediate_size"] = 2048
    tc["vocab_size"] = 4096
    if rng.random() < 0.5:
        tc.pop("mamba_ssm_dtype", None)
    return "qwen3.5", cfg


def gen_nemotron_h(rng: random.Random) -> tuple[str, dict[str, Any]]:
    cfg = json.loads((E2E_MIN / "nemotron_ngroups_tp" / "config.json").read_text())
    n = rng.randint(2, 8)
    pattern = "".join(_pick(rng, ["M", "*", "-"], [3, 1, 1]) for _ in range(n))
    if "*" not in pattern:
        pattern = pattern[:-1] + "*"
    cfg["hybrid_override_pattern"] = pattern
    cfg["num_hidden_layers"] = n
    cfg["n_groups"] = _pick(rng, [1, 2, 8])
    cfg["mamba_num_heads"] = _pick(rng, [32, 64, 128])
    cfg["ssm_state_size"] = _pick(rng, [64, 128])
    cfg["n_routed_experts"] = 8
    cfg["num_experts_per_tok"] = 2
    if rng.random() < 0.5:
        cfg.pop("mamba_ssm_cache_dtype", None)
    cfg["max_position_embeddings"] = _pick(rng, [8192, 262144])
    return "nemotron-h", cfg


def gen_deepseek(rng: random.Random) -> tuple[str, dict[str, Any]]:
    cfg = json.loads((E2E_MIN / "mla_rope32" / "config.json").read_text())
    v3 = rng.random() < 0.5
    cfg["n_group"] = 1
    cfg["topk_group"] = 1
    if v3:
        cfg["architectures"] = ["DeepseekV3ForCausalLM"]
        cfg["model_type"] = "deepseek_v3"
        cfg["n_group"] = 1
        cfg["topk_group"] = 1
        cfg["topk_method"] = "noaux_tc"
        cfg["scoring_func"] = "sigmoid"
        if rng.random() < 0.5:
            cfg["num_nextn_predict_layers"] = 1
    cfg["num_hidden_layers"] = rng.randint(1, 4)
    cfg["qk_rope_head_dim"] = _pick(rng, [64, 64, 64, 32])
    cfg["kv_lora_rank"] = _pick(rng, [512, 512, 256])
    cfg["q_lora_rank"] = _pick(rng, [None, 1536])
    cfg["max_position_embeddings"] = _pick(rng, [32768, 163840])
    return ("deepseek-v3" if v3 else "deepseek-v2"), cfg


def gen_jamba(rng: random.Random) -> tuple[str, dict[str, Any]]:
    n = rng.randint(2, 8)
    period = _pick(rng, [2, 4, 8])
    cfg = {
        "architectures": ["JambaForCausalLM"],
        "model_type": "jamba",
        "num_hidden_layers": n,
        "hidden_size": 1024,
        "intermediate_size": 2048,
        "num_attention_heads": 16,
        "num_key_value_heads": _pick(rng, [2, 8]),
        "attn_layer_period": period,
        "attn_layer_offset": rng.randrange(period),
        "expert_layer_period": 2,
        "expert_layer_offset": 1,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "mamba_d_state": 16,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_dt_rank": 64,
        "vocab_size": 1024,
        "torch_dtype": "bfloat16",
        "max_position_embeddings": 262144,
    }
    return "jamba", cfg


def gen_mamba1(rng: random.Random) -> tuple[str, dict[str, Any]]:
    cfg = {
        "architectures": ["MambaForCausalLM"],
        "model_type": "mamba",
        "num_hidden_layers": rng.randint(1, 4),
        "hidden_size": _pick(rng, [768, 1024]),
        "state_size": 16,
        "conv_kernel": 4,
        "expand": 2,
        "vocab_size": 1024,
        "torch_dtype": "bfloat16",
    }
    return "mamba1", cfg


def gen_granite4(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """Granite-4 (GraniteMoeHybrid): Mamba2 layers with a few attention layers."""
    n = rng.randint(2, 8)
    heads, kv = _heads(rng)
    types = [_pick(rng, ["mamba", "attention"], [3, 1]) for _ in range(n)]
    spelling = rng.random() < 0.3  # transformers >= 5.13 spells the types as below
    if spelling:
        types = ["linear_attention" if t == "mamba" else "full_attention" for t in types]
    hidden = _pick(rng, [768, 1536, 2048])
    m_heads = _pick(rng, [h for h in (16, 32, 48, 64) if (2 * hidden) % h == 0])
    cfg: dict[str, Any] = {
        "architectures": ["GraniteMoeHybridForCausalLM"],
        "model_type": "granitemoehybrid",
        "num_hidden_layers": n,
        "hidden_size": hidden,
        "intermediate_size": 512,
        "shared_intermediate_size": 512,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "num_local_experts": _pick(rng, [0, 4]),
        "num_experts_per_tok": 2,
        "layer_types": types,
        "mamba_n_heads": m_heads,
        "mamba_d_head": _pick(rng, ["auto", (2 * hidden) // m_heads]),
        "mamba_n_groups": _pick(rng, [1, 1, 2, 8]),
        "mamba_d_state": _pick(rng, [64, 128, 256]),
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "position_embedding_type": _pick(rng, ["nope", "rope"]),
        "vocab_size": 1024,
        "torch_dtype": "bfloat16",
        "max_position_embeddings": _pick(rng, [4096, 131072]),
    }
    if rng.random() < 0.3:
        cfg.pop("layer_types")  # every layer Mamba2
    if rng.random() < 0.3:
        cfg["mamba_chunk_size"] = _pick(rng, [128, 256])
    return "granite-4", cfg


def gen_falcon_h1(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """Falcon-H1: attention and a Mamba2 mixer in every layer."""
    heads, kv = _heads(rng)
    hidden = _pick(rng, [512, 1024, 2048])
    d_ssm = _pick(rng, [None, 1024, 1536, 3072])
    inner = 2 * hidden if d_ssm is None else d_ssm
    m_heads = _pick(rng, [h for h in (8, 16, 24, 32, 64) if inner % h == 0])
    cfg: dict[str, Any] = {
        "architectures": ["FalconH1ForCausalLM"],
        "model_type": "falcon_h1",
        "num_hidden_layers": rng.randint(1, 6),
        "hidden_size": hidden,
        "intermediate_size": 1024,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": _pick(rng, [None, 64, 128]),
        "mamba_d_ssm": d_ssm,
        "mamba_n_heads": m_heads,
        "mamba_d_head": _pick(rng, ["auto", inner // m_heads]),
        "mamba_n_groups": _pick(rng, [1, 1, 2]),
        "mamba_d_state": _pick(rng, [16, 128, 256]),
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_chunk_size": _pick(rng, [128, 256]),
        "vocab_size": 1024,
        "torch_dtype": "bfloat16",
        "max_position_embeddings": _pick(rng, [16384, 131072]),
    }
    if cfg["head_dim"] is None:
        del cfg["head_dim"]
    return "falcon-h1", cfg


def gen_lfm2(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """LFM2 / LFM2-MoE: ShortConv layers with a few attention layers."""
    n = rng.randint(2, 8)
    heads, kv = _heads(rng)
    hidden = _pick(rng, [1024, 2048])
    attn = sorted(rng.sample(range(n), rng.randint(1, max(1, n // 2))))
    types = ["full_attention" if i in attn else "conv" for i in range(n)]
    moe = rng.random() < 0.4
    cfg: dict[str, Any] = {
        "architectures": ["Lfm2MoeForCausalLM" if moe else "Lfm2ForCausalLM"],
        "model_type": "lfm2_moe" if moe else "lfm2",
        "num_hidden_layers": n,
        "hidden_size": hidden,
        "intermediate_size": 1024,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "conv_L_cache": _pick(rng, [3, 3, 4]),
        "vocab_size": 1024,
        "torch_dtype": "bfloat16",
        "max_position_embeddings": 128000,
    }
    if moe:
        cfg.update(moe_intermediate_size=256, num_experts=4, num_experts_per_tok=2, num_dense_layers=1)
        cfg["layer_types"] = types
    else:
        cfg.update(conv_dim=_pick(rng, [hidden, hidden // 2]), block_dim=hidden, block_ff_dim=1024)
        cfg["conv_dim_out"] = cfg["conv_dim"]
        if rng.random() < 0.5:
            cfg["layer_types"] = types
        else:
            cfg["full_attn_idxs"] = attn
    if rng.random() < 0.3:  # LFM2-VL: the same language model under a SigLIP2 vision tower
        text = {**cfg, "architectures": cfg["architectures"], "conv_dim": hidden} if not moe else dict(cfg)
        if not moe:
            text["conv_dim_out"] = hidden
        wrapper: dict[str, Any] = {
            "architectures": ["Lfm2VlForConditionalGeneration"],
            "model_type": "lfm2_vl",
            "text_config": text,
            "vision_config": {
                "model_type": "siglip2_vision_model",
                "hidden_size": 256,
                "intermediate_size": 512,
                "num_attention_heads": 4,
                "num_hidden_layers": 2,
                "num_patches": 256,
                "patch_size": 16,
            },
            "downsample_factor": 2,
            "projector_hidden_size": 512,
            "image_token_index": 396,
            "torch_dtype": "bfloat16",
        }
        return ("lfm2-vl-moe" if moe else "lfm2-vl"), wrapper
    return ("lfm2-moe" if moe else "lfm2"), cfg


def gen_zamba2(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """Zamba2: Mamba2 layers, the hybrid ones also running a shared attention block."""
    n = rng.randint(2, 8)
    types = [_pick(rng, ["mamba", "hybrid"], [3, 1]) for _ in range(n)]
    hidden = _pick(rng, [512, 1024, 2048])
    cfg: dict[str, Any] = {
        "architectures": ["Zamba2ForCausalLM"],
        "model_type": "zamba2",
        "num_hidden_layers": n,
        "layers_block_type": types,
        "hidden_size": hidden,
        "intermediate_size": 1024,
        "num_attention_heads": _pick(rng, [8, 16, 32]),
        "n_mamba_heads": _pick(rng, [8, 16, 32, 64]),
        "mamba_d_state": _pick(rng, [16, 64, 128]),
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_ngroups": _pick(rng, [1, 1, 2]),
        "num_mem_blocks": _pick(rng, [1, 2]),
        "use_shared_attention_adapter": rng.random() < 0.3,
        "adapter_rank": 16,
        "vocab_size": 1024,
        "torch_dtype": "bfloat16",
        "max_position_embeddings": _pick(rng, [4096, 16384]),
    }
    if rng.random() < 0.2:
        cfg["chunk_size"] = 128
    if rng.random() < 0.3:  # a checkpoint's own head size (it wins over the derived one)
        cfg["attention_head_dim"] = _pick(rng, [64, 128])
        cfg["attention_hidden_size"] = cfg["attention_head_dim"] * cfg["num_attention_heads"]
    return "zamba2", cfg


def gen_kimi_linear(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """Kimi-Linear: Kimi Delta Attention layers with some MLA layers."""
    n = rng.randint(2, 6)
    kda = sorted(rng.sample(range(1, n + 1), rng.randint(0, n)))
    heads = _pick(rng, [8, 16, 32])
    dims = _pick(rng, [(128, 64, 128), (128, 64, 128), (192, 64, 256), (64, 32, 128)])
    cfg: dict[str, Any] = {
        "architectures": ["KimiLinearForCausalLM"],
        "model_type": "kimi_linear",
        "num_hidden_layers": n,
        "hidden_size": _pick(rng, [1024, 2048]),
        "intermediate_size": 2048,
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
        "head_dim": 64,
        "kv_lora_rank": _pick(rng, [512, 512, 256]),
        "q_lora_rank": _pick(rng, [None, 1536]),
        "qk_nope_head_dim": dims[0],
        "qk_rope_head_dim": dims[1],
        "v_head_dim": dims[2],
        "mla_use_nope": True,
        "linear_attn_config": {
            "head_dim": _pick(rng, [64, 128]),
            "num_heads": _pick(rng, [8, 16, 32]),
            "short_conv_kernel_size": 4,
            "kda_layers": kda,
            "full_attn_layers": [i for i in range(1, n + 1) if i not in kda],
        },
        "num_experts": 8,
        "num_experts_per_token": 2,
        "moe_intermediate_size": 256,
        "num_shared_experts": 1,
        "first_k_dense_replace": 1,
        "vocab_size": 1024,
        "torch_dtype": "bfloat16",
        "max_position_embeddings": _pick(rng, [8192, 131072]),
    }
    return "kimi-linear", cfg


def gen_mamba2(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """Mamba2: attention-free Mamba2 layers."""
    hidden = _pick(rng, [512, 1024, 2048])
    head_dim = _pick(rng, [32, 64])
    cfg: dict[str, Any] = {
        "architectures": ["Mamba2ForCausalLM"],
        "model_type": "mamba2",
        "num_hidden_layers": rng.randint(1, 6),
        "hidden_size": hidden,
        "expand": 2,
        "num_heads": 2 * hidden // head_dim,
        "head_dim": head_dim,
        "n_groups": _pick(rng, [1, 2, 8]),
        "state_size": _pick(rng, [64, 128]),
        "conv_kernel": 4,
        "vocab_size": 1024,
        "torch_dtype": "bfloat16",
    }
    if rng.random() < 0.3:
        cfg["max_position_embeddings"] = _pick(rng, [4096, 32768])
    return "mamba2", cfg


GENERATORS = [
    gen_llama,
    gen_mistral,
    gen_qwen2,
    gen_qwen3,
    gen_gemma2,
    gen_gemma3,
    gen_gemma4,
    gen_gptoss,
    gen_qwen3_next,
    gen_qwen3_5,
    gen_nemotron_h,
    gen_deepseek,
    gen_jamba,
    gen_mamba1,
    gen_granite4,
    gen_falcon_h1,
    gen_lfm2,
    gen_zamba2,
    gen_kimi_linear,
    gen_mamba2,
]

# ---- newer families: reachable only through --family (the default case lists stay as recorded)

ARCH_CONFIGS = HERE / "data" / "architectures"


def _arch_config(name: str) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads((ARCH_CONFIGS / f"{name}.json").read_text())
    return cfg


def _sparse_mla(rng: random.Random, cfg: dict[str, Any]) -> None:
    """The MLA + lightning-indexer geometry shared by DeepSeek-V3.2 and GLM-5."""
    cfg["kv_lora_rank"] = _pick(rng, [512, 512, 256])
    cfg["q_lora_rank"] = _pick(rng, [None, 256, 1536], [1, 4, 4])  # null: vLLM refuses (the indexer needs it)
    cfg["qk_rope_head_dim"] = _pick(rng, [64, 64, 32])
    cfg["index_head_dim"] = _pick(rng, [64, 128, 128])
    cfg["index_n_heads"] = _pick(rng, [4, 8, 16, 64])
    cfg["index_topk"] = _pick(rng, [256, 512, 2048])
    heads = _pick(rng, [8, 16, 32])
    cfg["num_attention_heads"] = heads
    cfg["num_key_value_heads"] = heads
    cfg["first_k_dense_replace"] = _pick(rng, [0, 1, 1, 3])
    cfg["num_nextn_predict_layers"] = _pick(rng, [0, 1, 1])
    cfg["torch_dtype"] = _pick(rng, ["bfloat16", "float16"], [9, 1])


def gen_deepseek_v32(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """DeepSeek-V3.2: sparse MLA with the indexer's own K cache."""
    cfg = _arch_config("DeepseekV32ForCausalLM")
    cfg["num_hidden_layers"] = rng.randint(1, 5)
    _sparse_mla(rng, cfg)
    if rng.random() < 0.3:
        cfg["max_position_embeddings"] = _pick(rng, [32768, 131072])
        cfg.pop("rope_scaling", None)
    return "deepseek-v32", cfg


def gen_glm_moe_dsa(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """GLM-5 (glm_moe_dsa): DeepSeek-V3.2's sparse MLA, indexer shared every index_topk_freq layers."""
    cfg = _arch_config("GlmMoeDsaForCausalLM")
    cfg["num_hidden_layers"] = rng.randint(1, 7)
    _sparse_mla(rng, cfg)
    if rng.random() < 0.8:
        cfg["index_topk_freq"] = _pick(rng, [1, 2, 3, 4])
    else:
        cfg.pop("index_topk_freq", None)
    cfg["qk_nope_head_dim"], cfg["v_head_dim"] = _pick(rng, [(192, 256), (128, 128), (192, 128)])
    cfg["max_position_embeddings"] = _pick(rng, [65536, 202752, 8192])
    return "glm-moe-dsa", cfg


def gen_minimax_m2(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """MiniMax-M2: GQA with partial rotary and per-layer QK norm over a MoE."""
    cfg = _arch_config("MiniMaxM2ForCausalLM")
    n_heads, n_kv = _heads(rng)
    head_dim = _pick(rng, [64, 128])
    cfg.update(
        num_hidden_layers=rng.randint(1, 6),
        num_attention_heads=n_heads,
        num_key_value_heads=n_kv,
        head_dim=head_dim,
        hidden_size=_pick(rng, [512, 1024, 3072]),
        rotary_dim=_pick(rng, [head_dim // 2, head_dim, 32]),
        max_position_embeddings=_pick(rng, [16384, 196608]),
        num_local_experts=_pick(rng, [8, 16]),
    )
    if rng.random() < 0.2:
        cfg["sliding_window"] = _pick(rng, [None, 4096])
    return "minimax-m2", cfg  # (its quantized MoE needs CUTLASS kernels the CPU oracle lacks)


def gen_olmo3(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """Olmo3: sliding-window layers beside full-attention layers (layer_types or its default pattern)."""
    cfg = _arch_config("Olmo3ForCausalLM")
    n_heads, n_kv = _heads(rng)
    n = rng.randint(1, 8)
    cfg.update(
        num_hidden_layers=n,
        num_attention_heads=n_heads,
        num_key_value_heads=n_kv,
        hidden_size=n_heads * _pick(rng, [64, 128]),
        sliding_window=_pick(rng, [256, 1024, 4096]),
        max_position_embeddings=_pick(rng, [4096, 65536]),
    )
    r = rng.random()
    if r < 0.6:
        cfg["layer_types"] = [_pick(rng, ["sliding_attention", "full_attention"], [3, 1]) for _ in range(n)]
    elif r < 0.8:
        cfg.pop("layer_types")  # the config's own default pattern
    else:
        cfg["layer_types"] = ["sliding_attention"] * n
    return "olmo3" + _quant(rng, cfg), cfg


def gen_llama4(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """Llama-4 text: chunked local attention on the RoPE layers, global attention on the NoPE ones."""
    cfg = _arch_config("Llama4ForCausalLM")
    n_heads, n_kv = _heads(rng)
    n = rng.randint(1, 6)
    cfg.update(
        num_hidden_layers=n,
        num_attention_heads=n_heads,
        num_key_value_heads=n_kv,
        head_dim=_pick(rng, [64, 128]),
        hidden_size=n_heads * 64,
        interleave_moe_layer_step=_pick(rng, [1, 2]),
        attention_chunk_size=_pick(rng, [256, 1024, 8192, None], [2, 3, 2, 1]),
        max_position_embeddings=_pick(rng, [8192, 262144, 1048576]),
    )
    r = rng.random()
    if r < 0.7:
        cfg["no_rope_layers"] = [_pick(rng, [1, 0], [3, 1]) for _ in range(n)]
    elif r < 0.85:
        cfg.pop("no_rope_layers")  # derived from no_rope_layer_interval
        cfg["no_rope_layer_interval"] = _pick(rng, [2, 4])
    else:
        cfg.pop("no_rope_layers")  # the config class's default
    return "llama4-text", cfg


def gen_step3p5(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """Step-3.5: full and sliding layers with their own head counts (attention_other_setting)."""
    cfg = _arch_config("Step3p5ForCausalLM")
    n = rng.randint(2, 6)
    nextn = _pick(rng, [0, 1, 1])
    kinds = [_pick(rng, ["sliding_attention", "full_attention"], [3, 1]) for _ in range(n + nextn)]
    groups = _pick(rng, [1, 2, 4])
    other_groups = _pick(rng, [1, 2, 4])
    cfg.update(
        num_hidden_layers=n,
        num_nextn_predict_layers=nextn,
        layer_types=kinds,
        num_attention_heads=_pick(rng, [8, 16]),
        num_attention_groups=groups,
        head_dim=_pick(rng, [64, 128]),
        sliding_window=_pick(rng, [256, 512, 4096]),
        moe_layers_enum=",".join(str(i) for i in range(1, n)),
    )
    cfg["attention_other_setting"] = {
        "attention_type": "sliding_attention",
        "num_attention_heads": _pick(rng, [8, 12, 16]),
        "num_attention_groups": other_groups,
        "head_dim": _pick(rng, [64, 128]),
    }
    return "step3p5", cfg


def gen_bailing_v25(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """Bailing-V2.5 (bailing_hybrid): linear-attention layers with an MLA layer closing each
    ``layer_group_size`` group."""
    cfg = _arch_config("BailingMoeV2_5ForCausalLM")
    heads = _pick(rng, [8, 16, 32])
    cfg.update(
        num_hidden_layers=rng.randint(1, 9),
        layer_group_size=_pick(rng, [1, 2, 3, 4, 8]),
        num_attention_heads=heads,
        num_key_value_heads=heads,
        head_dim=_pick(rng, [64, 128]),
        kv_lora_rank=_pick(rng, [512, 512, 256]),
        q_lora_rank=_pick(rng, [None, 1536]),
        qk_rope_head_dim=_pick(rng, [64, 64, 32]),
        first_k_dense_replace=_pick(rng, [0, 1, 2]),
        max_position_embeddings=_pick(rng, [8192, 131072]),
    )
    if rng.random() < 0.4:
        cfg["num_nextn_predict_layers"] = _pick(rng, [0, 1])
    return "bailing-v25", cfg


#: Generators of the newer families: drawn only when --family names them (``generate_cases``).
NEW_GENERATORS = [
    gen_deepseek_v32,
    gen_glm_moe_dsa,
    gen_minimax_m2,
    gen_olmo3,
    gen_llama4,
    gen_step3p5,
    gen_bailing_v25,
]


#: Architectures (prefixes) whose cases also vary the mamba flags (Mamba2: by "Mamba"). The recorded
#: architecture sweeps' flag sets are drawn with this tuple: a new prefix changes them (the newer
#: generators' families add theirs through :data:`NEW_HYBRID_FAMILIES` / :data:`NEW_MTP_FAMILIES`).
HYBRID_PREFIXES = ("GraniteMoeHybrid", "FalconH1", "Lfm2", "Zamba2", "KimiLinear")
#: newer generators' families (``--family`` only) whose cases vary the mamba flags and draw DFlash
NEW_HYBRID_FAMILIES = ("bailing-v25",)
#: newer generators' families whose MTP layers (``num_nextn_predict_layers``) may draft
NEW_MTP_FAMILIES = ("glm-moe-dsa", "bailing-v25")

SHIPPED = {
    "Qwen3-Next-80B-A3B-Thinking": "shipped:qwen3-next",
    "Qwen3.5-27B": "shipped:qwen3.5",
    "Qwen3.5-397B-A17B": "shipped:qwen3.5-moe",
    "Nemotron-H-56B-Base-8K": "shipped:nemotron-h",
    "gpt-oss-20b": "shipped:gpt-oss",
}


def _dflash_drafter(rng: random.Random, target_layers: int) -> dict[str, Any]:
    n = rng.randint(1, 5)
    return {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "num_hidden_layers": n,
        "layer_types": [_pick(rng, ["sliding_attention", "full_attention"], [3, 1]) for _ in range(n)],
        "use_sliding_window": True,
        "sliding_window": _pick(rng, [512, 2048]),
        "hidden_size": 2048,
        "intermediate_size": 2048,
        "num_attention_heads": 16,
        "num_key_value_heads": _pick(rng, [4, 8]),
        "head_dim": 128,
        "vocab_size": 4096,
        "block_size": 16,
        "num_target_layers": target_layers,
        "target_layer_ids": sorted(rng.sample(range(target_layers), min(n, target_layers))),
        "dflash_config": {"mask_token_id": 3},
        "torch_dtype": "bfloat16",
    }


def _flags(rng: random.Random, family: str, cfg: dict[str, Any], workdir: Path, shipped: bool) -> list[str]:
    text = cfg.get("text_config") or cfg
    arch = (cfg.get("architectures") or [""])[0]
    hybrid = arch.startswith(("Qwen3Next", "Qwen3_5", "NemotronH", "Jamba", "Mamba", *HYBRID_PREFIXES)) or (
        family.startswith(NEW_HYBRID_FAMILIES)
    )
    mpe = text.get("max_position_embeddings")
    argv: list[str] = []

    # max model length: mostly within the model's own maximum (above it vLLM refuses at once)
    lengths = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144]
    fitting = [n for n in lengths if mpe is None or n <= mpe] or lengths[:1]
    r = rng.random()
    if r < 0.12:
        argv += ["--max-model-len", "-1"]
    elif r < 0.16 and mpe:
        argv += ["--max-model-len", str(mpe * 2)]  # above the derived maximum: vLLM refuses
    elif r < 0.24 and mpe:
        argv += ["--max-model-len", str(mpe)]
    elif r < 0.3:
        human = {"2k": 2000, "4K": 4096, "8k": 8000, "32k": 32000}
        argv += ["--max-model-len", _pick(rng, [h for h, n in human.items() if mpe is None or n <= mpe] or ["2k"])]
    elif r < 0.93:
        argv += ["--max-model-len", str(_pick(rng, fitting if rng.random() < 0.9 else lengths))]
    # (else: no --max-model-len: the model's own)

    # KV budget, tiny to large
    exp = rng.uniform(5.5, 7.5) if rng.random() < 0.12 else rng.uniform(8.0, 11.2)
    budget = int(10**exp)
    if rng.random() < 0.1:
        argv += ["--kv-cache-memory-bytes", _pick(rng, ["1G", "4G", "20g", "40G", "500m"])]
    else:
        argv += ["--kv-cache-memory-bytes", str(budget)]

    if rng.random() < 0.55:
        argv += ["--max-num-batched-tokens", str(_pick(rng, [1024, 2048, 4096, 8192, 16384]))]
    if rng.random() < 0.1:
        argv += ["--max-num-seqs", str(_pick(rng, [8, 64, 256, 1024]))]
    tp = _pick(rng, [1, 2, 4, 8], [5, 2, 2, 1])
    if tp != 1:
        argv += [_pick(rng, ["--tensor-parallel-size", "-tp"]), str(tp)]
    if rng.random() < 0.08:
        argv += [_pick(rng, ["--pipeline-parallel-size", "-pp"]), str(_pick(rng, [2, 3, 4]))]
    if rng.random() < 0.04:
        argv += [_pick(rng, ["--data-parallel-size", "-dp"]), str(_pick(rng, [2, 4]))]
    kvd = _pick(
        rng,
        [
            None,
            "auto",
            "fp8",
            "bfloat16",
            "fp8_e5m2",
            "fp8_e4m3",
            "float16",
            "int8_per_token_head",
            "fp8_per_token_head",
            "int4_per_token_head",
            "nvfp4",
            "nvfp4_4over6",
        ],
        [10, 2, 5, 2, 1, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.2],
    )
    if kvd:
        argv += ["--kv-cache-dtype", kvd]
    if rng.random() < 0.25:
        argv += ["--block-size", str(_pick(rng, [16, 32, 64, 128, 256]))]
    r = rng.random()
    if r < 0.2:
        argv += ["--enable-prefix-caching"]
    elif r < 0.4:
        argv += ["--no-enable-prefix-caching"]
    if hybrid and rng.random() < 0.35:
        argv += ["--mamba-cache-mode", _pick(rng, ["none", "align", "all"])]
    if hybrid and rng.random() < 0.1:
        argv += ["--mamba-ssm-cache-dtype", _pick(rng, ["float32", "bfloat16", "auto"])]
    r = rng.random()
    if r < 0.1:
        argv += ["--async-scheduling"]
    elif r < 0.2:
        argv += ["--no-async-scheduling"]
    if rng.random() < 0.08:
        argv += ["--num-gpu-blocks-override", str(_pick(rng, [16, 64, 500, 4096]))]
    if rng.random() < 0.05:
        argv += ["--attention-backend", _pick(rng, ["FLASH_ATTN", "TRITON_ATTN", "FLASHINFER", "FLEX_ATTENTION"])]
    if rng.random() < 0.04:
        argv += ["--dtype", _pick(rng, ["bfloat16", "float16"])]

    # speculative decoding
    if rng.random() < 0.3:
        k = rng.randint(1, 8)
        methods = ["ngram"]
        if arch.startswith(("Qwen3Next", "Qwen3_5")) or (
            (arch.startswith("DeepseekV3") or family.startswith(NEW_MTP_FAMILIES))
            and text.get("num_nextn_predict_layers")
        ):
            methods += ["mtp", "mtp"]
        if arch.startswith(("Qwen3_5", *HYBRID_PREFIXES)) or family.startswith(
            ("qwen3", "llama", *NEW_HYBRID_FAMILIES)
        ):
            methods += ["dflash", "dflash"]
        if shipped and arch.startswith("Qwen3_5"):
            methods += ["eagle"]
        methods += ["extract_hidden_states"]
        method = _pick(rng, methods)
        spec: dict[str, Any] = {"method": method, "num_speculative_tokens": k}
        if method == "extract_hidden_states":
            # one cache layer of the chosen hidden states; vLLM asserts exactly 1 token
            n = int(text.get("num_hidden_layers", 4))
            ids = sorted(rng.sample(range(n), k=min(n, rng.randint(1, 4))))
            spec["num_speculative_tokens"] = 1 if rng.random() < 0.85 else k
            if rng.random() < 0.92:
                spec["draft_model_config"] = {"hf_config": {"eagle_aux_hidden_state_layer_ids": ids}}
            if rng.random() < 0.04:
                spec["disable_padded_drafter_batch"] = True
        if method == "dflash":
            if shipped and rng.random() < 0.5:
                spec["model"] = materialize_file(workdir, EXAMPLES / "dflash2-drafter-sw5.config.json")
            else:
                spec["model"] = _write_config(
                    workdir, "dflash-drafter", _dflash_drafter(rng, int(text.get("num_hidden_layers", 4)))
                )
        elif method == "eagle":
            spec["model"] = materialize_file(workdir, EXAMPLES / "dflash2-drafter-sw5.config.json")
        if method == "ngram" and rng.random() < 0.1:
            spec["prompt_lookup_max"] = 4  # a vLLM key dryboot may not know
        argv += ["--speculative-config", _spec(spec)]
    return argv


def generate_cases(n: int, seed: int, workdir: Path, families: list[str] | None = None) -> list[Case]:
    """``n`` deterministic cases: case ``i`` depends only on (seed, i). ``families`` restricts
    the cases to the generators whose name contains one of them (no shipped configs)."""
    cases = []
    shipped_names = sorted(SHIPPED)
    generators = GENERATORS
    if families:
        generators = [g for g in GENERATORS if any(fam in g.__name__ for fam in families)]
        # a newer family only by a name no original generator matches (--family llama keeps its cases)
        generators += [
            g
            for g in NEW_GENERATORS
            if any(fam in g.__name__ and not any(fam in o.__name__ for o in GENERATORS) for fam in families)
        ]
        if not generators:
            raise SystemExit(f"no generator matches --family {families}")
    for i in range(n):
        rng = random.Random(f"dryboot-e2e:{seed}:{i}")
        if rng.random() < 0.3 and not families:
            name = _pick(rng, shipped_names)
            path = EXAMPLES / f"{name}.config.json"
            cfg = json.loads(path.read_text())
            family = SHIPPED[name]
            model = materialize_file(workdir, path)
            argv = _flags(rng, family, cfg, workdir, shipped=True)
            source = f"examples/models/{path.name}"
        else:
            gen = _pick(rng, generators)
            family, cfg = gen(rng)
            model = _with_tokenizer(_write_config(workdir, family.split("[")[0].split("+")[0], cfg), cfg)
            argv = _flags(rng, family, cfg, workdir, shipped=False)
            source = gen.__name__
        env: dict[str, str] = {}
        pp = next((int(argv[j + 1]) for j, a in enumerate(argv) if a in ("-pp", "--pipeline-parallel-size")), 1)
        text = cfg.get("text_config") or cfg
        layers = text.get("num_hidden_layers")
        if pp > 1 and isinstance(layers, int) and layers >= pp and rng.random() < 0.3:
            # an explicit split: a random composition of the layers into pp stages
            cuts = sorted(rng.sample(range(1, layers), pp - 1))
            bounds = zip([0, *cuts], [*cuts, layers], strict=True)
            env["VLLM_PP_LAYER_PARTITION"] = ",".join(str(b - a) for a, b in bounds)
        cases.append(Case(id=f"s{seed}-{i}", family=family, model=model, argv=argv, source=source, env=env))
    return cases


# --------------------------------------------------------------------------- running the tools


def run_dryboot(case: Case, vllm_version: str | None = None) -> dict[str, Any]:
    """``dryboot plan ... --json`` in-process (click's CliRunner on dryboot's group)."""
    from click.testing import CliRunner

    from dryboot.cli import cli
    from dryboot.errors import InputError

    runner = CliRunner()
    res = runner.invoke(cli, case.dryboot_argv(vllm_version), catch_exceptions=True, env=case.env or None)
    out: dict[str, Any] = {"rc": res.exit_code}
    if isinstance(res.exception, InputError):
        out.update(rc=2, refused=True, error=f"dryboot: error: {res.exception.line()}")
        return out
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        out.update(rc=-1, refused=True, error=f"crash: {type(res.exception).__name__}: {res.exception}")
        return out
    if res.exit_code == 2:
        stderr = getattr(res, "stderr", "") or res.output
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        out.update(refused=True, error=lines[-1] if lines else "exit 2")
        return out
    try:
        doc = json.loads(res.stdout if hasattr(res, "stdout") else res.output)
    except ValueError:
        out.update(rc=-1, refused=True, error=f"unparseable output: {res.output[:300]}")
        return out
    errors = doc.get("errors") or {}
    grouping = doc.get("grouping") or {}
    # vLLM's scheduler keeps pipeline stage 0's projection of the groups (its layers only)
    stage0 = set(doc["pipeline_stages"][0]) if doc.get("pipeline_stages") else None
    cap = doc.get("capacity") or {}
    out.update(
        refused=bool(errors.get("unify") or errors.get("memory")),
        error=errors.get("unify") or errors.get("memory"),
        block_size=doc.get("block_size"),
        max_model_len=doc.get("max_model_len"),
        groups=[
            [
                KIND_TO_VLLM.get(g["kind"], g["kind"]),
                g["block_size"],
                g["page_size_bytes"],
                len(g["layer_names"]) if stage0 is None else len(stage0.intersection(g["layer_names"])),
            ]
            for g in grouping.get("groups") or []
        ],
        num_blocks=cap.get("num_blocks"),
        tokens=cap.get("kv_cache_size_tokens"),
        concurrency=cap.get("max_concurrency"),
        log=doc.get("log") or [],
        attention_backend=doc.get("attention_backend"),
        # why "vLLM would log" is empty (e.g. the weights do not load on the named GPU)
        log_note=doc.get("log_note"),
    )
    return out


def _feed(proc: subprocess.Popen[str], todo: list[dict[str, Any]]) -> None:
    try:
        assert proc.stdin is not None
        for c in todo:
            proc.stdin.write(json.dumps(c) + "\n")
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass


def _read(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.put(line)
    lines.put(None)


class OracleRunner:
    """Runs ``src/dryboot/boot/engine_start.py`` over cases in ``jobs`` processes; a process that dies or hangs on a
    case is replaced and that case reported as a crash/timeout."""

    def __init__(
        self,
        python: str,
        jobs: int = 1,
        case_timeout: float = 300.0,
        recycle: int = 1000,
        oracle_argv: list[str] | None = None,
    ) -> None:
        """``oracle_argv``: the script and its arguments run by ``python`` instead of the oracle
        itself (``tests/data/gpus/run_oracle_as.py GPU``: the oracle answering as another GPU)."""
        self.python = python
        self.oracle_argv = oracle_argv or [str(ORACLE)]
        self.jobs = max(1, jobs)
        self.case_timeout = case_timeout
        self.recycle = max(1, recycle)
        self.meta: list[dict[str, Any]] = []

    def _run_chunk(self, cases: list[dict[str, Any]], results: dict[str, dict[str, Any]]) -> None:
        pending = list(cases)
        while pending:
            # A fresh process every ``recycle`` cases bounds the memory vLLM keeps per case.
            batch = pending[: self.recycle]
            remaining = {c["id"] for c in batch}
            proc = subprocess.Popen(
                [self.python, *self.oracle_argv],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            lines: queue.Queue[str | None] = queue.Queue()
            threading.Thread(target=_feed, args=(proc, batch), daemon=True).start()
            threading.Thread(target=_read, args=(proc, lines), daemon=True).start()
            timeout = self.case_timeout + 120  # the first case also pays vLLM's import
            while remaining:
                try:
                    line = lines.get(timeout=timeout)
                except queue.Empty:
                    line = "TIMEOUT"
                timeout = self.case_timeout
                if line is None or line == "TIMEOUT":
                    # the case being run is the first of the batch without a result
                    c = next(c for c in batch if c["id"] in remaining)
                    why = "timeout" if line == "TIMEOUT" else f"oracle process exited ({proc.poll()})"
                    results[c["id"]] = {"id": c["id"], "ok": False, "stage": "crash", "error": f"OracleCrash: {why}"}
                    proc.kill()
                    proc.wait()
                    break
                doc = json.loads(line)
                if "meta" in doc:
                    self.meta.append(doc["meta"])
                    continue
                results[doc["id"]] = doc
                remaining.discard(doc["id"])
            else:
                try:  # the meta line
                    while (line := lines.get(timeout=60)) is not None:
                        doc = json.loads(line)
                        if "meta" in doc:
                            self.meta.append(doc["meta"])
                except queue.Empty:
                    pass
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:  # all results are in: a slow teardown is no failure
                    proc.kill()
                    proc.wait()
            pending = [c for c in pending if c["id"] not in results]

    def run(self, cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        results: dict[str, dict[str, Any]] = {}
        chunks = [cases[i :: self.jobs] for i in range(self.jobs)]
        threads = [threading.Thread(target=self._run_chunk, args=(ch, results)) for ch in chunks if ch]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results


# --------------------------------------------------------------------------- comparing


_REASONS = [
    (
        "parse",
        r"SystemExit|unrecognized arguments|invalid choice|No such option|no such option|Invalid value|"
        r"unknown key|unknown option",
    ),
    (
        "memory",
        r"To serve at least one request|Cannot auto-fit|No available memory|not enough .*memory|"
        r"KV cache is needed",
    ),
    ("max-model-len", r"max_model_len|max-model-len|derived max"),
    ("backend", r"backend"),
    ("async-scheduling", r"async scheduling|async-scheduling"),
    ("tensor-parallel", r"divisible|tensor parallel|tensor-parallel|num_groups|n_groups"),
    ("speculative", r"[Ss]peculative|drafter|draft model|DFlash|dflash|EAGLE|eagle|MTP|mtp"),
    ("page-size", r"page size|NotImplementedError|unif"),
    ("block-size", r"block.size"),
    ("sliding-window", r"[Ss]liding window|max_window_layers"),
    ("dtype", r"dtype|Bfloat16|float16"),
]


def reason_kind(message: str | None) -> str:
    if not message:
        return "none"
    for kind, pattern in _REASONS:
        if re.search(pattern, message):
            return kind
    return "other"


def vllm_refusal(error: str | None) -> tuple[str, str]:
    """vLLM's refusal as (exception type, message): ``"ValueError: X"`` -> ``("ValueError", "X")``;
    a pydantic ``N validation error for C\\n  Value error, X [type=...`` gives X itself."""
    m = re.match(r"([A-Za-z_][\w.]*): ?(.*)", error or "", re.S)
    kind, message = (m.group(1), m.group(2)) if m else ("", error or "")
    inner = re.search(r"Value error, (.*?)(?: \[type=|$)", message, re.S)
    return kind, (inner.group(1) if inner else message).strip()


def _key_phrase(message: str, words: int = 4) -> str | None:
    """The first ``words`` words of vLLM's message as a pattern (figures and paths may differ)."""
    found = message.split()[:words]
    if len(found) < min(words, 2):
        return None
    return r"\s+".join(r"\S+" if re.search(r"\d|/", w) else re.escape(w) for w in found)


#: The same refusal in dryboot's own words: (vLLM's exception types, a key phrase of vLLM's message,
#: what dryboot's line says, the check both make). Each is one check of vLLM's that dryboot words
#: otherwise (vLLM's message is a bare ``assert`` or names internals dryboot states in the user's terms).
SAME_REFUSAL: list[tuple[tuple[str, ...], str, str, str]] = [
    (
        ("KeyError",),
        r"^'factor'$",
        r"rotary as deepseek_yarn and fails on one without YaRN \(KeyError: 'factor'\)",
        "0.27.1 builds a DeepSeek EAGLE-3 head's rotary as deepseek_yarn, which reads rope_scaling['factor']",
    ),
    (
        ("AssertionError",),
        r"^$",
        r"(?i:assert)|not divisible by tensor parallel size|larger than the common page|sizes the hybrid attention "
        r"block to its mamba|greater than the number of experts|proposes exactly 1 token",
        "a bare assert of vLLM's, which dryboot's line names (its condition, or 'vLLM asserts')",
    ),
    (
        ("ValueError",),
        r"extract_hidden_states requires num_speculative_tokens to be 1",
        r"extract_hidden_states proposes exactly 1 token",
        "extract_hidden_states drafts exactly one token",
    ),
    (
        ("ValueError",),
        r"Selected backend AttentionBackendEnum\.(\w+) is not valid for",
        r"is an MLA model; pick a matching backend",
        "a non-MLA --attention-backend on an MLA model",
    ),
    (
        ("AssertionError", "ZeroDivisionError"),
        r"group_size must be greater than 0|integer division or modulo by zero",
        r"pipeline stage \d+ holds no KV cache layer|a ratio-\d+ layer stores block / \d+",
        "an empty KV cache group (a pipeline stage without KV layers, a compressed layer's zero block): vLLM "
        "asserts its size, or divides by it (0.32+)",
    ),
    (
        ("ValueError",),
        r"cannot express this model's mixed page sizes \(\[\]\)",
        r"pipeline stage \d+ holds no KV cache layer",
        "a pipeline stage without KV layers: from 0.30 vLLM's layout check sees no page at all (an empty set is "
        "not one size) before the empty group is asserted",
    ),
    (
        ("RuntimeError", "AssertionError"),
        r"No \w+(?: layers?)? found\s+in (?:the )?model(?:\.layers)?",
        r"finds no MoE layer",
        "a pipeline stage holding only dense layers of an MoE model",
    ),
    (
        ("SystemExit",),
        r"invalid choice",
        r"invalid choice",
        "a flag value vLLM's argument parser does not offer",
    ),
    (
        ("ValueError",),
        r"mask_token_id",
        r"mask_token_id",
        "a DFlash drafter without its mask token (vLLM's words change between releases)",
    ),
    (
        ("ValueError",),
        r"FLASHINFER_MLA_SPARSE is not a DeepSeek V4 attention",
        r"FLASHINFER_MLA_SPARSE",
        "FlashInfer's sparse MLA backend for DeepSeek-V4",
    ),
    (
        ("ValueError", "IndexError"),
        r"No valid attention backend found|list index out of range",
        r"No valid attention backend found|serves an fp8_e4m3 cache on a sparse MLA model",
        "no attention backend for the layer (vLLM 0.33's selector indexes its empty list of candidates)",
    ),
    (
        ("ValidationError",),
        r"contains custom code which must be executed",
        r"Transformers does not recognize this",
        "a model_type Transformers does not know (vLLM asks for trust_remote_code)",
    ),
]

#: Documented exceptions: both refuse the input, for different checks, because dryboot runs a check in
#: another order than vLLM (or first refuses by name what it does not model). (vLLM's exception types,
#: a key phrase of vLLM's message, what dryboot's line says, why). Nothing else counts as agreement.
OTHER_ORDER: list[tuple[tuple[str, ...], str, str, str]] = [
    (
        (),
        r"",
        r"is not modelled by dryboot|is not verified|is not modelled$|whose cache layout dryboot does not model|"
        r"KV capacity on SM [\d.x]+ under vLLM [\d.]+ is not modelled",
        "dryboot refuses by name what it does not model before any check of vLLM's (exact or refused)",
    ),
    (
        ("ValidationError",),
        r"User-specified max_model_len \(\d+\) is greater than the derived|max_model_len must be a positive "
        r"integer|does not support float16",
        r"World size \(\d+\) is larger|eagle_aux_hidden_state_layer_ids must be set|total number of attention "
        r"heads|async scheduling is only supported|hidden_size wide|is not divisible by tensor parallel size|"
        r"extract_hidden_states proposes exactly|vision tower splits its heads|User-specified max_model_len|"
        r"No valid MLA prefill backend found|"
        r"does not divide num_groups",
        "vLLM's ModelConfig checks max_model_len and the dtype first; dryboot checks the parallel and "
        "speculative configuration, the model's layers and attention backends (and the length before the "
        "dtype) first",
    ),
    (
        ("ValidationError",),
        r"World size \(\d+\) is larger than the number of available GPUs",
        r"No valid MLA prefill backend found",
        "vLLM's ParallelConfig checks the world size before the model; dryboot checks the model's MLA "
        "prefill backend first",
    ),
    (
        ("ValidationError",),
        r"Total number of attention heads \(\d+\) must be divisible by tensor parallel size",
        r"Qwen4Exp speculative decoding supports only its native MTP checkpoint",
        "vLLM's SpeculativeConfig checks the heads against TP before Qwen4-Exp's config hook refuses the "
        "drafter's method; dryboot refuses the method first",
    ),
    (
        ("ValueError", "AssertionError"),
        r"eagle_aux_hidden_state_layer_ids must be set|^$",
        r"is not divisible by tensor parallel size",
        "vLLM builds the drafter before the target's towers; dryboot checks the target's heads first",
    ),
    (
        ("NotImplementedError",),
        r"Pipeline parallelism is not supported for this model",
        r"eagle_aux_hidden_state_layer_ids must be set|disable_padded_drafter_batch is not supported|"
        r"extract_hidden_states proposes exactly|Selected backend AttentionBackendEnum",
        "vLLM refuses pipeline parallelism when it builds the model; dryboot checks the speculative and "
        "backend flags first",
    ),
    (
        ("AttributeError",),
        r"'ExtractHiddenStatesConfig' object has no attribute",
        r"hidden_size: missing|eagle_aux_hidden_state_layer_ids must be set",
        "a drafter config lacking a field: vLLM fails reading it, dryboot names the field",
    ),
    (
        ("SystemExit",),
        r"invalid choice",
        r"disable_padded_drafter_batch is not supported",
        "vLLM parses every flag first; dryboot checks the speculative config while reading flags",
    ),
    (
        ("StrictDataclassClassValidationError",),
        r"validate_rope",
        r"is not a multiple of the \d+ attention heads",
        "Transformers validates the rope settings before vLLM's head check",
    ),
    (
        ("ValidationError",),
        r"nvfp4 KV cache is not supported with MLA",
        r"No valid attention backend found|is an MLA model; pick a matching backend",
        "vLLM's CacheConfig refuses nvfp4 on MLA; dryboot finds no backend for that cache first",
    ),
    (
        ("ValueError",),
        r"To serve at least one request .*available KV cache memory \(0\.0 GiB\)",
        r"No available memory for the cache blocks",
        "a budget at zero: vLLM's available memory is a few bytes above it, dryboot's estimate at or below",
    ),
]


def _table_match(table: list[tuple[tuple[str, ...], str, str, str]], kind: str, message: str, line: str) -> str | None:
    for kinds, v_phrase, d_phrase, why in table:
        if (not kinds or kind in kinds) and re.search(v_phrase, message) and re.search(d_phrase, line):
            return why
    return None


def same_refusal(v_error: str | None, d_error: str | None) -> str | None:
    """Why vLLM's refusal and dryboot's are the same refusal, or ``None``: dryboot's line carries
    the key phrase of vLLM's message (its first words), or :data:`SAME_REFUSAL` pairs them."""
    kind, message = vllm_refusal(v_error)
    line = d_error or ""
    phrase = _key_phrase(message)
    if phrase is not None and re.search(phrase, line, re.I):
        return f"{kind}: dryboot says vLLM's words"
    # transformers' strict config classes wrap a validator's error ("Class validation error for
    # validator 'validate_architecture':\n    ValueError: X", 0.33.0): X is vLLM's words
    wrapped = re.search(r"Class validation error for validator '\w+':\s*\w+: (.*)", message, re.S)
    inner = _key_phrase(wrapped.group(1)) if wrapped else None
    if inner is not None and re.search(inner, line, re.I):
        return f"{kind}: dryboot says the validator's words"
    return _table_match(SAME_REFUSAL, kind, message, line)


def is_crash(d: dict[str, Any]) -> bool:
    """dryboot's answer is a crash (a traceback's exception, or output that is not its JSON)."""
    return d.get("rc") == -1 or str(d.get("error") or "").startswith(("crash:", "unparseable output"))


def compare(v: dict[str, Any], d: dict[str, Any]) -> dict[str, Any]:
    """Verdict for one case: agree, and the differing fields.

    A crash on dryboot's side never agrees. When both refuse, they agree only on the same refusal
    (:func:`same_refusal`) or on a documented exception (:data:`OTHER_ORDER`); ``diffs["refusal"]``
    holds both messages otherwise."""
    if is_crash(d):
        return {"agree": False, "both_refuse": False, "diffs": {"crash": [v.get("error"), d.get("error")]}}
    v_ref = not v.get("ok")
    d_ref = bool(d.get("refused"))
    if v_ref or d_ref:
        if v_ref and d_ref:
            same = same_refusal(v.get("error"), d.get("error"))
            kind, message = vllm_refusal(v.get("error"))
            exception = None if same else _table_match(OTHER_ORDER, kind, message, d.get("error") or "")
            agree = bool(same or exception)
            return {
                "agree": agree,
                "both_refuse": True,
                "reasons_match": same is not None,
                "same_refusal": same,
                "exception": exception,
                "diffs": {} if agree else {"refusal": [v.get("error"), d.get("error")]},
            }
        return {
            "agree": False,
            "both_refuse": False,
            "diffs": {"refusal": [v.get("error") if v_ref else None, d.get("error") if d_ref else None]},
        }
    diffs: dict[str, list[Any]] = {}
    if v.get("block_size") != d.get("block_size"):
        diffs["block_size"] = [v.get("block_size"), d.get("block_size")]
    if sorted(map(tuple, v.get("groups") or [])) != sorted(map(tuple, d.get("groups") or [])):
        diffs["groups"] = [v.get("groups"), d.get("groups")]
    for f in ("num_blocks", "tokens", "max_model_len"):
        if v.get(f) != d.get(f):
            diffs[f] = [v.get(f), d.get(f)]
    vc, dc = v.get("concurrency"), d.get("concurrency")
    if vc is None or dc is None or round(float(vc), 2) != round(float(dc), 2):
        diffs["concurrency"] = [vc, dc]
    return {"agree": not diffs, "both_refuse": False, "diffs": diffs}


def _answer(r: dict[str, Any], vllm: bool) -> str:
    refused = (not r.get("ok")) if vllm else r.get("refused")
    if refused:
        stage = f"[{r.get('stage')}] " if vllm else ""
        return f"refuses {stage}{str(r.get('error'))[:300]}"
    conc = r.get("concurrency")
    conc_s = f"{conc:.2f}" if isinstance(conc, (int, float)) else str(conc)
    return (
        f"block={r.get('block_size')} groups={sorted(map(tuple, r.get('groups') or []))} "
        f"num_blocks={r.get('num_blocks')} tokens={r.get('tokens')} conc={conc_s} "
        f"max_model_len={r.get('max_model_len')}"
    )


def signature(case: Case, verdict: dict[str, Any]) -> str:
    """A coarse grouping key for triage: family + which fields differ (+ who refuses)."""
    diffs = verdict["diffs"]
    if "refusal" in diffs:
        v_err, d_err = diffs["refusal"]
        who = "both-refuse-differently" if v_err and d_err else "vllm-refuses" if v_err else "dryboot-refuses"
        return f"{case.family.split('[')[0]}: {who}: {reason_kind(v_err or d_err)}"
    return f"{case.family.split('[')[0]}: " + ",".join(sorted(diffs))


@dataclass
class Report:
    rows: list[dict[str, Any]] = field(default_factory=list)
    oracle_meta: list[dict[str, Any]] = field(default_factory=list)
    wall_seconds: float = 0.0
    vllm_version: str | None = None

    @property
    def total(self) -> int:
        return len(self.rows)

    @property
    def agreed(self) -> int:
        return sum(1 for r in self.rows if r["verdict"]["agree"])

    def rate(self) -> float:
        return self.agreed / self.total if self.total else 1.0

    def family_table(self) -> list[tuple[str, int, int, int, int]]:
        fam: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for r in self.rows:
            f = fam[r["family"]]
            f[0] += 1
            f[1] += r["verdict"]["agree"]
            f[2] += r["verdict"].get("both_refuse", False)
            f[3] += r["verdict"].get("both_refuse", False) and r["verdict"].get("reasons_match", False)
        return [(k, n, agree, both, same) for k, (n, agree, both, same) in sorted(fam.items())]

    def format(self, max_disagreements: int | None = None) -> str:
        out = [
            f"end-to-end fidelity (vLLM {self.vllm_version or '?'}): {self.agreed}/{self.total} cases agree "
            f"({100 * self.rate():.2f}%)",
            "",
            f"{'family':34} {'cases':>6} {'agree':>6} {'%':>7} {'both refuse':>12} {'same reason':>12}",
        ]
        for fam, n, agree, both, same in self.family_table():
            out.append(f"{fam:34} {n:6d} {agree:6d} {100 * agree / n:6.1f}% {both:12d} {same:12d}")
        sigs = Counter(r["signature"] for r in self.rows if not r["verdict"]["agree"])
        if sigs:
            out += ["", "disagreement signatures (family: differing fields | who refuses: reason):"]
            out += [f"  {n:5d}  {s}" for s, n in sigs.most_common()]
        dis = [r for r in self.rows if not r["verdict"]["agree"]]
        if dis:
            out += ["", f"disagreements ({len(dis)}):"]
            for r in dis[:max_disagreements]:
                out += [
                    f"- [{r['id']} {r['family']}] {r['command']}",
                    f"    vLLM:    {r['vllm_answer']}",
                    f"    dryboot: {r['dryboot_answer']}",
                ]
            if max_disagreements is not None and len(dis) > max_disagreements:
                out.append(f"  ... {len(dis) - max_disagreements} more in the report file")
        secs = [r["oracle_seconds"] for r in self.rows if r.get("oracle_seconds") is not None]
        if secs:
            secs.sort()
            out += [
                "",
                f"oracle time per case: mean {sum(secs) / len(secs):.3f} s, median {secs[len(secs) // 2]:.3f} s, "
                f"max {secs[-1]:.3f} s; wall {self.wall_seconds:.0f} s for {self.total} cases",
            ]
        return "\n".join(out)

    def to_json(self) -> dict[str, Any]:
        return {
            "vllm_version": self.vllm_version,
            "total": self.total,
            "agreed": self.agreed,
            "rate": self.rate(),
            "families": [
                {"family": f, "cases": n, "agree": a, "both_refuse": b, "same_reason": s}
                for f, n, a, b, s in self.family_table()
            ],
            "signatures": Counter(r["signature"] for r in self.rows if not r["verdict"]["agree"]).most_common(),
            "oracle_meta": self.oracle_meta,
            "wall_seconds": self.wall_seconds,
            "disagreements": [r for r in self.rows if not r["verdict"]["agree"]],
            "agreements": [
                {k: r[k] for k in ("id", "family", "command", "verdict")} for r in self.rows if r["verdict"]["agree"]
            ],
        }


def run_harness(
    cases: list[Case],
    python: str,
    jobs: int = 1,
    vllm_version: str | None = None,
    oracle_results: Path | None = None,
) -> Report:
    """Both tools over ``cases``. dryboot gets ``--vllm-version vllm_version``; by default the
    version the oracle reports (the release installed in ``python``'s venv)."""
    t0 = time.perf_counter()
    oracle = OracleRunner(python, jobs=jobs)
    if oracle_results is not None and oracle_results.exists():
        # re-compare dryboot against a saved oracle run (same cases: same --cases/--seed)
        saved = json.loads(oracle_results.read_text())
        vres, oracle.meta = saved["results"], saved["meta"]
    else:
        vres = oracle.run([c.oracle_input() for c in cases])
        if oracle_results is not None:
            oracle_results.write_text(json.dumps({"meta": oracle.meta, "results": vres}, default=str))
    if vllm_version is None:
        vllm_version = next((m["vllm_version"] for m in oracle.meta if m.get("vllm_version")), None)
    rep = Report(oracle_meta=oracle.meta, vllm_version=vllm_version)
    for c in cases:
        v = vres.get(c.id) or {"ok": False, "stage": "crash", "error": "OracleCrash: no result"}
        d = run_dryboot(c, vllm_version)
        verdict = compare(v, d)
        row = {
            "id": c.id,
            "family": c.family,
            "source": c.source,
            "command": c.command(vllm_version),
            "oracle_case": c.oracle_input(),
            "verdict": verdict,
            "vllm_answer": _answer(v, vllm=True),
            "dryboot_answer": _answer(d, vllm=False),
            "vllm": {k: v.get(k) for k in ("ok", "stage", "error", *COMPARED, "kv_log")},
            "dryboot": {k: d.get(k) for k in ("rc", "refused", "error", *COMPARED, "log")},
            "oracle_seconds": v.get("seconds"),
        }
        row["signature"] = signature(c, verdict) if not verdict["agree"] else ""
        rep.rows.append(row)
    rep.wall_seconds = time.perf_counter() - t0
    return rep


def default_workdir() -> Path:
    return Path(os.environ.get("DRYBOOT_E2E_WORKDIR") or (REPO / ".e2e-work"))


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=int(os.environ.get("DRYBOOT_E2E_CASES", "300")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("DRYBOOT_E2E_SEED", "0")))
    ap.add_argument("--jobs", type=int, default=oracle_jobs())
    ap.add_argument("--report", default=os.environ.get("DRYBOOT_E2E_REPORT") or str(REPO / ".e2e-report.json"))
    ap.add_argument("--python", default=os.environ.get("DRYBOOT_VLLM_PYTHON"))
    ap.add_argument("--show", type=int, default=50, help="disagreements to print (all are in the report)")
    ap.add_argument(
        "--vllm-version",
        default=os.environ.get("DRYBOOT_E2E_VLLM_VERSION"),
        help="passed to dryboot as --vllm-version (default: the release the oracle's venv reports)",
    )
    ap.add_argument(
        "--oracle-results",
        help="JSON file: saved after the oracle runs; when it exists, the oracle is not run again",
    )
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        help="keep only the generated cases whose family or flags contain this text (repeatable: any)",
    )
    ap.add_argument(
        "--family",
        action="append",
        help="only generated cases whose generator name contains this (gen_granite4: granite); repeatable",
    )
    args = ap.parse_args(argv)
    if not args.python:
        ap.error("give --python or set DRYBOOT_VLLM_PYTHON (bash scripts/fidelity-env.sh)")
    cases = generate_cases(args.cases, args.seed, default_workdir(), args.family)
    if args.only:
        cases = [c for c in cases if any(t in c.family or any(t in a for a in c.argv) for t in args.only)]
    rep = run_harness(
        cases,
        args.python,
        jobs=args.jobs,
        vllm_version=args.vllm_version,
        oracle_results=Path(args.oracle_results) if args.oracle_results else None,
    )
    Path(args.report).write_text(json.dumps(rep.to_json(), indent=1, default=str))
    print(rep.format(max_disagreements=args.show))
    print(f"\nreport: {args.report}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    sys.exit(main())
