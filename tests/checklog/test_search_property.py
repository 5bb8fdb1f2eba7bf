"""The search over the flags a log hides finds them: a boot log written here from a random plan
(TP, KV dtype, MTP k, prefix caching, each worker's budget jittered), with no args line and no
engine config line, is explained by check-log's search, and one explaining combination has the
plan's flags (a value the search merged with another, because both give the same KV lines,
counts as found when the search says so).

The writer prints vLLM 0.28.0's lines (``gpu_worker.py``'s per-worker ``Available KV cache memory``
and the engine's KV lines as dryboot's planner predicts them for the smallest worker's bytes,
which is what vLLM keeps); it tests the search, not the planner (test_posted_figures.py does).
"""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dryboot.checklog.check import SAME_KV_LAYOUT, check_lines
from dryboot.checklog.compare import predicted_lines
from dryboot.checklog.parse import iter_relevant_lines
from dryboot.planner.plan import plan
from dryboot.planner.runner import load_drafter_and_k
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.transformers_utils.config import load_model

from .conftest import REPO

MODELS = {
    # a hybrid model with an MTP layer (k changes its mamba state), 24 heads
    "hybrid": (str(REPO / "examples" / "models" / "Qwen3.5-27B.config.json"), (1, 2, 4, 8), True),
    # an attention-only model without MTP, 32 heads
    "dense": (str(REPO / "tests/data/checklog/public/configs/Qwen--Qwen3-8B.config.json"), (1, 2, 4, 8), False),
}
KV_DTYPES = ("auto", "fp8", "fp8_e5m2", "int8_per_token_head", "int4_per_token_head")
GIB = 1 << 30


@st.composite
def boots(draw: st.DrawFn) -> dict[str, object]:
    kind = draw(st.sampled_from(sorted(MODELS)))
    config, tps, mtp = MODELS[kind]
    return {
        "config": config,
        "tp": draw(st.sampled_from(tps)),
        "kv": draw(st.sampled_from(KV_DTYPES)),
        "k": draw(st.none() | st.integers(1, 16)) if mtp else None,
        "prefix": draw(st.booleans()),
        "budget": draw(st.integers(4 * GIB, 60 * GIB)),
        "jitter": draw(st.lists(st.integers(0, GIB // 16), min_size=8, max_size=8)),
        "max_model_len": draw(st.sampled_from((8192, 32768, 40960))),
    }


def write_log(b: dict[str, object]) -> str | None:
    """vLLM's lines for the boot ``b`` (``None`` when vLLM would refuse it)."""
    model = load_model(b["config"])  # type: ignore[arg-type]
    args = EngineArgs(
        kv_cache_dtype=b["kv"],  # type: ignore[arg-type]
        tensor_parallel_size=b["tp"],  # type: ignore[arg-type]
        enable_prefix_caching=b["prefix"],  # type: ignore[arg-type]
        max_model_len=b["max_model_len"],  # type: ignore[arg-type]
    )
    drafter = None
    if b["k"] is not None:
        drafter, args = load_drafter_and_k({"method": "mtp", "num_speculative_tokens": b["k"]}, None, args)
    tp: int = b["tp"]  # type: ignore[assignment]
    ranks = [b["budget"] + j for j in b["jitter"][:tp]]  # type: ignore[operator, index]
    try:
        args.validate()
        p = plan(model, replace(args, kv_cache_memory_bytes=min(ranks)), drafter=drafter)
    except Exception:
        return None
    if p.memory_error is not None:
        return None
    out = ["(APIServer pid=900) INFO 12-05 06:00:00 [api_utils.py:313] vLLM server version 0.28.0, serving model m"]
    for rank, budget in enumerate(ranks):
        who = f"Worker_TP{rank} pid={1000 + rank}" if tp > 1 else "EngineCore pid=999"
        out.append(f"({who}) INFO 12-05 06:00:01 [gpu_worker.py:578] Available KV cache memory: {budget / GIB:.2f} GiB")
    for _, text in predicted_lines(p):
        out.append(f"(EngineCore pid=999) INFO 12-05 06:00:02 [kv_cache_utils.py:1869] {text}")
    return "\n".join(out) + "\n"


def _found(b: dict[str, object], search: object) -> bool:
    """Whether an explaining combination has ``b``'s flags (up to the search's merges)."""
    same = " ".join(search.same)  # type: ignore[attr-defined]
    kv = next((rep for rep, others in SAME_KV_LAYOUT.items() if b["kv"] in others), b["kv"])
    spec = "no speculative decoding" if b["k"] is None else f"MTP k={b['k']}"
    prefix = "prefix caching " + ("on" if b["prefix"] else "off")
    for combo in search.explaining:  # type: ignore[attr-defined]
        text = combo.describe()
        if f"--kv-cache-dtype {kv}," not in text or f"TP {b['tp']}" not in text:
            continue
        spec_ok = spec in text or ((spec in same and "MTP k=" in text) or ("no speculative" in text and spec in same))
        prefix_ok = prefix in text or prefix in same
        if spec_ok and prefix_ok:
            return True
    return False


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(boots())
def test_a_log_without_args_is_explained_and_its_flags_found(b: dict[str, object]) -> None:
    _explained_and_found(b)


@pytest.mark.xfail(
    strict=True,
    reason="a known miss (hypothesis seed 1): the search screens at most MAX_SCREENED (240) of the ~3,000 "
    "combinations of a hybrid MTP model, nearest first by a multiplicative capacity estimate; int4 per-token-head "
    "KV with prefix caching off and k=3 is estimated far from its real capacity and is not screened",
)
def test_a_known_miss_of_the_search() -> None:
    config = str(REPO / "examples" / "models" / "Qwen3.5-27B.config.json")
    b = {"config": config, "tp": 1, "kv": "int4_per_token_head", "k": 3, "prefix": False, "budget": 4 * GIB,
         "jitter": [0] * 8, "max_model_len": 8192}  # fmt: skip
    _explained_and_found(b)


def _explained_and_found(b: dict[str, object]) -> None:
    text = write_log(b)
    if text is None:
        event("vLLM refuses the drawn plan: nothing written")
        return
    (boot,) = check_lines(iter_relevant_lines(io.BytesIO(text.encode())), source="drawn", model_path=b["config"])
    event(f"status {boot.status}")
    assert boot.report is not None and boot.report.search is not None, boot.reason
    search = boot.report.search
    assert boot.status == "explained", (b, search.nearest, search.pruned, search.not_planned)
    assert _found(b, search), (b, [c.describe() for c in search.explaining], search.same)
