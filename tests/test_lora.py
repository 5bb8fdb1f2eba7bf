"""``--enable-lora``: the LoRA stacks and punica buffers vLLM 0.28.0 allocates per rank while
loading (``dryboot.vllm.lora.model_manager``), checked against vLLM's own ``LoRAModelManager``
built on the meta device (``tests/fidelity/record_lora.py`` -> ``data/lora/recorded-0.28.0.json``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.vllm.lora.model_manager import LoRAConfig, LoRARefused, lora_tensors

FIDELITY = Path(__file__).resolve().parent / "fidelity" / "data"
RECORDED = json.loads((FIDELITY / "lora" / "recorded-0.28.0.json").read_text())
#: every release's recording (``recorded-<version>.json``), its cases keyed by (version, case id)
RELEASES = {
    (doc["vllm"], cid): row
    for doc in (json.loads(p.read_text()) for p in sorted((FIDELITY / "lora").glob("recorded-*.json")))
    for cid, row in doc["cases"].items()
}
QWEN3_8B = Path(__file__).resolve().parent / "data" / "configs" / "public" / "Qwen--Qwen3-8B"
MiB = 1 << 20


def _blocks(n: int) -> int:
    return -(-n // 512) * 512


BUILT = sorted(k for k, r in RELEASES.items() if r["ok"])
#: cases vLLM's LoRA layers do not build on the meta device (FusedMoEWithLoRA)
UNBUILT = sorted(k for k, r in RELEASES.items() if not r["ok"])


def test_every_recorded_case_builds() -> None:
    assert not UNBUILT, UNBUILT


def test_moe_lora_under_expert_parallelism_is_refused() -> None:
    config = json.loads((FIDELITY / "architectures" / "MixtralForCausalLM.json").read_text())
    with pytest.raises(LoRARefused, match="expert parallelism"):
        lora_tensors(config, LoRAConfig(), expert_parallel=True, max_num_batched_tokens=2048, max_num_seqs=256)


@pytest.mark.parametrize("key", BUILT, ids=[f"{v} {c}" for v, c in BUILT])
def test_lora_bytes_match_vllm_on_the_meta_device(key: tuple[str, str]) -> None:
    version, _ = key
    row = RELEASES[key]
    config = json.loads((FIDELITY / "architectures" / f"{row['config']}.json").read_text())
    argv = row["argv"]
    flag = {k: v for k, v in zip(argv, [*argv[1:], ""], strict=True) if k.startswith("--")}
    lc = LoRAConfig(
        max_loras=int(flag["--max-loras"]),
        max_lora_rank=int(flag["--max-lora-rank"]),
        fully_sharded_loras="--fully-sharded-loras" in argv,
    )
    tensors = lora_tensors(
        config,
        lc,
        tp=int(flag["--tensor-parallel-size"]),
        model_dtype_bytes=2,  # the tiny configs are bfloat16
        max_num_batched_tokens=row["max_num_batched_tokens"],
        max_num_seqs=row["max_num_seqs"],
        vllm_version=version,
    )
    assert len(tensors) == row["tensors"]
    assert sum(_blocks(t.nbytes) for t in tensors) == row["lora_allocated_bytes"]
    assert sorted(list(t.shape) for t in tensors) == sorted(s for s, _ in row["shapes"])


def test_recorded_cases_cover_tp_ranks_and_slots() -> None:
    argvs = [" ".join(r["argv"]) for r in RECORDED["cases"].values()]
    assert RECORDED["vllm"] == "0.28.0"
    assert {r["config"] for r in RECORDED["cases"].values() if r["ok"]} == {
        "LlamaForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen3ForCausalLM",
        "MistralForCausalLM",
        "Phi3ForCausalLM",
        "Gemma2ForCausalLM",
        "Gemma3ForCausalLM",
        "Qwen3MoeForCausalLM",
        "MixtralForCausalLM",
        "Qwen2MoeForCausalLM",
    }
    for part in ("--tensor-parallel-size 1", "--tensor-parallel-size 2", "--max-lora-rank 8", "--max-lora-rank 64"):
        assert any(part in a for a in argvs)
    assert any("--fully-sharded-loras" in a for a in argvs)


def _qwen3() -> dict[str, object]:
    return dict(json.loads((QWEN3_8B / "config.json").read_text()))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"architectures": ["Glm4ForCausalLM"]}, "not modelled for Glm4ForCausalLM"),
        ({"tie_word_embeddings": True}, "tied embeddings"),
        ({"quantization_config": {"quant_method": "fp8"}}, "quantized"),
    ],
)
def test_unchecked_models_are_refused_by_name(change: dict[str, object], words: str) -> None:
    config = {**_qwen3(), **change}
    with pytest.raises(LoRARefused, match=words):
        lora_tensors(config, LoRAConfig(), max_num_batched_tokens=2048, max_num_seqs=256)


def test_pipeline_parallel_and_other_releases_refused() -> None:
    with pytest.raises(LoRARefused, match="pipeline"):
        lora_tensors(_qwen3(), LoRAConfig(), pp=2, max_num_batched_tokens=2048, max_num_seqs=256)
    with pytest.raises(LoRARefused, match=r"0\.29\.0"):
        lora_tensors(_qwen3(), LoRAConfig(), max_num_batched_tokens=2048, max_num_seqs=256, vllm_version="0.29.0")


@pytest.mark.parametrize(
    ("lc", "flag"),
    [
        (LoRAConfig(max_lora_rank=48), "--max-lora-rank"),
        (LoRAConfig(max_loras=0), "--max-loras"),
        (LoRAConfig(max_loras=4, max_cpu_loras=2), "--max-cpu-loras"),
    ],
)
def test_flags_vllm_rejects_are_input_errors(lc: LoRAConfig, flag: str) -> None:
    with pytest.raises(InputError) as e:
        lora_tensors(_qwen3(), lc, max_num_batched_tokens=2048, max_num_seqs=256)
    assert e.value.line().startswith(flag)


def _segment(n: int) -> int:
    """The allocator's 2 MiB segment a tensor of 20 MiB or more holds while vLLM loads."""
    return -(-n // (2 * MiB)) * 2 * MiB if n >= 20 * MiB else _blocks(n)


def test_plan_prints_the_lora_bytes_on_an_rtx_4090() -> None:
    # hand-computed from vLLM 0.28.0's create_lora_weights shapes: Qwen3-8B (H 4096, I 12288,
    # 32 x 128 query heads, 8 KV heads, vocab 151936, 36 layers, bf16), 4 slots of rank 64;
    # the RTX 4090's defaults: 2048 batched tokens, 256 sequences
    slots, r, b = 4, 64, 2
    per_layer = (
        3 * slots * r * 4096 * b  # qkv_proj A, three slices
        + slots * (4096 + 1024 + 1024) * r * b  # qkv_proj B
        + slots * r * 4096 * b
        + slots * 4096 * r * b  # o_proj
        + 2 * slots * r * 4096 * b
        + 2 * slots * 12288 * r * b  # gate_up_proj
        + slots * r * 12288 * b
        + slots * 4096 * r * b  # down_proj
    )
    vocab_stack = slots * 151936 * r * b  # 74.2 MiB: embed_tokens A, lm_head B
    embeddings = 2 * _segment(vocab_stack) + 2 * slots * 4096 * r * b
    punica = 3 * 2048 * 8 + 2 * 2048 * 8 + 3 * 256 * 8 + 2 * (2 * 2048 * 4 + 3 * 512)
    want = 36 * per_layer + embeddings + punica
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "dryboot",
            "plan",
            "--model",
            str(QWEN3_8B),
            "--gpu",
            "RTX 4090",
            "--enable-lora",
            "--max-loras",
            "4",
            "--max-lora-rank",
            "64",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    text = " ".join(r.stdout.split())
    assert f"of which LoRA (--max-loras 4 x --max-lora-rank 64): {want:,} bytes" in text, r.stderr


def test_plan_refuses_lora_over_an_unmodelled_family_by_name(tmp_path: Path) -> None:
    config = {**_qwen3(), "tie_word_embeddings": True}
    (tmp_path / "config.json").write_text(json.dumps(config))
    r = subprocess.run(
        [sys.executable, "-m", "dryboot", "plan", "--model", str(tmp_path), "--gpu", "RTX 4090", "--enable-lora"],
        capture_output=True,
        text=True,
        check=False,
    )
    text = " ".join(r.stdout.split())
    assert "Weights: not given (--enable-lora: LoRA over tied embeddings (Qwen3ForCausalLM)" in text
    assert r.returncode == 3


def test_serve_command_line_lora_flags_reach_the_weights() -> None:
    common = [sys.executable, "-m", "dryboot", "plan", "--json", "--model", str(QWEN3_8B), "--gpu", "RTX 4090"]

    def weights(*more: str) -> object:
        r = subprocess.run([*common, *more], capture_output=True, text=True, check=False)
        return json.loads(r.stdout[r.stdout.find("{") :])["weights"]

    native = weights("--enable-lora", "--max-loras", "4", "--max-lora-rank", "64")
    served = weights("--serve", "vllm serve x --enable-lora --max-loras 4 --max-lora-rank 64")
    assert native == served
    assert native["stages"][0]["lora_bytes"] > 0  # type: ignore[index]
    assert weights()["stages"][0]["lora_bytes"] == 0  # type: ignore[index]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ARCHS = sorted({r["config"] for r in RELEASES.values()})
_FIELDS = (
    "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
    "num_hidden_layers", "num_experts", "num_local_experts", "moe_intermediate_size",
    "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers", "tie_word_embeddings",
)  # fmt: skip
_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 1 << 12), st.text(max_size=3), st.lists(st.integers(0, 4), max_size=3)
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    arch=st.sampled_from(_ARCHS),
    changes=st.dictionaries(st.sampled_from(_FIELDS), _VALUES, max_size=4),
    tp=st.sampled_from([1, 2, 3]),
    fully_sharded=st.booleans(),
)
def test_hostile_configs_give_tensors_or_one_input_error(
    arch: str, changes: dict, tp: int, fully_sharded: bool
) -> None:
    # a malformed or unusual config: LoRA's tensors (all non-negative) or one InputError, never a crash
    config = {**json.loads((FIDELITY / "architectures" / f"{arch}.json").read_text()), **changes}
    lc = LoRAConfig(max_loras=2, max_lora_rank=8, fully_sharded_loras=fully_sharded)
    try:
        tensors = lora_tensors(config, lc, tp=tp, max_num_batched_tokens=64, max_num_seqs=4)
    except InputError:
        return
    assert all(t.nbytes >= 0 for t in tensors)
