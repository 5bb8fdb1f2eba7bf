"""dryboot against vLLM 0.28.0's own planner, on many generated configurations.

Each generated configuration is a Hugging Face config (a Qwen3-Next-style Gated DeltaNet hybrid,
a Nemotron-H-style Mamba2 hybrid, a sliding-window + full-attention model, or a full-attention
model) plus vLLM engine flags and a KV budget. dryboot plans it; the oracle
(``vllm_oracle.py``, run in the fidelity venv) builds the same engine from the same config with
vLLM's own code: the model class computes the mamba state, ``Platform`` aligns the hybrid block,
the backends customize the specs, and ``get_kv_cache_configs`` unifies, groups and sizes the
cache. Every figure dryboot reports is compared with vLLM's.

Skipped unless ``DRYBOOT_VLLM_PYTHON`` points at the fidelity venv's python
(``bash scripts/fidelity-env.sh``). ``DRYBOOT_FIDELITY_CASES`` sets the number of
configurations (default 400), ``DRYBOOT_FIDELITY_SEED`` the generator seed (default 0).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from dryboot.errors import InputError
from dryboot.planner.plan import Drafter, Plan, plan
from dryboot.vllm.config.hf import LayerKind
from dryboot.vllm.config.resolve import resolve_async_scheduling
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import MambaSpec
from dryboot.vllm.transformers_utils.config import geometry_from_config
from dryboot.vllm.versions import rules_for

pytestmark = pytest.mark.fidelity

GIB = 1 << 30
NUM_CASES = int(os.environ.get("DRYBOOT_FIDELITY_CASES", "400"))
SEED = int(os.environ.get("DRYBOOT_FIDELITY_SEED", "0"))


@dataclass
class Generated:
    """One configuration: the HF config, the architecture, dryboot's flags, the budget."""

    id: str
    family: str
    architecture: str
    hf: dict[str, Any]
    args: EngineArgs
    available: int
    drafter: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def dryboot_drafter(self) -> Drafter | None:
        if self.drafter is None:
            return None
        d = self.drafter
        return Drafter(geometry_from_config(d["hf"], f"{self.id}-drafter"), "draft_model", d["kv"], d["backend"])

    def plan(self) -> Plan:
        return plan(geometry_from_config(self.hf, self.id), self.args, drafter=self.dryboot_drafter())


def _heads_dims(rng: random.Random) -> tuple[int, int]:
    return rng.choice([1, 2, 4, 8]), rng.choice([64, 128, 256])


def _gdn(rng: random.Random, i: int) -> tuple[str, dict[str, Any]]:
    layers = rng.choice([8, 12, 16, 24, 48])
    kv_heads, head_dim = _heads_dims(rng)
    nk = rng.choice([4, 8, 16])
    return "Qwen3NextForCausalLM", {
        "architectures": ["Qwen3NextForCausalLM"],
        "model_type": "qwen3_next",
        "num_hidden_layers": layers,
        "full_attention_interval": rng.choice([2, 3, 4]),
        "num_attention_heads": 16,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "hidden_size": 2048,
        "linear_num_key_heads": nk,
        "linear_num_value_heads": nk * rng.choice([1, 2, 3]),
        "linear_key_head_dim": rng.choice([64, 128]),
        "linear_value_head_dim": rng.choice([64, 128]),
        "linear_conv_kernel_dim": 4,
        "max_position_embeddings": 262144,
        "torch_dtype": "bfloat16",
    }


def _mamba2(rng: random.Random, i: int) -> tuple[str, dict[str, Any]]:
    layers = rng.choice([8, 12, 20])
    pattern = "".join(rng.choice("MM*-") for _ in range(layers))
    if "*" not in pattern:
        pattern = "*" + pattern[1:]
    if "M" not in pattern:
        pattern = pattern[:-1] + "M"
    kv_heads, head_dim = rng.choice([2, 4, 8]), 128
    return "NemotronHForCausalLM", {
        "architectures": ["NemotronHForCausalLM"],
        "model_type": "nemotron_h",
        "num_hidden_layers": layers,
        "hybrid_override_pattern": pattern,
        "num_attention_heads": 32,
        "num_key_value_heads": kv_heads,
        "attention_head_dim": head_dim,
        "head_dim": head_dim,
        "hidden_size": 4096,
        "mamba_num_heads": rng.choice([32, 64, 128]),
        "mamba_head_dim": 64,
        "n_groups": rng.choice([1, 2, 8]),
        "ssm_state_size": rng.choice([64, 128]),
        "conv_kernel": 4,
        "expand": 2,
        "chunk_size": 128,
        "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16",
    }


def _sliding(rng: random.Random, i: int) -> tuple[str, dict[str, Any]]:
    layers = rng.choice([6, 12, 24, 36])
    period = rng.choice([2, 4, 6])
    kv_heads, head_dim = _heads_dims(rng)
    return "TestSlidingForCausalLM", {
        "architectures": ["TestSlidingForCausalLM"],
        "num_hidden_layers": layers,
        "layer_types": ["full_attention" if j % period == period - 1 else "sliding_attention" for j in range(layers)],
        "sliding_window": rng.choice([128, 512, 1024, 4096]),
        "num_attention_heads": 32,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16",
    }


def _full(rng: random.Random, i: int) -> tuple[str, dict[str, Any]]:
    kv_heads, head_dim = _heads_dims(rng)
    return "TestFullForCausalLM", {
        "architectures": ["TestFullForCausalLM"],
        "num_hidden_layers": rng.choice([4, 16, 32]),
        "num_attention_heads": 32,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16",
    }


FAMILIES = {"gdn": _gdn, "mamba2": _mamba2, "sliding": _sliding, "full": _full}


def generate(n: int, seed: int) -> list[Generated]:
    """``n`` configurations, the same for the same seed."""
    rng = random.Random(seed)
    out: list[Generated] = []
    families = list(FAMILIES)
    i = 0
    while len(out) < n:
        family = families[i % len(families)]
        arch, hf = FAMILIES[family](rng, i)
        i += 1
        kv = rng.choice(["auto", "auto", "fp8", "int8_per_token_head", "fp8_per_token_head"])
        backend = (
            "TRITON_ATTN"
            if kv.endswith("per_token_head")
            else rng.choice(["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "CPU_ATTN"])
        )
        hybrid = family in ("gdn", "mamba2")
        max_len = rng.choice([4096, 32768, 131072])
        args = EngineArgs(
            tensor_parallel_size=rng.choice([1, 1, 2]),
            kv_cache_dtype=kv,
            attention_backend=backend,
            block_size=rng.choice([None, None, 16, 32, 64]),
            mamba_ssm_cache_dtype=rng.choice(["auto", "float32", "float16"]) if hybrid else "auto",
            max_model_len=max_len,
            max_num_batched_tokens=rng.choice([2048, 8192]),
            enable_prefix_caching=rng.random() < 0.7,
            async_scheduling=rng.random() < 0.6,
            kv_cache_memory_bytes=int(GIB * 2 ** rng.uniform(-4, 6)),
            num_speculative_tokens=rng.choice([0, 0, 1, 3, 7]) if hybrid else 0,
        )
        drafter = None
        if hybrid and rng.random() < 0.5:
            d_layers = rng.choice([1, 2, 5])
            sliding = rng.random() < 0.7
            d_kv = rng.choice(["auto", "auto", "int8_per_token_head"])
            d_backend = "TRITON_ATTN" if d_kv != "auto" else rng.choice(["FLASH_ATTN", "TRITON_ATTN", "CPU_ATTN"])
            d_hf: dict[str, Any] = {
                "architectures": ["DraftModel"],
                "num_hidden_layers": d_layers,
                "layer_types": ["sliding_attention" if sliding else "full_attention"] * d_layers,
                "num_attention_heads": 32,
                "num_key_value_heads": rng.choice([2, 4, 8]),
                "head_dim": 128,
                "torch_dtype": "bfloat16",
                "max_position_embeddings": 262144,
            }
            if sliding:
                d_hf["sliding_window"] = rng.choice([512, 2048])
            drafter = {"hf": d_hf, "kv": d_kv, "backend": d_backend}
        gen = Generated(f"{family}-{i}", family, arch, hf, args, args.kv_cache_memory_bytes or 0, drafter)
        try:
            gen.plan()
        except InputError:
            continue  # e.g. a TP size the heads do not split across; vLLM refuses those too
        out.append(gen)
    return out


def oracle_case(gen: Generated) -> dict[str, Any]:
    """The same engine, described for vLLM: layer kinds and HF numbers, not dryboot's specs."""
    model = geometry_from_config(gen.hf, gen.id)
    a = gen.args
    layers: dict[str, dict[str, Any]] = {}
    for idx, kind in enumerate(model.layer_kinds):
        name = model.layer_name(idx)
        if kind is LayerKind.NONE:
            continue
        if kind.is_mamba:
            layers[name] = {"type": "mamba", "mamba_type": "GDN_ATTN" if kind is LayerKind.GDN else "MAMBA2"}
            continue
        spec: dict[str, Any] = {
            "type": "sliding" if kind is LayerKind.SLIDING else "full",
            "backend": a.attention_backend,
            "total_num_kv_heads": model.num_kv_heads,
            "head_size": model.head_dim,
            "dtype": "bfloat16",
            "kv_cache_dtype": a.kv_cache_dtype,
        }
        if kind is LayerKind.SLIDING:
            spec["sliding_window"] = model.sliding_window
        layers[name] = spec
    config: dict[str, Any] = {
        "max_model_len": a.max_model_len,
        "max_num_batched_tokens": a.max_num_batched_tokens,
        "async_scheduling": resolve_async_scheduling(a, rules_for(a.vllm_version))[0],
        "enable_prefix_caching": a.enable_prefix_caching is not False,  # None: vLLM's default, on
        "kv_cache_dtype": a.kv_cache_dtype,
        "mamba_ssm_cache_dtype": a.mamba_ssm_cache_dtype,
        "tensor_parallel_size": a.tensor_parallel_size,
        "num_speculative_tokens": a.num_speculative_tokens,
    }
    if a.block_size is not None:
        config["block_size"] = a.block_size
    if gen.drafter is not None:
        d = gen.drafter
        d_model = geometry_from_config(d["hf"], f"{gen.id}-drafter")
        for idx, kind in enumerate(d_model.layer_kinds):
            spec = {
                "type": "sliding" if kind is LayerKind.SLIDING else "full",
                "backend": d["backend"],
                "total_num_kv_heads": d_model.num_kv_heads,
                "head_size": d_model.head_dim,
                "dtype": "bfloat16",
                "kv_cache_dtype": d["kv"],
            }
            if kind is LayerKind.SLIDING:
                spec["sliding_window"] = d_model.sliding_window
            layers[f"drafter.layers.{idx}"] = spec
    case: dict[str, Any] = {"id": gen.id, "config": config, "layers": layers, "available_memory": gen.available}
    if model.is_hybrid:
        case["align"] = {"backend": a.attention_backend, "architecture": gen.architecture, "hf_config": gen.hf}
        if "attention_head_dim" in gen.hf and "head_dim" not in gen.hf:
            # vLLM's arch-config convertor reads Nemotron-H's attention_head_dim
            # (transformers_utils/model_arch_config_convertor.py); the oracle's stand-in reads head_dim
            case["align"]["head_size"] = gen.hf["attention_head_dim"]
        if gen.architecture.startswith("Qwen3_5"):
            # Qwen3.5's model classes need torchvision to import: vLLM's own GDN shape
            # calculator stands in for the class (its config hook still runs)
            text = gen.hf.get("text_config", gen.hf)
            case["align"]["mamba_state"] = {
                "calculator": "gated_delta_net",
                "shape_args": {
                    "num_k_heads": text["linear_num_key_heads"],
                    "num_v_heads": text["linear_num_value_heads"],
                    "head_k_dim": text["linear_key_head_dim"],
                    "head_v_dim": text["linear_value_head_dim"],
                    "conv_kernel_size": text["linear_conv_kernel_dim"],
                },
            }
    return case


def differences(p: Plan, r: dict[str, Any]) -> list[str]:
    """Every figure where dryboot's plan and vLLM's result disagree."""
    diffs: list[str] = []

    def check(what: str, mine: object, theirs: object) -> None:
        if mine != theirs:
            diffs.append(f"{what}: dryboot {mine!r} vs vLLM {theirs!r}")

    if r.get("align") is not None:
        al = r["align"]
        check("attention block", p.block_size, al["block_size"])
        padded = p.block_decision.mamba_page_size_padded if p.block_decision else None
        check("mamba page padded", padded, al["mamba_page_size_padded"])
        check("mamba page", p.mamba_page_size_bytes, al["mamba_page_size"])
        for line in al["log"]:
            if line.startswith(("Setting attention block size", "Padding mamba page size", "Setting kv cache block")):
                check("align log", line in p.log, True)
    specs = {lp.name: lp.initial for lp in p.layers}
    for name, s in (r.get("specs") or {}).items():
        check(f"{name} initial page", specs[name].page_size_bytes, s["page_size_bytes"])
        check(f"{name} initial block", specs[name].block_size, s["block_size"])
    unify_err = r.get("unify_error")
    check("unify error", p.unify_error is not None, unify_err is not None)
    if unify_err is None and p.unify_error is None and r.get("unified"):
        unified = {lp.name: lp.spec for lp in p.layers}
        for name, s in r["unified"].items():
            check(f"{name} unified page", unified[name].page_size_bytes, s["page_size_bytes"])
            check(f"{name} unified block", unified[name].block_size, s["block_size"])
    err = r.get("error")
    memory_error = err is not None and err["type"] == "ValueError" and "max seq len" in err["message"]
    check("not enough memory", p.memory_error is not None, memory_error)
    if memory_error and p.memory_error is not None:
        check("memory error message", str(p.memory_error), err["message"])
    if err is None and p.capacity is not None and r.get("groups") is not None:
        assert p.grouping is not None
        mine = sorted(
            ("mamba" if isinstance(g.spec, MambaSpec) else "attn", tuple(sorted(g.layer_names)))
            for g in p.grouping.groups
        )
        theirs = sorted(
            ("mamba" if g["spec_type"] == "MambaSpec" else "attn", tuple(sorted(g["layer_names"]))) for g in r["groups"]
        )
        check("groups", mine, theirs)
        check("num_blocks", p.capacity.num_blocks, r["num_blocks"])
        check("kv cache tokens", p.capacity.kv_cache_size_tokens, r["kv_cache_size_tokens"])
        check("max concurrency", p.capacity.max_concurrency, r["max_concurrency"])
        check("scheduler block", p.scheduler_block_size, r["scheduler_block_size"])
        check("hash block", p.hash_block_size, r["hash_block_size"])
        padding = [line for line in r["log"] if line.startswith("Add ") and "padding layers" in line]
        check("padding warnings", [line for line in p.log if line.startswith("Add ")], padding)
        gpu_lines = [line for line in r["log"] if line.startswith("GPU KV cache size")]
        check("GPU KV cache size line", [line for line in p.log if line.startswith("GPU KV cache size")], gpu_lines)
    elif err is not None and not memory_error and p.unify_error is None:
        diffs.append(f"vLLM failed where dryboot did not: {err['type']}: {err['message'][:200]}")
    return diffs


def test_dryboot_agrees_with_vllm_on_generated_configurations(vllm_oracle: Any) -> None:
    generated = generate(NUM_CASES, SEED)
    results = {r["id"]: r for r in vllm_oracle([oracle_case(g) for g in generated])}
    disagreements: dict[str, list[str]] = {}
    families: dict[str, int] = {}
    for gen in generated:
        diffs = differences(gen.plan(), results[gen.id])
        if diffs:
            disagreements[gen.id] = diffs
        else:
            families[gen.family] = families.get(gen.family, 0) + 1
    agreed = len(generated) - len(disagreements)
    print(f"\nfidelity: {agreed}/{len(generated)} generated configurations agree with vLLM 0.28.0 ({families})")
    sample = "\n".join(f"{k}: {v[:3]}" for k, v in list(disagreements.items())[:10])
    assert not disagreements, f"{len(disagreements)} of {len(generated)} disagree:\n{sample}"


REAL_FLAGS = [
    {"kv_cache_dtype": "auto", "attention_backend": "FLASH_ATTN"},
    {"kv_cache_dtype": "fp8", "attention_backend": "FLASHINFER", "enable_prefix_caching": False},
    {
        "kv_cache_dtype": "int8_per_token_head",
        "attention_backend": "TRITON_ATTN",
        "num_speculative_tokens": 3,
        "mamba_ssm_cache_dtype": "float16",
        "async_scheduling": False,
    },
    {"kv_cache_dtype": "auto", "attention_backend": "TRITON_ATTN", "tensor_parallel_size": 2, "block_size": 64},
]


def test_real_model_configs_agree(vllm_oracle: Any, models_dir: Any) -> None:
    """The configs shipped in examples/models (Qwen3-Next, Qwen3.5, Nemotron-H, gpt-oss)."""
    import json

    generated = []
    for path in sorted(models_dir.glob("*.config.json")):
        hf = json.loads(path.read_text())
        arch = hf["architectures"][0]
        if arch == "DFlashDraftModel":
            continue
        model = geometry_from_config(hf, path.name)
        for j, flags in enumerate(REAL_FLAGS):
            for budget in (40 * GIB, GIB):
                is_hybrid = model.is_hybrid
                args = EngineArgs(
                    max_model_len=min(model.max_len.max_position_embeddings or 131072, 131072),
                    max_num_batched_tokens=2048,
                    kv_cache_memory_bytes=budget,
                    **{k: v for k, v in flags.items() if is_hybrid or not k.startswith(("mamba", "num_spec"))},
                )
                gen = Generated(f"{path.name}-{j}-{budget}", "real", arch, hf, args, budget)
                try:
                    gen.plan()
                except InputError:
                    continue
                generated.append(gen)
    results = {r["id"]: r for r in vllm_oracle([oracle_case(g) for g in generated])}
    disagreements = {g.id: differences(g.plan(), results[g.id]) for g in generated}
    disagreements = {k: v for k, v in disagreements.items() if v}
    print(f"\nfidelity (real configs): {len(generated) - len(disagreements)}/{len(generated)} agree")
    assert len(generated) >= 30
    assert not disagreements, disagreements
