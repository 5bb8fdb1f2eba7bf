"""The CUDA-graph term's capture set from ``-O`` and ``--compilation-config`` (vLLM's
``OPTIMIZATION_LEVEL_TO_CONFIG``, ``_set_cudagraph_sizes``) and the V2 runner's estimator of
0.29+ (``v1/worker/gpu/cudagraph_utils.py::profile_cudagraph_memory``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import event, given, settings, target
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.planner.runner import build_engine_args
from dryboot.vllm.config.compilation import compilation_settings, parse_compilation_config
from dryboot.vllm.gpus import parse_gpu
from dryboot.vllm.versions import rules_for
from dryboot.vllm.worker.budget import estimate_budget
from dryboot.vllm.worker.cudagraph import capture_sizes, graph_counts, graph_memory
from dryboot.vllm.worker.interval import MIB
from dryboot.vllm.worker.profile_run import forward_shape

REPO = Path(__file__).resolve().parents[1]
QWEN3_8B = REPO / "tests/data/checklog/public/configs/Qwen--Qwen3-8B.config.json"
QWEN35_27B = REPO / "tests/data/configs/public/Qwen--Qwen3.5-27B/config.json"


def _budget(cfg: Path, gpu: str = "H100", **flags: str) -> object:
    model, args = build_engine_args(str(cfg), dict(flags), [])
    g = parse_gpu(gpu)
    return estimate_budget(
        model,
        args.evolve(gpu=g),
        weights_bytes=16 << 30,
        gpu=g,
        rules=rules_for(args.vllm_version),
        shape=forward_shape(json.loads(cfg.read_text())),
    )


def _term(b: object, prefix: str) -> object:
    return next(t for t in b.terms if t.name.startswith(prefix))  # type: ignore[attr-defined]


def test_levels_and_explicit_mode() -> None:
    assert compilation_settings(0, None).cudagraph_mode == "NONE" and not compilation_settings(0, None).compiled
    assert compilation_settings(1, None).cudagraph_mode == "PIECEWISE"
    assert compilation_settings(2, None).cudagraph_mode == "FULL_AND_PIECEWISE"
    assert compilation_settings(3, None).cudagraph_mode == "FULL_AND_PIECEWISE"
    cc = parse_compilation_config('{"cudagraph_mode": "full_decode_only", "pass_config": {}, "mode": "NONE"}')
    s = compilation_settings(2, cc)
    assert s.cudagraph_mode == "FULL_DECODE_ONLY" and not s.compiled and s.unread == ("pass_config",)
    with pytest.raises(InputError, match="--optimization-level"):
        compilation_settings(4, None)


#: a --compilation-config vLLM accepts: the keys dryboot reads, each with a value of its type, and an unread key
VALID_CC = st.fixed_dictionaries(
    {},
    optional={
        "cudagraph_mode": st.sampled_from(["NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"]).map(
            lambda m: m.lower() if len(m) % 2 else m
        ),
        "cudagraph_capture_sizes": st.lists(st.integers(1, 600), min_size=1, max_size=6),
        "max_cudagraph_capture_size": st.integers(1, 1024),
        "cudagraph_mm_encoder": st.booleans(),
        "mode": st.sampled_from([0, 1, 2, 3, "NONE", "VLLM_COMPILE", "stock_torch_compile"]),
        "pass_config": st.just({"fuse_norm_quant": True}),
    },
)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.text(max_size=30),
        st.dictionaries(
            st.sampled_from(["cudagraph_mode", "cudagraph_capture_sizes", "max_cudagraph_capture_size", "mode", "x"]),
            st.one_of(st.integers(-2, 600), st.text(max_size=6), st.lists(st.integers(-1, 600), max_size=4)),
        ).map(json.dumps),
        VALID_CC.map(json.dumps),
    )
)
def test_compilation_config_parser_gives_settings_or_one_value_error(text: str) -> None:
    try:
        canonical = parse_compilation_config(text)
    except ValueError as e:
        event("refused")
        assert "\n" not in str(e)
        return
    event("parsed")
    data = json.loads(text)
    s = compilation_settings(2, canonical)
    assert s.cudagraph_mode == str(data.get("cudagraph_mode", "FULL_AND_PIECEWISE")).upper()
    if "cudagraph_capture_sizes" in data:
        assert s.capture_sizes == tuple(sorted(set(data["cudagraph_capture_sizes"])))
    else:
        assert s.capture_sizes is None
    assert s.max_capture_size == data.get("max_cudagraph_capture_size")
    assert s.compiled == (str(data.get("mode", 3)).upper() not in ("0", "NONE"))
    assert s.unread == tuple(sorted(k for k in data if k not in ("cudagraph_mode", "cudagraph_capture_sizes",
                                                                  "max_cudagraph_capture_size", "cudagraph_mm_encoder",
                                                                  "mode")))  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(VALID_CC)
def test_every_valid_compilation_config_is_accepted(data: dict[str, object]) -> None:
    """The valid half alone: vLLM accepts each of these, so dryboot must too."""
    target(float(len(data)), label="keys given")
    s = compilation_settings(2, parse_compilation_config(json.dumps(data)))
    assert s.cudagraph_mode in ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")


def test_graph_counts_per_mode() -> None:
    sizes = capture_sizes(128, 8192, 0, 90)
    assert sizes[-1] == 256 and len(sizes) == 35
    assert graph_counts(sizes, 128, 0, mode="FULL_AND_PIECEWISE") == {"PIECEWISE": 35, "FULL": 19}
    assert graph_counts(sizes, 128, 0, mode="FULL") == {"FULL": 35}
    assert graph_counts(sizes, 128, 0, mode="FULL_DECODE_ONLY") == {"FULL": 19}
    assert graph_counts(sizes, 128, 0, mode="PIECEWISE") == {"PIECEWISE": 35}
    assert graph_counts(sizes, 128, 0, mode="NONE") == {}
    assert capture_sizes(128, 8192, 0, 90, given=(8, 4, 4, 9000)) == [4, 8]
    assert capture_sizes(128, 8192, 0, 90, max_capture_size=64)[-1] == 64


def test_v2_estimator_measures_piecewise_without_the_floor() -> None:
    shape = forward_shape(json.loads(QWEN3_8B.read_text()))
    common = {"num_layers": 36, "tp": 1, "max_num_seqs": 256, "max_num_batched_tokens": 8192}
    v1 = graph_memory(shape, **common, num_speculative_tokens=0, sm=90)
    v2 = graph_memory(shape, **common, num_speculative_tokens=0, sm=90, v2=True)
    # 51 PIECEWISE + 51 FULL: V1 floors 50 + 50 later graphs at 1 MiB; V2 floors only FULL's 50,
    # and FULL's first sample, captured after PIECEWISE into its pool, is measured (0-2 MiB)
    assert v1[0] - v2[0] == 50 * MIB and v2[1] - v1[1] == 2 * MIB
    spec = graph_memory(shape, **common, num_speculative_tokens=3, sm=90, v2=True, speculator=True)
    plain = graph_memory(shape, **common, num_speculative_tokens=3, sm=90, v2=True)
    assert spec[0] == plain[0] and spec[1] > plain[1] and "speculator graphs" in spec[2]


def test_o0_drops_graphs_and_the_cold_compile_term() -> None:
    default = _budget(QWEN3_8B, **{"vllm-version": "0.29.0"})
    assert _term(default, "CUDA graphs").high > 0  # type: ignore[attr-defined]
    assert any(t.name == "activation: cold torch.compile" for t in default.terms)  # type: ignore[attr-defined]
    o0 = _budget(QWEN3_8B, **{"vllm-version": "0.29.0", "optimization-level": "0"})
    assert _term(o0, "CUDA graphs").high == 0  # type: ignore[attr-defined]
    assert not any(t.name == "activation: cold torch.compile" for t in o0.terms)  # type: ignore[attr-defined]
    few = _budget(QWEN3_8B, **{"vllm-version": "0.29.0", "compilation-config": '{"cudagraph_capture_sizes": [1, 2]}'})
    assert _term(few, "CUDA graphs").high < _term(default, "CUDA graphs").high  # type: ignore[attr-defined]
    noted = _budget(QWEN3_8B, **{"compilation-config": '{"pass_config": {"fuse_norm_quant": true}}'})
    assert any("not read by the budget: pass_config" in n for n in noted.notes)  # type: ignore[attr-defined]


def test_encoder_graphs_refused_by_name() -> None:
    cc = {"compilation-config": '{"cudagraph_mm_encoder": true}'}
    # a CompilationConfig field from 0.27.1 on (both runners count the encoder's graphs in the estimate)
    with pytest.raises(InputError, match=r"CUDA graphs: encoder graphs \(cudagraph_mm_encoder\)"):
        _budget(QWEN35_27B, **cc, **{"skip-mm-profiling": "1"})
    with pytest.raises(InputError, match=r"CUDA graphs: encoder graphs \(cudagraph_mm_encoder\)"):
        _budget(QWEN35_27B, **cc, **{"skip-mm-profiling": "1", "vllm-version": "0.33.0"})
    ok = _budget(QWEN35_27B, **cc, **{"language-model-only": "1", "vllm-version": "0.33.0"})
    assert ok.available_kv_cache_bytes.low <= ok.available_kv_cache_bytes.high  # type: ignore[attr-defined]


def test_cli_takes_dash_o_and_dash_cc() -> None:
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "dryboot", "plan", "--model", str(QWEN3_8B), "--gpu", "H100", "--json"]
    r = subprocess.run([*cmd, "-O0"], capture_output=True, text=True, env=env, check=False)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["budget"]["cuda_graph_bytes"] == {"low": 0, "high": 0}
    bad = subprocess.run([*cmd, "-cc", '{"cudagraph_mode": 3}'], capture_output=True, text=True, env=env, check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--compilation-config: cudagraph_mode" in bad.stderr
