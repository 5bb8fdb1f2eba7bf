"""check-log's memory lines (issue 27 item 6): vLLM's templates read figure by figure, on the
public logs that carry them, and a property test of the readers."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dryboot.checklog.memory import memory_lines, read_memory_message
from dryboot.checklog.parse import iter_boots, iter_numbered_log_lines, iter_relevant_lines

PUBLIC = Path(__file__).resolve().parents[1] / "data" / "checklog" / "public"


def _boots(name: str) -> list:
    raw = (PUBLIC / name).read_bytes().split(b"\n", 1)[1]
    return list(iter_boots(iter_numbered_log_lines(iter_relevant_lines(io.BytesIO(raw), name))))


def _gib(b: int) -> str:
    """vLLM's ``format_gib``."""
    return f"{round(b / (1 << 30), 2)}"


def test_summary_line_of_a_posted_boot() -> None:
    """club-3090 #1087 (2x RTX 5090): the summary and the graph pool line, every figure."""
    boots = _boots("club3090-1087-qwen38-27b-2x5090-actual-usage.log")
    lines = [m for b in boots for m in memory_lines(b)]
    kinds = [m.kind for m in lines]
    assert kinds.count("free memory") == 2 and kinds.count("actual usage") == 2 and "CUDA graph pool" in kinds
    free = next(m for m in lines if m.kind == "free memory")
    assert free.figures == {"free": "30.27", "total": "31.4", "util": "0.92", "requested": "28.88"}
    usage = next(m for m in lines if m.kind == "actual usage")
    assert usage.figures == {"consumed": "15.03", "activation": "1.59", "cudagraph": "0.09"}
    pool = next(m for m in lines if m.kind == "CUDA graph pool")
    assert pool.figures == {"cudagraph": "0.09", "cudagraph_estimate": "0.13"}


def test_every_public_log_with_memory_lines_reads() -> None:
    """Each public log holding a memory line yields it; 'Available KV cache memory' is read once
    per worker line."""
    found = {}
    for path in sorted(PUBLIC.glob("*.log")):
        text = path.read_text(errors="replace")
        expected = sum(
            text.count(w) for w in ("Model loading took", "Available KV cache memory:", "Estimated CUDA graph memory:")
        )
        if not expected:
            continue
        got = [m for b in _boots(path.name) for m in memory_lines(b)]
        kinds = {m.kind for m in got}
        found[path.name] = kinds
        assert len([m for m in got if m.kind in ("model loading", "available", "estimated CUDA graph")]) == expected, (
            path.name
        )
    assert len(found) >= 8


def test_older_summary_wording() -> None:
    msg = (
        "Free memory on device (78.66/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB). "
        "Actual usage is 14.08 GiB for weight, 1.97 GiB for peak activation, 0.07 GiB for non-torch memory, and "
        "0.67 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=58333988249` "
        "to fit into requested memory, or `--kv-cache-memory=66273897472` to fully utilize gpu memory. Current kv "
        "cache memory in use is 59212694937 bytes."
    )
    got = {k: f for k, f, _ in read_memory_message(msg)}
    assert got["actual usage (before 0.11)"] == {
        "weights": "14.08",
        "activation": "1.97",
        "non_torch": "0.07",
        "cudagraph": "0.67",
    }
    assert got["free memory"]["total"] == "79.19" and "kv in use" not in got  # bytes, not GiB


_BYTES = st.integers(min_value=0, max_value=1 << 44)


@settings(max_examples=200, deadline=None)
@given(_BYTES, _BYTES, _BYTES, _BYTES, _BYTES, _BYTES, st.sampled_from([0.5, 0.9, 0.92, 0.972]), _BYTES)
def test_summary_template_round_trips(
    free: int, total: int, req: int, c: int, a: int, g: int, u: float, kv: int
) -> None:
    """vLLM 0.28's summary, formatted as ``gpu_worker.py`` formats it, reads back every figure."""
    msg = (
        f"Free memory on device ({_gib(free)}/{_gib(total)} GiB) on startup. Desired GPU memory utilization is "
        f"({u}, {_gib(req)} GiB). Actual usage is {_gib(c)} GiB for consumed memory (weights + non-torch), "
        f"{_gib(a)} GiB for peak activation, and {_gib(g)} GiB for CUDAGraph memory. Replace "
        f"gpu_memory_utilization config with `--kv-cache-memory={req - c}` ({_gib(req - c)} GiB) to fit into "
        f"requested memory, or `--kv-cache-memory={free - c}` ({_gib(free - c)} GiB) to fully utilize gpu memory. "
        f"Current kv cache memory in use is {_gib(kv)} GiB."
    )
    got = {k: f for k, f, _ in read_memory_message(msg)}
    assert got["free memory"] == {"free": _gib(free), "total": _gib(total), "util": str(u), "requested": _gib(req)}
    assert got["actual usage"] == {"consumed": _gib(c), "activation": _gib(a), "cudagraph": _gib(g)}
    assert got["kv in use"] == {"kv": _gib(kv)}


_PIECES = st.sampled_from(
    [
        "Model loading took ", "Available KV cache memory: ", "Estimated CUDA graph memory: ", " GiB", " GiB total",
        "Graph capturing finished in ", " secs, took ", "CUDA graph pool memory: ", " GiB (actual), ",
        " GiB (estimated)", "Free memory on device (", "/", " GiB) on startup. ", "Desired GPU memory utilization is (",
        ", ", "Actual usage is ", " GiB for consumed memory (weights + non-torch), ", " GiB for peak activation, ",
        "and ", " GiB for CUDAGraph memory", "Current kv cache memory in use is ", "0.5", "-1", "12.34", "1e9", "nan",
        "..", " ", "\t", "é",
    ]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES | st.text(max_size=5), max_size=40).map("".join))
def test_reader_never_raises(text: str) -> None:
    for kind, figures, matched in read_memory_message(text):
        assert matched in text and kind
        for value in figures.values():
            float(value)  # every figure is a number


MEMORY = Path(__file__).resolve().parents[1] / "data" / "checklog" / "memory"
CONFIGS = PUBLIC / "configs"
LLAMA8B = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.config.json")


def _report(path: Path, **options: object):  # type: ignore[no-untyped-def]
    from dryboot.checklog.check import check_stream

    raw = path.read_bytes().split(b"\n", 1)[1]
    return check_stream(io.BytesIO(raw), source=path.name, **options)


def test_summary_boot_line_by_line() -> None:
    """A posted boot with the summary line (80 GB card, Llama-3.1-8B geometry): vLLM's own
    arithmetic is confirmed (T x U = R; the weights within 0.01 GiB), and the KV line's
    difference is put on the terms the summary states."""
    report = _report(MEMORY / "a100-llama31-8b-summary.log", model_path=LLAMA8B)
    (boot,) = report.boots
    assert boot.report is not None and boot.report.memory is not None
    mem = boot.report.memory
    by = {(c.kind, c.figure): c for c in mem.checks}
    assert by[("model loading", "weights")].status == "confirmed"  # 15.0 GiB logged
    assert by[("free memory", "total")].status == "confirmed"  # the log's own total, taken as the GPU's
    assert by[("free memory", "requested")].status == "confirmed"  # ceil(79.25 GiB x 0.92) = 72.91
    pool = by[("actual usage", "cudagraph")]  # the captured pool: the budget's interval of the graphs' memory
    assert pool.status == "reported" or "captured graphs' memory" in pool.reason
    kv = by[("available", "kv")]
    assert kv.logged == 56.21 and kv.status in ("confirmed", "differs")
    if kv.status == "differs":
        assert "by term:" in kv.reason and "consumed" in kv.reason
    # the log's total (79.25 GiB) names the GPU: the table's one row with it, not an assumed H200
    assert mem.gpu.startswith("A100-80GB (SM 8.0") and "assumed" not in mem.gpu
    assert any("0.92 from the log" in n for n in mem.notes)


def test_v0_weights_line() -> None:
    """vllm#10517 (RTX 3090, V0): 'Loading model weights took 14.9888 GB' is Llama-3.1-8B's
    per-rank weights within 0.01 GiB."""
    from dryboot.vllm.gpus import gpu_table

    report = _report(
        PUBLIC / "vllm-10517-llama31-8b-3090-three-boots.log", model_path=LLAMA8B, gpu=gpu_table()["RTX 3090"]
    )
    weights = [
        c
        for b in report.boots
        if b.report is not None and b.report.memory is not None
        for c in b.report.memory.checks
        if c.figure == "weights"
    ]
    assert weights and all(c.status == "confirmed" and c.logged == 14.9888 for c in weights)


def test_cuda_graph_estimate_explained_by_the_runner() -> None:
    """LMCache #3430 (vLLM 0.21.0, V1 runner): the log's 'Estimated CUDA graph memory: 0.52 GiB'
    differs from 0.28's rules (the V2 runner estimates nothing for a dense model), and the
    reason names the term; the KV line's difference names the CUDA-graph term."""
    from dryboot.vllm.gpus import parse_gpu

    report = _report(
        PUBLIC / "lmcache-3430-qwen3-8b-a5000-v0.21.0.log",
        model_path=str(CONFIGS / "Qwen--Qwen3-8B.config.json"),
        gpu=parse_gpu("sm86:23.56G"),
    )
    (boot,) = report.boots
    assert boot.report is not None and boot.report.memory is not None
    by = {c.kind: c for c in boot.report.memory.checks}
    cg = by["estimated CUDA graph"]
    assert cg.logged == 0.52 and cg.status == "differs" and "V2 model runner" in cg.reason
    kv = by["available"]
    assert kv.logged == 6.37
    assert kv.status == "confirmed" or "CUDA-graph estimate 0.52 GiB logged" in kv.reason
    assert report.exit_code == 4  # the memory lines leave the exit code to the KV lines


def test_without_a_gpu_the_budget_figures_are_reported_not_guessed() -> None:
    report = _report(
        PUBLIC / "lmcache-3430-qwen3-8b-a5000-v0.21.0.log", model_path=str(CONFIGS / "Qwen--Qwen3-8B.config.json")
    )
    (boot,) = report.boots
    assert boot.report is not None and boot.report.memory is not None
    assert {c.status for c in boot.report.memory.checks} == {"reported"}
    assert all("no GPU named" in c.reason for c in boot.report.memory.checks)


def test_json_and_text_carry_the_memory_section() -> None:
    from dryboot.checklog.render import log_to_dict, render_log

    report = _report(MEMORY / "a100-llama31-8b-summary.log", model_path=LLAMA8B)
    doc = log_to_dict(report)
    mem = doc["boots"][0]["memory_check"]
    assert mem["summary"]["confirmed"] >= 4 and mem["budget"]["available_kv_cache_bytes"]["low"] > 0
    text = render_log(report)
    assert "memory lines (budget predicted for" in text and "confirmed: model loading: weights 15.00 GiB" in text


def test_memory_only_boot_checks_the_gpu_figures() -> None:
    """club-3090 #1087 (2x RTX 5090, memory lines only): with a config given, the summary's
    total and requested memory are vLLM's ceil(T x U) on the table's RTX 5090; the boot stays
    unchecked (no KV line), exit 3. The config is a stand-in (the post's Qwen3.8-27B is not
    published): only the figures that need no weights are asserted."""
    from dryboot.vllm.gpus import gpu_table

    report = _report(
        PUBLIC / "club3090-1087-qwen38-27b-2x5090-actual-usage.log",
        model_path=str(Path(__file__).resolve().parents[2] / "examples" / "models" / "Qwen3.5-27B.config.json"),
        gpu=gpu_table()["RTX 5090"],
    )
    assert report.exit_code == 3 and [b.status for b in report.boots] == ["unchecked"]
    mem = report.boots[0].report.memory  # type: ignore[union-attr]
    assert mem is not None
    gpu_checks = [c for c in mem.checks if c.figure in ("total", "requested")]
    assert len(gpu_checks) == 4 and all(c.status == "confirmed" for c in gpu_checks)


#: calibration.json's ``logged`` keys -> the (kind, figure) pairs of this reader that state them.
CALIBRATION_KEYS = {
    "model_loading_gib": {("model loading", "weights")},
    "available_kv_cache_gib": {("available", "kv")},
    "current_kv_cache_gib": {("kv in use", "kv")},
    "free_on_startup_gib": {("free memory", "free")},
    "total_gib": {("free memory", "total")},
    "requested_gib": {("free memory", "requested")},
    "consumed_gib": {("actual usage", "consumed")},
    "peak_activation_gib": {("actual usage", "activation"), ("actual usage (before 0.11)", "activation")},
    "weights_summary_gib": {("actual usage (before 0.11)", "weights")},
    "summary_non_torch_gib": {("actual usage (before 0.11)", "non_torch")},
    "cuda_graph_gib": {("actual usage", "cudagraph"), ("actual usage (before 0.11)", "cudagraph"),
                       ("graph capturing", "cudagraph")},
    "graph_pool_gib": {("CUDA graph pool", "cudagraph")},
    "cuda_graph_estimate_gib": {("estimated CUDA graph", "cudagraph_estimate"),
                                ("CUDA graph pool", "cudagraph_estimate")},
}  # fmt: skip


def test_reader_agrees_with_the_calibration_corpus() -> None:
    """Every figure the budget calibration corpus (``tests/data/budget/calibration.json``, read by
    hand from 35 public boots) records for a line this reader knows is read from the same log,
    as a figure of that line (the V0 engine's and pre-0.11 profiling lines aside)."""
    import json

    repo = Path(__file__).resolve().parents[2]
    corpus = repo / "tests" / "data" / "budget"
    entries = json.loads((corpus / "calibration.json").read_text())["logs"]
    compared = 0
    for e in entries:
        path = corpus / e["log"] if (corpus / e["log"]).is_file() else repo / e["log"]
        logged = e.get("logged")
        if not path.is_file() or not isinstance(logged, dict):
            continue
        raw = path.read_bytes()
        raw = raw.split(b"\n", 1)[1] if raw.startswith(b"#") else raw
        boots = list(iter_boots(iter_numbered_log_lines(iter_relevant_lines(io.BytesIO(raw), path.name))))
        read: dict[tuple[str, str], set[float]] = {}
        for b in boots:
            for m in memory_lines(b):
                for name, value in m.figures.items():
                    read.setdefault((m.kind, name), set()).add(float(value))
        for key, value in logged.items():
            pairs = CALIBRATION_KEYS.get(key)
            if pairs is None or value is None:
                continue
            if key != "model_loading_gib" and "V0" in str(e.get("release")):
                continue  # V0's profiling lines ("total_gpu_memory (T) x gpu_memory_utilization ...")
            if key in ("free_on_startup_gib", "requested_gib", "total_gib") and b"Free memory on device" not in raw:
                continue  # the DEBUG line "Initial free memory: F GiB, ... requested GPU memory: R GiB"
            found = set().union(*(read.get(p, set()) for p in pairs))
            assert float(value) in found, f"{e['log']}: {key} {value} not read (read {sorted(found)})"
            compared += 1
    assert compared >= 60


def test_weights_off_by_a_tensor_parallel_factor_say_so() -> None:
    """vllm#17469's 4x A10 boot logs a rank's 14.25 GiB of Qwen3-30B-A3B; without its TP the
    prediction is the whole model, and the reason names the factor."""
    from dryboot.checklog.memory import MemoryLine, compare_memory
    from dryboot.checklog.parse import LogLine

    text = "Model loading took 14.25 GiB and 30.1 seconds"
    line = LogLine(number=1, process=None, pid=None, level="INFO", source=None, message=text)
    m = MemoryLine("model loading", {"weights": "14.25"}, text, line)
    (c,) = compare_memory((m,), None, weights_stages=(round(56.88 * (1 << 30)),)).checks
    assert c.status == "differs" and "tensor_parallel_size 4?" in c.reason
    (ok,) = compare_memory((m,), None, weights_stages=(round(14.255 * (1 << 30)),)).checks
    assert ok.status == "confirmed"


def _model_loading_only(model: str, given: dict[str, object]):  # type: ignore[no-untyped-def]
    """A one-line boot (``Model loading took 1.12 GiB``) checked as vLLM 0.33.0 on an RTX 3090."""
    from dryboot.checklog.check import check_stream
    from dryboot.vllm.gpus import gpu_table

    log = (
        b"(EngineCore pid=1) INFO 12-05 17:00:11 [gpu_model_runner.py:4000] "
        b"Model loading took 1.12 GiB memory and 5.4 seconds\n"
    )
    report = check_stream(
        io.BytesIO(log),
        source="t.log",
        model_path=model,
        vllm_version="0.33.0",
        gpu=gpu_table()["RTX 3090"],
        given=given,
    )
    return report.boots[0].report.memory


WEIGHTS = Path(__file__).resolve().parents[1] / "fidelity" / "data" / "weights"


def test_weights_sized_by_the_scheduler_are_answered_as_plan_does(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """nvidia/Qwen3.6-27B-NVFP4 (a ModelOpt fp8 KV cache) on an RTX 3090 with vLLM 0.33.0: its
    FlashInfer KV counter is sized by max_num_batched_tokens, which the log leaves unset: vLLM's
    default for a 24 GiB card (2048) is taken, as plan does (was refused by name); a
    ``--kv-cache-dtype`` given reaches the weights."""
    import dryboot.vllm.model_executor.model_loader.loader as loader

    seen: list[dict[str, object]] = []
    real = loader.model_weights

    def spy(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        seen.append(kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(loader, "model_weights", spy)
    mem = _model_loading_only(str(WEIGHTS / "quant-configs-modelopt" / "nvidia--Qwen3.6-27B-NVFP4"), {})
    assert mem.refused is None and "predicted 19.82" in mem.checks[0].reason
    assert seen[-1]["max_num_batched_tokens"] == 2048 and seen[-1]["kv_cache_dtype"] == "auto"
    bf16 = str(WEIGHTS / "quant-configs-kvfp8" / "Qwen--Qwen3-0.6B" / "config.json")
    mem = _model_loading_only(bf16, {"kv_cache_dtype": "fp8"})
    assert mem.refused is None and mem.checks[0].status == "confirmed"
    assert seen[-1]["kv_cache_dtype"] == "fp8"
    # the length vLLM builds the model with reaches the walk, as plan passes it (its derived one here)
    assert seen[-1]["max_model_len"] == 40960
