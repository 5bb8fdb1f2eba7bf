"""The KV budget model (dryboot.vllm.worker, dryboot.planner.budget): terms, interval, verdict,
startup gate, safe pinned pool, and `plan --gpu` with no budget for every verified architecture."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.planner.budget import plan_with_budget, wants_budget
from dryboot.planner.plan import plan
from dryboot.planner.runner import build_engine_args
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import parse_gpu
from dryboot.vllm.model_executor.model_loader.loader import model_weights
from dryboot.vllm.models.registry import architecture_table
from dryboot.vllm.versions import rules_for
from dryboot.vllm.worker.budget import (
    budget_verdict,
    estimate_budget,
    request_memory,
    safe_kv_cache_memory_bytes,
)
from dryboot.vllm.worker.cudagraph import capture_sizes, graph_counts
from dryboot.vllm.worker.interval import GIB
from dryboot.vllm.worker.profile_run import ForwardShape, forward_shape, padded_vocab

REPO = Path(__file__).resolve().parents[1]
QWEN3_8B = REPO / "tests/data/checklog/public/configs/Qwen--Qwen3-8B.config.json"


def _budget(cfg: Path, gpu: str, **flags: str) -> tuple[object, object]:
    model, args = build_engine_args(str(cfg), dict(flags), [])
    g = parse_gpu(gpu)
    args = args.evolve(gpu=g)
    w = model_weights(cfg)
    assert w.refused is None
    b = estimate_budget(
        model,
        args,
        weights_bytes=w.stages[0].allocated_bytes,
        gpu=g,
        rules=rules_for(args.vllm_version),
        shape=forward_shape(json.loads(cfg.read_text())),
    )
    return b, args


def test_requested_is_vllms_ceil() -> None:
    assert request_memory(25426206392, 0.92) == 23392109881  # ceil(25426206392 * 0.92)


def test_capture_sizes_match_the_logged_graph_counts() -> None:
    # LMCache #3430 (0.21, RTX A5000, max_num_seqs 256): "PIECEWISE=51 (largest=512), FULL=35 (largest=256)"
    sizes = capture_sizes(256, 2048, 0, 86)
    assert sizes[-1] == 512
    assert graph_counts(sizes, 256, 0, full=True) == {"PIECEWISE": 51, "FULL": 35}
    assert capture_sizes(1024, 16384, 0, 100)[-1] == 1024  # SM 10.x: up to 1024
    assert capture_sizes(8, 2048, 0, 90)[-1] == 16


def test_budget_terms_add_up_and_bound_the_estimate() -> None:
    b, _ = _budget(QWEN3_8B, "RTX 3090")
    kv = b.available_kv_cache_bytes
    assert kv.low <= kv.estimate <= kv.high
    assert (
        b.requested_bytes
        - b.weights_bytes
        - b.activation_bytes.high
        - b.cuda_graph_bytes.high
        - (b.non_torch_bytes.high)
        == kv.low
    )
    assert b.runner == "V2" and b.cuda_graph_bytes.high == 0  # dense model on 0.28: V2, no estimate
    d = b.to_dict()
    assert set(d) >= {
        "gpu_total_bytes",
        "requested_bytes",
        "weights_bytes",
        "activation_bytes",
        "cuda_graph_bytes",
        "non_torch_bytes",
        "available_kv_cache_bytes",
        "method",
    }
    assert d["available_kv_cache_bytes"] == {"low": kv.low, "estimate": kv.estimate, "high": kv.high}
    assert any(t["name"] == "activation: cold torch.compile" for t in d["terms"])


def test_enforce_eager_and_a_warm_cache_narrow_the_interval() -> None:
    cold, _ = _budget(QWEN3_8B, "RTX 3090", **{"vllm-version": "0.29.0"})
    eager, _ = _budget(QWEN3_8B, "RTX 3090", **{"vllm-version": "0.29.0", "enforce-eager": "true"})
    assert cold.cuda_graph_bytes.high > 0 and eager.cuda_graph_bytes == type(eager.cuda_graph_bytes)(0, 0)
    assert eager.available_kv_cache_bytes.low > cold.available_kv_cache_bytes.low


def test_verdict_three_ways_and_the_gate() -> None:
    b, _ = _budget(QWEN3_8B, "RTX 3090")
    kv = b.available_kv_cache_bytes
    assert budget_verdict(b, kv.low).word == "fits"
    assert budget_verdict(b, kv.low + 1).word == "tight"
    assert budget_verdict(b, kv.high + 1).word == "won't"
    assert b.startup_gate.passes is True
    high, _ = _budget(QWEN3_8B, "RTX 3090", **{"gpu-memory-utilization": "0.99"})
    assert high.startup_gate.passes is False and "Free memory on device" in high.startup_gate.line
    assert budget_verdict(high, 1).word == "won't"


def test_safe_pool_leaves_the_high_bounds_and_the_margin() -> None:
    b, _ = _budget(QWEN3_8B, "RTX 3090")
    safe = safe_kv_cache_memory_bytes(b, GIB // 2)
    # 0.28's V2 runner subtracts no graph estimate, but its graphs still take memory on top
    assert b.cuda_graph_bytes.high == 0 and b.cuda_graph_pool_bytes.high > 0
    assert safe == b.available_kv_cache_bytes.low - GIB // 2 - b.cuda_graph_pool_bytes.high
    v1, _ = _budget(QWEN3_8B, "RTX 3090", **{"vllm-version": "0.29.0"})
    assert safe_kv_cache_memory_bytes(v1, GIB // 2) == v1.available_kv_cache_bytes.low - GIB // 2
    assert safe_kv_cache_memory_bytes(b, 10**15) == 0


def test_a_config_without_vocab_is_refused_naming_the_term() -> None:
    with pytest.raises(InputError, match="vocab_size: activation"):
        forward_shape({"hidden_size": 64}, "x.json")
    model, args = build_engine_args(str(QWEN3_8B), {}, [])
    with pytest.raises(InputError, match="activation"):
        estimate_budget(model, args, weights_bytes=1, gpu=parse_gpu("L4"), rules=rules_for("0.28.0"))


def test_wants_budget_only_with_a_gpu_and_no_budget() -> None:
    g = parse_gpu("L4")
    assert wants_budget(EngineArgs(gpu=g))
    assert wants_budget(EngineArgs(gpu_memory_bytes=24 * GIB))
    assert not wants_budget(EngineArgs())
    assert not wants_budget(EngineArgs(gpu=g, kv_cache_memory_bytes=GIB))
    assert not wants_budget(EngineArgs(gpu=g, non_kv_memory_bytes=GIB))


_SHAPE_KEYS = ["vocab_size", "hidden_size", "intermediate_size", "num_attention_heads", "head_dim", "x"]
#: a text config as published: every key a positive integer (heads dividing the hidden size)
_VALID_SHAPE = st.builds(
    lambda heads, d, vocab, inter: {
        "vocab_size": vocab,
        "hidden_size": heads * d,
        "intermediate_size": inter,
        "num_attention_heads": heads,
        "head_dim": d,
    },
    st.integers(1, 64),
    st.sampled_from([64, 80, 128, 256]),
    st.integers(1, 300_000),
    st.integers(1, 60_000),
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(_SHAPE_KEYS),
        st.one_of(st.integers(-5, 10**6), st.text(max_size=3), st.none(), st.booleans()),
    )
    | _VALID_SHAPE
)
def test_forward_shape_takes_any_mapping(cfg: dict[str, object]) -> None:
    """A shape from what is usable, or the one refusal naming the missing field: a positive integer
    is read as given, anything else (0, negative, text, bool) as absent."""

    def usable(key: str) -> int:
        v = cfg.get(key)
        return v if type(v) is int and v > 0 else 0

    try:
        s = forward_shape(cfg)
    except InputError as e:
        event("refused")
        assert "activation" in str(e)
        assert not usable("vocab_size") or not usable("hidden_size")
        assert e.where == ("vocab_size" if not usable("vocab_size") else "hidden_size")
    else:
        event("shaped")
        assert (s.vocab_size, s.hidden_size) == (usable("vocab_size"), usable("hidden_size"))
        assert padded_vocab(s.vocab_size) % 64 == 0 and padded_vocab(s.vocab_size) >= s.vocab_size
        assert s.intermediate_size == (usable("intermediate_size") or 4 * s.hidden_size)
        heads = usable("num_attention_heads")
        assert s.q_size == heads * (usable("head_dim") or (s.hidden_size // heads if heads else 0))


def _verified() -> list[tuple[str, str]]:
    return [(r.architecture, r.tiny_config) for r in architecture_table() if r.status == "verified" and r.tiny_config]


@pytest.mark.parametrize(("arch", "config"), _verified(), ids=[a for a, _ in _verified()])
def test_every_verified_architecture_gets_tokens_and_a_verdict_or_one_line(arch: str, config: str) -> None:
    path = REPO / config
    try:
        model, args = build_engine_args(str(path), {}, [])
    except InputError as e:  # a drafter-only class: refused as a target before any budget
        assert "\n" not in str(e)
        return
    args = args.evolve(gpu=parse_gpu("H100"))
    w = model_weights(path)
    stage0 = w.stages[0].allocated_bytes if w.stages and not w.refused else None
    try:
        bp = plan_with_budget(
            model, args, config=json.loads(path.read_text()), weights_bytes=stage0, weights_refused=w.refused
        )
    except InputError as e:  # the plan's own refusal of these flags (e.g. DeepSeek-V4 needs an fp8 KV cache)
        with pytest.raises(InputError, match=re.escape(e.reason)):
            plan(model, args)
        return
    if bp.budget is None:
        assert bp.refused and "\n" not in bp.refused
        assert bp.refused.startswith("weights: ") or "activation" in bp.refused
    else:
        assert bp.verdict is not None and bp.verdict.word in ("fits", "tight", "won't")
        if bp.plan.capacity is not None:
            assert bp.tokens[1] == bp.plan.capacity.kv_cache_size_tokens


def test_cli_plan_gpu_without_budget_prints_vllms_lines_and_json() -> None:
    cmd = [sys.executable, "-m", "dryboot", "plan", "--model", str(QWEN3_8B), "--gpu", "RTX 3090"]
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([*cmd, "--max-model-len", "16384"], capture_output=True, text=True, env=env, check=False)
    assert r.returncode == 0, r.stderr
    assert "Model loading took" in r.stdout and "Available KV cache memory:" in r.stdout
    assert "verdict: fits (exit 0)" in r.stdout and "--kv-cache-memory-bytes=" in r.stdout
    j = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env, check=False)
    doc = json.loads(j.stdout)
    assert set(doc["budget"]["available_kv_cache_bytes"]) == {"low", "estimate", "high"}
    assert doc["budget"]["verdict"]["word"] in ("fits", "tight", "won't")


def test_forward_shape_reads_text_config() -> None:
    s = forward_shape({"text_config": {"hidden_size": 64, "vocab_size": 100, "intermediate_size": 128}})
    assert s == ForwardShape(100, 64, 128, q_size=0, kv_size=0)


def test_profiles_take_gpu_and_utilization_instead_of_a_pinned_budget(tmp_path: Path) -> None:
    from dryboot.planner.profiles import load_profiles, run

    (tmp_path / "p.toml").write_text(
        f'[defaults]\nmodel = "{QWEN3_8B}"\ngpu = "RTX 3090"\n\n'
        "[profiles.a]\nmax-model-len = 16384\ngpu-memory-utilization = 0.9\n\n"
        "[profiles.b]\nmax-model-len = 16384\ngpu-memory-utilization = 0.95\n\n"
        "[profiles.pinned]\nmax-model-len = 16384\nkv-cache-memory-bytes = 4000000000\n"
    )
    results = {p.name: pl for p, _, pl in run(load_profiles(tmp_path / "p.toml"))}
    a, b, pinned = results["a"], results["b"], results["pinned"]
    assert a.capacity is not None and b.capacity is not None and pinned.capacity is not None
    assert b.capacity.kv_cache_size_tokens > a.capacity.kv_cache_size_tokens
    assert any(n.startswith("KV budget predicted") and "verdict" in n for n in a.notes)
    assert pinned.capacity.available_bytes == 4000000000
    assert not any(n.startswith("KV budget predicted") for n in pinned.notes)


def test_multimodal_encoder_profiling_is_refused_by_name() -> None:
    from dryboot.vllm.worker.profile_run import activation_terms

    shape = forward_shape({"vision_config": {}, "text_config": {"hidden_size": 64, "vocab_size": 100}})
    assert shape.multimodal == "vision_config"
    with pytest.raises(InputError, match="activation: multimodal encoder profiling: the model has a vision_config"):
        activation_terms(shape, max_num_batched_tokens=2048, max_num_seqs=256, tp=1, compiled=False)


def test_speculative_decoding_widens_the_sampler_term() -> None:
    from dryboot.vllm.worker.profile_run import activation_terms

    shape = forward_shape(json.loads(QWEN3_8B.read_text()))
    kw = {"max_num_batched_tokens": 2048, "max_num_seqs": 256, "tp": 1, "compiled": False}
    plain = activation_terms(shape, **kw)  # type: ignore[arg-type]
    spec = activation_terms(shape, speculative=True, **kw)  # type: ignore[arg-type]
    assert max(t.high for t in spec) > max(t.high for t in plain)


def test_pipeline_stages_each_get_a_budget_and_the_smallest_is_planned() -> None:
    model, args = build_engine_args(str(QWEN3_8B), {"pipeline-parallel-size": "2", "max-model-len": "8192"}, [])
    args = args.evolve(gpu=parse_gpu("RTX 3090"))
    w = model_weights(QWEN3_8B, pp=2)
    stages = tuple(s.allocated_bytes for s in w.stages)
    bp = plan_with_budget(
        model,
        args,
        config=json.loads(QWEN3_8B.read_text()),
        weights_bytes=stages[0],
        stage_weights_bytes=stages,
    )
    assert bp.budget is not None and any("pipeline stages' estimates" in n for n in bp.budget.notes)
    one = plan_with_budget(model, args, config=json.loads(QWEN3_8B.read_text()), weights_bytes=max(stages))
    assert one.budget is not None
    assert bp.budget.available_kv_cache_bytes.estimate <= one.budget.available_kv_cache_bytes.estimate + (1 << 30)


def test_language_model_only_skips_the_encoder() -> None:
    from dryboot.vllm.worker.profile_run import activation_terms

    shape = forward_shape({"vision_config": {}, "text_config": {"hidden_size": 64, "vocab_size": 100}})
    terms = activation_terms(
        shape, max_num_batched_tokens=2048, max_num_seqs=256, tp=1, compiled=False, encoder_profiled=False
    )
    assert terms and all("encoder" not in t.name for t in terms)


def test_reference_wsl_gate_at_0972_is_not_a_pass() -> None:
    # the reference deployment: WSL reported 24.0 GiB total, 22.75 free; util 0.972 requests 23.33 GiB
    b, _ = _budget(QWEN3_8B, "RTX 3090", **{"gpu-memory": "24G", "gpu-memory-utilization": "0.972"})
    assert round(b.requested_bytes / GIB, 2) == 23.33
    assert b.startup_gate.passes is not True
    assert budget_verdict(b, 1).word != "fits"


@settings(max_examples=60, deadline=None)
@given(
    util=st.floats(0.05, 1.0),
    mnbt=st.sampled_from([None, 1, 256, 2048, 8192, 65536]),
    seqs=st.sampled_from([None, 1, 8, 256, 1024]),
    tp=st.sampled_from([1, 2, 4, 8]),
    eager=st.booleans(),
    version=st.sampled_from(["0.27.1", "0.28.0", "0.29.0", "0.31.0", "0.33.0"]),
    gpu=st.sampled_from(["RTX 3090", "L4", "H100", "B200", "sm120:31.4G"]),
    cache=st.sampled_from(["unknown", "warm", "cold"]),
)
def test_any_flags_give_ordered_bounds_or_one_line(
    util: float, mnbt: int | None, seqs: int | None, tp: int, eager: bool, version: str, gpu: str, cache: str
) -> None:
    flags = {"tensor-parallel-size": str(tp), "vllm-version": version, "gpu-memory-utilization": str(util)}
    if mnbt is not None:
        flags["max-num-batched-tokens"] = str(mnbt)
    if seqs is not None:
        flags["max-num-seqs"] = str(seqs)
    if eager:
        flags["enforce-eager"] = "true"
    try:
        model, args = build_engine_args(str(QWEN3_8B), flags, [])
        g = parse_gpu(gpu)
        b = estimate_budget(
            model,
            args.evolve(gpu=g),
            weights_bytes=model_weights(QWEN3_8B, tp=tp).stages[0].allocated_bytes,
            gpu=g,
            rules=rules_for(version),
            shape=forward_shape(json.loads(QWEN3_8B.read_text())),
            compile_cache=cache,
        )
    except InputError as e:
        assert "\n" not in str(e)
        return
    kv = b.available_kv_cache_bytes
    assert kv.low <= kv.estimate <= kv.high
    assert all(t.low <= t.point <= t.high for t in b.terms)
    assert b.requested_bytes - 1 < b.gpu_total_bytes * util <= b.requested_bytes  # vLLM's ceil, not round


def test_bad_compile_cache_is_refused_naming_the_flag() -> None:
    model, args = build_engine_args(str(QWEN3_8B), {}, [])
    with pytest.raises(InputError, match="--compile-cache: hot"):
        estimate_budget(
            model,
            args,
            weights_bytes=1,
            gpu=parse_gpu("L4"),
            rules=rules_for("0.28.0"),
            shape=forward_shape(json.loads(QWEN3_8B.read_text())),
            compile_cache="hot",
        )


def test_cli_refused_budget_is_one_line_and_the_plan_still_prints() -> None:
    arch = REPO / "tests/fidelity/data/architectures/ArceeForCausalLM.json"
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    r = subprocess.run(
        [sys.executable, "-m", "dryboot", "plan", "--model", str(arch), "--gpu", "L4"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert "vLLM would log:" in r.stdout
    if "KV budget: not estimated: weights:" in r.stdout:
        assert r.returncode == 3, r.stderr  # undetermined
    else:
        assert "Available KV cache memory:" in r.stdout and r.returncode in (0, 1, 4), r.stderr


def test_cli_passes_max_num_batched_tokens_to_the_weights(tmp_path: Path) -> None:
    # DeepSeek-V3.2's indexer buffer [max_num_batched_tokens, index_topk] is allocated with the weights
    # (its fp8 blocks after loading on a named GPU are refused for DeepSeek: served here unquantized)
    src = REPO / "tests/fidelity/data/weights/configs/deepseek-ai--DeepSeek-V3.2/config.json"
    config = json.loads(src.read_text())
    config.pop("quantization_config", None)
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(config))
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    # (H200: MLA weights on SM 10.x are refused by name, the MLA prefill backend's workspace)
    cmd = [sys.executable, "-m", "dryboot", "plan", "--model", str(cfg), "--gpu", "H200", "-tp", "8", "--json"]
    doc = json.loads(subprocess.run(cmd, capture_output=True, text=True, env=env, check=False).stdout)
    assert "refused" not in doc["budget"] and doc["budget"]["weights_bytes"] > 0
