"""What ``Model loading took`` holds beyond vLLM's tensors: the caching allocator's whole blocks.

``data/weights/load-trace-*.json`` (``record_load_trace.py``): the order in which vLLM allocates and
releases its storages while it builds, loads and post-processes a model on the meta device.
Replayed through dryboot's model of the caching allocator
(:mod:`dryboot.vllm.model_executor.model_loader.allocator`) under the ``max_split_size_mb`` 20 vLLM loads with
(``Worker._scoped_allocator_max_split``, 0.27.1-0.33), the blocks held give the logged line where
the tensors alone (dryboot's walk, byte for byte vLLM's) do not.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm.gpus import parse_gpu
from dryboot.vllm.model_executor.model_loader.allocator import MIB, NO_SPLIT_LIMIT, Event, replay, round_size
from dryboot.vllm.model_executor.model_loader.load_order import DenseDecoder, Marlin4, load_events
from dryboot.vllm.model_executor.model_loader.loader import model_weights, serving_gpu
from dryboot.vllm.model_executor.model_loader.weights import (
    LOAD_MAX_SPLIT,
    Parallel,
    _on_gpu,
    ordered_llama_load,
    quant_from_config,
)

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
REPO = HERE.parents[1]
AWQ = "meta-llama--Meta-Llama-3.1-8B+AWQ-INT4-hugging-quants"
GIB = 1 << 30


def trace_events(trace: dict[str, Any]) -> list[Event]:
    """``record_load_trace.py``'s ``events`` (``[op, id, bytes]``; op -1: ``id`` released) as the
    allocator's events."""
    return [(sid, 0 if op < 0 else nbytes) for op, sid, nbytes in trace["events"]]


@dataclass
class TraceReplay:
    """A trace replayed: ``allocated`` (the allocator's count of the blocks held at the end),
    ``tensor_blocks`` (the storages still alive, each in 512-byte blocks: the meta-device oracle's
    figure), ``built`` (both at ``built_at``, before the post-load step) and ``held``: (operator,
    bytes, block bytes) of every storage alive at the end whose block is larger."""

    allocated: int
    tensor_blocks: int
    built: tuple[int, int]
    held: list[tuple[str, int, int]]


def replay_trace(trace: dict[str, Any], max_split: int) -> TraceReplay:
    built_at = int(trace["built_at"])
    r = replay(trace_events(trace), max_split, marks=(built_at,))
    op_of = {sid: str(trace["ops"][op]) for op, sid, _ in trace["events"] if op >= 0}
    held = [(op_of[k], n, block) for k, (n, block) in r.live.items() if block != round_size(n)]
    return TraceReplay(r.allocated, r.tensor_blocks, r.marks[built_at], held)


def _logged(stem: str) -> float:
    logs = json.loads((REPO / "tests" / "data" / "budget" / "calibration.json").read_text())["logs"]
    entry = next(e for e in logs if Path(str(e["log"])).stem == stem)
    return float(entry["logged"]["model_loading_gib"])


def test_the_allocator_explains_the_awq_marlin_line() -> None:
    """hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 on vLLM 0.28.0 on an RTX 3090 (the kvroute
    boots, "Model loading took 5.39 GiB"; the composed stand-in config): the tensors are
    5,761,540,096 bytes (5.3659 GiB: vLLM's recorded figure and dryboot's), the blocks held
    5,786,181,632 (5.3888 GiB, printed 5.39). The 23.5 MiB: the rotary table's float32 intermediates
    (131,072 x 64: three 32 MiB blocks and a 64 MiB concatenation, freed while layer 0 is built) are
    taken whole by AWQ qweights of layers 0 and 1 (56 MiB into 64, 28 into 32) and, after their
    release, by Marlin's repacked qweights (one 56 MiB into 64, two 28 MiB into 32): 16 MiB; and 15 of
    the 32 ``gate_up_proj`` Marlin scale tensors (1.75 MiB) land in freed 2.25 MiB blocks that are
    not split (0.5 MiB remains, at most 1 MiB): 7.5 MiB. With PyTorch's default (no split limit) the
    rotary blocks would be split: 5.3732 GiB, printed 5.37."""
    trace = json.loads((DATA / f"load-trace-0.28.0-{AWQ}-RTX3090-tp1.json").read_text())
    recorded = json.loads((DATA / "quant-recorded-0.28.0.json").read_text())["cases"]
    tensors = recorded[f"{AWQ} RTX 3090 --tensor-parallel-size 1"]["allocated_bytes"]
    walk = model_weights(DATA / "quant-configs" / AWQ, tp=1, **serving_gpu(parse_gpu("RTX 3090"), "0.28.0"))
    assert walk.stages[0].allocated_bytes == tensors == 5_761_540_096
    loaded = replay_trace(trace, 20 * MIB)
    assert loaded.tensor_blocks == tensors  # the trace holds the recorded tensors
    assert loaded.allocated - tensors == 47 * MIB // 2  # 23.5 MiB
    held = Counter((op, n, block) for op, n, block in loaded.held)
    assert held == {
        ("_C.gptq_marlin_repack.default", 56 * MIB, 64 * MIB): 1,
        ("_C.gptq_marlin_repack.default", 28 * MIB, 32 * MIB): 2,
        ("aten.index.Tensor", 7 * MIB // 4, 9 * MIB // 4): 15,
    }
    for stem in ("kvroute-llama31-8b-awq-3090-v0.28.0-pcie", "kvroute-llama31-8b-awq-3090-v0.28.0-roofline"):
        assert f"{loaded.allocated / GIB:.2f}" == f"{_logged(stem):.2f}" == "5.39"
        assert f"{tensors / GIB:.2f}" != "5.39"  # the tensors alone miss the line
        assert walk.stages[0].log_line() == "Model loading took 5.39 GiB memory"  # the emitted order's replay
    unsplit = replay_trace(trace, NO_SPLIT_LIMIT)
    assert f"{unsplit.allocated / GIB:.2f}" == "5.37"


def test_the_replay_gives_the_segment_rule_of_an_unquantized_boot() -> None:
    """The same replay on an independent case agrees with dryboot's per-tensor segment rule
    (``load_segment_bytes``): Qwen3-32B at TP 2 on vLLM 0.27.1 (the kubesimplify boot, "Model loading
    took 30.59 GiB"; traced with the recorder's A100 stand-in, the unquantized layout is the same on
    every GPU). Each of the 64 ``down_proj`` shards (125 MiB) holds its 126 MiB segment, the embedding
    and head shards (741.9 MiB) theirs rounded to 2 MiB: 64.25 MiB over the tensors, 30.5854 GiB,
    printed 30.59; dryboot's walk adds the same segments (its tensors keep five 512-byte blocks per
    attention layer from the built model, 160 KiB, which vLLM's post-load step moves to the host:
    ``docs/weights.md``)."""
    trace = json.loads((DATA / "load-trace-0.27.1-Qwen--Qwen3-32B-A100-80GB-tp2.json").read_text())
    loaded = replay_trace(trace, 20 * MIB)
    assert loaded.allocated - loaded.tensor_blocks == 257 * MIB // 4  # 64.25 MiB
    assert f"{loaded.allocated / GIB:.2f}" == f"{_logged('kubesimplify-qwen3-32b-rtxpro6000se-tp2'):.2f}"
    walk = model_weights(
        REPO / "tests" / "fidelity" / "data" / "weights" / "configs" / "Qwen--Qwen3-32B",
        tp=2,
        **serving_gpu(parse_gpu("RTX PRO 6000 Blackwell Server Edition"), "0.27.1"),
    ).stages[0]
    assert walk.loaded_bytes - walk.allocated_bytes == loaded.allocated - loaded.tensor_blocks
    assert walk.allocated_bytes - loaded.tensor_blocks == 64 * 5 * 512  # five scalar blocks per layer


#: Meta-Llama-3.1-8B's geometry at TP 1 (128,256 rows, 32 layers, GQA 32 / 8 heads of 128, 14,336
#: MLP, bf16, llama3 rope over 131,072 positions)
LLAMA31_8B = DenseDecoder(
    vocab_rows=128256,
    hidden=4096,
    layers=32,
    qkv=6144,
    o_in=4096,
    inter=14336,
    act_bytes=2,
    tied=False,
    positions=131072,
    rotary_dim=128,
)


def _large(events: list[Event]) -> list[tuple[str, int]]:
    """The large-pool requests (over 1 MiB) and their releases, in order: ("a", bytes) or ("f", the
    allocation's place among them). The small pool's blocks are always the request rounded to
    512 bytes, so these alone decide what the allocator holds beyond the tensors."""
    sizes: dict[int, int] = {}
    placed: dict[int, int] = {}
    out: list[tuple[str, int]] = []
    for key, nbytes in events:
        if nbytes:
            sizes[key] = nbytes
        if sizes[key] > MIB:
            if nbytes:
                placed[key] = len(placed)
                out.append(("a", nbytes))
            else:
                out.append(("f", placed[key]))
    return out


def _same_replays(trace: dict[str, Any], events: list[Event], built_at: int) -> None:
    """The emitted ``events`` against the recorded ``trace``: the same large requests and releases in
    the same order, and the same allocated bytes and tensor blocks after the build (``built_at``)
    and at the end, under the load's 20 MiB split limit and under PyTorch's default."""
    recorded = trace_events(trace)
    assert _large(events) == _large(recorded)
    for max_split in (LOAD_MAX_SPLIT, NO_SPLIT_LIMIT):
        want = replay(recorded, max_split, marks=(int(trace["built_at"]),))
        got = replay(events, max_split, marks=(built_at,))
        assert (got.allocated, got.tensor_blocks) == (want.allocated, want.tensor_blocks)
        assert got.marks[built_at] == want.marks[int(trace["built_at"])]


def test_the_emitted_awq_marlin_order_is_vllms() -> None:
    """dryboot's emitted order of the AWQ-INT4 load (``load_order.load_events``: the layers in build
    order, the rotary intermediates after layer 0's ``o_proj``, Marlin's post-load step per linear
    layer) is the recorded trace's, request for request above 1 MiB, and replays to its figures
    (5,786,181,632 bytes held at the end, 5.39); ``ordered_llama_load`` derives that geometry from
    the config on the RTX 3090 (82 SMs: the workspace)."""
    trace = json.loads((DATA / f"load-trace-0.28.0-{AWQ}-RTX3090-tp1.json").read_text())
    m = replace(LLAMA31_8B, quant=Marlin4("awq", group_size=128, sm_count=82))
    order = load_events(m)
    _same_replays(trace, order.events, order.built_at)
    assert replay(order.events, LOAD_MAX_SPLIT).allocated == 5_786_181_632
    config = json.loads((DATA / "quant-configs" / AWQ / "config.json").read_text())
    gpu = serving_gpu(parse_gpu("RTX 3090"), "0.28.0")
    par = Parallel(capability=gpu["compute_capability"], sm_count=gpu["sm_count"], vllm_version="0.28.0")
    quant = _on_gpu(quant_from_config(config, None), par, "llama")
    assert ordered_llama_load(config, "LlamaForCausalLM", quant, par, 2, 128256) == m


GPTQ = "meta-llama--Meta-Llama-3.1-8B+GPTQ-Int4-g128"


def test_the_emitted_gptq_marlin_order_is_vllms() -> None:
    """Meta-Llama-3.1-8B GPTQ 4-bit (symmetric, group 128, no act-order) on vLLM 0.28.0 on an RTX 3090
    (``record_load_trace.py``, the quant-configs stand-in): the emitted order (``qweight``, ``g_idx``,
    ``qzeros``, ``scales`` per layer; after loading the workspace, ``g_idx`` emptied, the repacked
    ``qweight``, the permuted scales, ``qzeros`` released) is the trace's, and the walk's figure is
    its replay: 24 MiB over the tensors (the rotary blocks taken by layer 0's 56 / 28 MiB qweights
    and, after their release, by repacked ones; unsplit 2.25 MiB blocks under 1.75 MiB scales):
    5.36 GiB where the per-tensor rule gave 5.34."""
    trace = json.loads((DATA / f"load-trace-0.28.0-{GPTQ}-RTX3090-tp1.json").read_text())
    m = replace(LLAMA31_8B, quant=Marlin4("gptq", group_size=128, sm_count=82))
    order = load_events(m)
    _same_replays(trace, order.events, order.built_at)
    r = replay(order.events, LOAD_MAX_SPLIT)
    assert r.surplus == 24 * MIB
    recorded = json.loads((DATA / "quant-recorded-0.28.0.json").read_text())["cases"]
    tensors = recorded[f"{GPTQ} RTX 3090 --tensor-parallel-size 1"]["allocated_bytes"]
    walk = model_weights(DATA / "quant-configs" / GPTQ, tp=1, **serving_gpu(parse_gpu("RTX 3090"), "0.28.0"))
    assert walk.stages[0].allocated_bytes == tensors == r.tensor_blocks
    assert walk.stages[0].loaded_bytes == r.allocated
    assert walk.stages[0].log_line() == "Model loading took 5.36 GiB memory"
    assert f"{tensors / GIB:.2f}" == "5.34"


def test_the_emitted_unquantized_order_is_vllms() -> None:
    """The bf16 Meta-Llama-3.1-8B load on vLLM 0.28.0 (``record_load_trace.py`` with
    ``RECORD_CONFIGS=data/weights/configs``, the A100 stand-in): the emitted order is the trace's, and
    the rotary intermediates alone give its surplus: the 48 MiB ``qkv_proj`` of layer 1 takes the
    64 MiB concatenation's block whole under the 20 MiB split limit (16 MiB), every later
    request of 32 MiB or more a block of its own size. vLLM 0.28.0 would log 15.00 where the
    per-tensor rule gives 14.99; dryboot keeps the per-tensor rule for unquantized layers
    (``ordered_llama_load``: the Meta-Llama-3.1-8B boot of the corpus is 0.15.1's, logged 14.99)."""
    trace = json.loads((DATA / "load-trace-0.28.0-meta-llama--Meta-Llama-3.1-8B-A100-80GB-tp1.json").read_text())
    order = load_events(LLAMA31_8B)
    _same_replays(trace, order.events, order.built_at)
    r = replay(order.events, LOAD_MAX_SPLIT)
    assert r.surplus == 16 * MIB
    walk = model_weights(
        DATA / "configs" / "meta-llama--Meta-Llama-3.1-8B", tp=1, **serving_gpu(parse_gpu("A100-80GB"), "0.28.0")
    ).stages[0]
    assert walk.load_segment_bytes == 0  # the per-tensor rule, unchanged
    assert f"{walk.gib:.2f}" == "14.99"
    assert f"{(walk.allocated_bytes + r.surplus) / GIB:.2f}" == "15.00"


@pytest.mark.parametrize(
    ("arch", "gpu", "version", "tp"),
    [
        ("MistralForCausalLM", "RTX 3090", "0.28.0", 1),  # another class of the family
        ("LlamaForCausalLM", "H100", "0.28.0", 1),  # Machete, not Marlin
        ("LlamaForCausalLM", "RTX 3090", "0.27.1", 1),  # another release
        ("LlamaForCausalLM", "RTX 3090", "0.28.0", 2),  # not traced
    ],
)
def test_an_order_not_emitted_keeps_the_per_tensor_rule(arch: str, gpu: str, version: str, tp: int) -> None:
    for name in (AWQ, GPTQ):
        config = json.loads((DATA / "quant-configs" / name / "config.json").read_text())
        g = serving_gpu(parse_gpu(gpu), version)
        par = Parallel(tp=tp, capability=g["compute_capability"], sm_count=g["sm_count"], vllm_version=version)
        quant = _on_gpu(quant_from_config(config, None), par, "llama")
        assert ordered_llama_load(config, arch, quant, par, 2, 128256) is None


def test_autoround_keeps_the_per_tensor_rule() -> None:
    """AutoRound's GPTQ-packed layers go through INC's method (not traced): not emitted."""
    config = json.loads(
        (DATA / "quant-configs" / "meta-llama--Meta-Llama-3.1-8B+AutoRound-W4A16" / "config.json").read_text()
    )
    g = serving_gpu(parse_gpu("RTX 3090"), "0.28.0")
    par = Parallel(capability=g["compute_capability"], sm_count=g["sm_count"], vllm_version="0.28.0")
    quant = _on_gpu(quant_from_config(config, None), par, "llama")
    assert quant.wna16 is not None and quant.wna16.packing == "gptq"
    assert ordered_llama_load(config, "LlamaForCausalLM", quant, par, 2, 128256) is None
