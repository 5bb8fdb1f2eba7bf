"""Inkling's cases whose log lines are checked (issue 37, vLLM 0.33.0): the tiny configs of
``data/architectures/`` (the text model with sliding and full layers of different heads, the wrapper
whose two layer types share one conv-state spec) and the text model's defaults config, under flag
sets that move the block (``--block-size``, an fp8 cache the conv page then outgrows), the length
(auto-fit) and the blocks (``--num-gpu-blocks-override``). ``record_inkling.py`` records vLLM's
answers with the KV cache lines it logs (``kv_log``); ``test_inkling.py`` checks dryboot's figures and
lines against them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import e2e_harness as H
import test_architectures as T

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "inkling"
RELEASE = "0.33.0"

#: (model, argv): ``arch:<Architecture>`` is the tiny config, ``defaults:<Architecture>`` its defaults config
_CASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("arch:InklingForCausalLM", ("--kv-cache-memory-bytes", "2000000000")),
    ("arch:InklingForCausalLM", ("--kv-cache-memory-bytes", "2000000000", "--kv-cache-dtype", "fp8")),
    ("arch:InklingForCausalLM", ("--kv-cache-memory-bytes", "2000000000", "--block-size", "64", "-tp", "2")),
    ("arch:InklingForCausalLM", ("--kv-cache-memory-bytes", "300000", "--max-model-len", "-1")),
    ("arch:InklingForCausalLM", ("--kv-cache-memory-bytes", "2000000000", "--num-gpu-blocks-override", "20000")),
    ("arch:InklingForConditionalGeneration", ("--kv-cache-memory-bytes", "2000000000")),
    ("arch:InklingForConditionalGeneration", ("--kv-cache-memory-bytes", "2000000000", "--block-size", "32")),
    (
        "arch:InklingForConditionalGeneration",
        ("--kv-cache-memory-bytes", "2000000000", "--kv-cache-dtype", "fp8", "-pp", "2"),
    ),
    ("defaults:InklingForCausalLM", ("--kv-cache-memory-bytes", "4000000000", "--max-model-len", "-1")),
    ("defaults:InklingForCausalLM", ("--kv-cache-memory-bytes", "2000000000", "--block-size", "128", "-tp", "4")),
    # the quantized caches InklingAttention stores as plain one-byte caches (no scales, no packed halves)
    *(
        ("arch:InklingForCausalLM", ("--kv-cache-memory-bytes", "2000000000", "--kv-cache-dtype", dtype))
        for dtype in ("fp8_per_token_head", "int8_per_token_head", "int4_per_token_head", "nvfp4", "nvfp4_4over6")
    ),
)


#: refusals vLLM makes while building the text model's tiny config with these keys changed (``overlay``):
#: (overlay, argv)
_OVERLAID: tuple[tuple[dict[str, Any], tuple[str, ...]], ...] = (
    # InklingAttention: KV heads at or above TP must be split evenly (a bare assert; the conv state passes)
    ({"num_key_value_heads": 6}, ("--kv-cache-memory-bytes", "2000000000", "-tp", "4")),
    # InklingAttention: TP must divide the sliding layers' query heads (a bare assert)
    ({"swa_num_attention_heads": 6}, ("--kv-cache-memory-bytes", "2000000000", "-tp", "4")),
    # InklingConvState: bfloat16 only
    ({}, ("--kv-cache-memory-bytes", "2000000000", "--dtype", "float16")),
    # InklingMoE: shared sink experts only (a bare assert)
    ({"shared_expert_sink": False}, ("--kv-cache-memory-bytes", "2000000000")),
    # every layer dense: no InklingMoE is built, so its asserts do not apply
    ({"shared_expert_sink": False, "dense_mlp_idx": 4}, ("--kv-cache-memory-bytes", "2000000000")),
    # wider shapes: 8 KV heads of 128 on a 4096 hidden size (the packed head 1280 -> 2048, its page twice the
    # full layers' at block 16), and 16 sliding KV heads beside 8 full ones on 6144 (full layers' block 32)
    (
        {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128},
        ("--kv-cache-memory-bytes", "20000000000", "-tp", "2"),
    ),
    (
        {
            "hidden_size": 6144,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "swa_num_attention_heads": 64,
            "swa_num_key_value_heads": 16,
            "swa_head_dim": 128,
            "sliding_window_size": 512,
        },
        ("--kv-cache-memory-bytes", "20000000000", "--kv-cache-dtype", "fp8"),
    ),
)


#: other GPUs (``tests/data/gpus/run_oracle_as.py``): Inkling's layers take FlashAttention on each
#: (the default batch budget differs: 2048 tokens on an A100 and below 70 GiB)
GPUS = ("A100-80GB", "B200", "RTX 5090", "RTX 3090")
_GPU_ARGV: tuple[tuple[str, ...], ...] = (
    ("--kv-cache-memory-bytes", "2000000000"),
    ("--kv-cache-memory-bytes", "2000000000", "--kv-cache-dtype", "fp8_per_token_head", "-tp", "2"),
)


def cases() -> list[dict[str, Any]]:
    """Every case: ``{id, model, argv}`` (``overlay``: keys changed in the text model's tiny config;
    ``gpu``: the GPU the oracle answers as, else its default H200)."""
    out: list[dict[str, Any]] = [
        {"id": f"{model}#{i}", "model": model, "argv": list(argv)} for i, (model, argv) in enumerate(_CASES)
    ]
    for j, (overlay, argv) in enumerate(_OVERLAID, start=len(out)):
        model = "arch:InklingForCausalLM"
        out.append({"id": f"{model}+{json.dumps(overlay)}#{j}", "model": model, "argv": list(argv), "overlay": overlay})
    for gpu in GPUS:
        for argv in _GPU_ARGV:
            model = "arch:InklingForCausalLM"
            out.append({"id": f"{gpu}|{model}#{len(out)}", "model": model, "argv": list(argv), "gpu": gpu})
    return out


def materialize(case: dict[str, Any]) -> str:
    """The case's model directory (an overlaid config written under the harness's work directory)."""
    kind, arch = case["model"].split(":", 1)
    path = T.DEFAULTS / f"{arch}.json" if kind == "defaults" else T.tiny_configs()[arch]
    overlay = case.get("overlay")
    if overlay is not None:
        config = {**json.loads(path.read_text()), **overlay}
        digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:10]
        path = H.default_workdir() / "inkling" / f"{arch}-{digest}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=1) + "\n")
    return T.materialize(arch, path)


def record_path(version: str = RELEASE) -> Path:
    return DATA / f"vllm-{version}.json"
