"""FlashAttention 4's dedicated head-256 kernel on SM 10.x (vLLM 0.29.0+: ``fa_utils.py``
``uses_fa4_hd256_kernel``, 128-token kernel pages): the models and flags ``record_fa4_hd256.py`` starts
vLLM with (each release's engine start, as the case's GPU through ``tests/data/gpus/run_oracle_as.py``)
into ``data/fa4-hd256/vllm-<release>.json``, and ``test_fa4_hd256.py`` checks dryboot against.

The configs (``data/fa4-hd256/configs/``): ``gemma3-text`` (a 7-layer Gemma-3 text stand-in, head 256,
sliding and full layers, no soft cap), ``gemma2-softcap`` (a 4-layer Gemma-2 stand-in, head 256,
``attn_logit_softcapping`` 50: the model-level fallback), ``gpt-oss-hd256`` (gpt-oss-20b's config with
256-wide heads and 4 layers: attention sinks); the published Qwen3.5-27B and Qwen3-Next-80B configs
(``examples/models``: Gated DeltaNet beside 256-wide attention) and the Gemma-4 config of
``data/releases/fa4fp8`` (sliding heads of 256 beside global heads of 512), and ``gemma4-g128`` (that
config with ``global_head_dim`` 128: the widest head, vLLM's whole-model head size for Gemma-4, is 256).
The drafters (``data/fa4-hd256/drafters/``, tiny stand-ins of head size 128): ``q3-eagle3`` (an EAGLE-3
Llama head) and ``q3-eagle`` (an EAGLE Llama head) for ``qwen3-hd256``, ``g4-eagle3`` (an EAGLE-3 head) for
``gemma4-g128``; ``qwen35-*-mtp*`` run Qwen3.5's own MTP module (head size 256). ``*-dfa`` name FlashAttention
as the drafter's ``attention_backend``.
The ``thor-*`` cases run as ``gpus.toml``'s SM 11.0 row (Jetson AGX Thor).
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "fa4-hd256"
CONFIGS = DATA / "configs"
EXAMPLES = HERE.parents[1] / "examples" / "models"
#: every release recorded on every case (0.29.0+ serve the head-256 kernel)
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: the releases before the kernel, recorded on :data:`EARLIER_CASES` only
EARLIER = ("0.27.1", "0.28.0")
EARLIER_CASES = ("gemma3-fa", "qwen35-fa", "g4g128-fa-lmonly", "g4g128-default-lmonly", "g4g128-fa-lmonly-bs256")
C_ALL = RELEASES

MODELS: dict[str, Path] = {
    "gemma3-text": CONFIGS / "gemma3-text.json",
    "gemma2-softcap": CONFIGS / "gemma2-softcap.json",
    "gpt-oss-hd256": CONFIGS / "gpt-oss-hd256.json",
    "qwen3.5-27b": EXAMPLES / "Qwen3.5-27B.config.json",
    "qwen3-next": EXAMPLES / "Qwen3-Next-80B-A3B-Thinking.config.json",
    "qwen3-hd256": CONFIGS / "qwen3-hd256.json",
    "qwen3-hd256-softcapkey": CONFIGS / "qwen3-hd256-softcapkey.json",
    "gemma4-mixed": HERE / "data" / "releases" / "fa4fp8" / "config.json",
    "gemma4-g128": CONFIGS / "gemma4-g128.json",
    "q3-eagle3": DATA / "drafters" / "q3-eagle3",
    "q3-eagle": DATA / "drafters" / "q3-eagle",
    "g4-eagle3": DATA / "drafters" / "g4-eagle3",
}

BASE = ["--max-model-len", "4096", "--max-num-batched-tokens", "4096", "--kv-cache-memory-bytes", "2000000000"]
FA = ["--attention-backend", "FLASH_ATTN"]
H100 = "H100"


def _spec(method: str, drafter: str | None = None, backend: str | None = None) -> list[str]:
    """``--speculative-config`` for ``method`` with ``drafter`` (a :data:`MODELS` name, put in place of
    :data:`DRAFTER_TOKEN` by :func:`drafter_argv`) and the drafter's own ``attention_backend``."""
    spec: dict[str, object] = {"method": method, "num_speculative_tokens": 2}
    if drafter is not None:
        spec["model"] = f"{DRAFTER_TOKEN}{drafter}"
    if backend is not None:
        spec["attention_backend"] = backend
    return ["--speculative-config", json.dumps(spec)]


#: a drafter's directory in the flags: ``<drafter>NAME`` (:data:`MODELS`' name)
DRAFTER_TOKEN = "<drafter>"
#: the SM 11.0 row of ``gpus.toml``
THOR = "Jetson AGX Thor"

#: case id -> (model, flags, GPU, FlashInfer arm of ``run_oracle_as.py``: ``cubin`` as vLLM's images,
#: ``nvcc-offline`` without flashinfer-cubin, which dryboot is told with ``--no-flashinfer-cubin``)
CASES: dict[str, tuple[str, list[str], str, str]] = {
    "gemma3-fa": ("gemma3-text", [*BASE, *FA], "B200", "cubin"),
    "gemma3-fa-b300": ("gemma3-text", [*BASE, *FA], "B300", "cubin"),
    "gemma3-default": ("gemma3-text", BASE, "B200", "cubin"),
    "gemma3-fa-bs16": ("gemma3-text", [*BASE, *FA, "--block-size", "16"], "B200", "cubin"),
    "gemma3-fa-bs256": ("gemma3-text", [*BASE, *FA, "--block-size", "256"], "B200", "cubin"),
    "gemma3-fa-fp8": ("gemma3-text", [*BASE, *FA, "--kv-cache-dtype", "fp8"], "B200", "cubin"),
    "qwen3-fa": ("qwen3-hd256", [*BASE, *FA], "B200", "cubin"),
    "qwen3-fa-tp8dcp2": ("qwen3-hd256", [*BASE, *FA, "-tp", "8", "-dcp", "2"], "B200", "cubin"),
    "qwen3-fa-softcapkey": ("qwen3-hd256-softcapkey", [*BASE, *FA], "B200", "cubin"),
    "qwen3-fa-bs384": ("qwen3-hd256", [*BASE, *FA, "--block-size", "384"], "B200", "cubin"),
    "gemma2-fa-softcap": ("gemma2-softcap", [*BASE, *FA], "B200", "cubin"),
    "sinks-fa": ("gpt-oss-hd256", [*BASE, *FA], "B200", "cubin"),
    "sinks-default-nocubin": ("gpt-oss-hd256", BASE, "B200", "nvcc-offline"),
    "qwen35-fa": ("qwen3.5-27b", [*BASE, *FA], "B200", "cubin"),
    "qwen35-default": ("qwen3.5-27b", BASE, "B200", "cubin"),
    "qwen35-fa-bs256": ("qwen3.5-27b", [*BASE, *FA, "--block-size", "256"], "B200", "cubin"),
    "qwen35-fa-mtp": (
        "qwen3.5-27b",
        [*BASE, *FA, "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}'],
        "B200",
        "cubin",
    ),
    "qnext-fa": ("qwen3-next", [*BASE, *FA], "B200", "cubin"),
    "gemma4-fa-lmonly": ("gemma4-mixed", [*BASE, *FA, "--language-model-only"], "B200", "cubin"),
    "g4g128-fa-lmonly": ("gemma4-g128", [*BASE, *FA, "--language-model-only"], "B200", "cubin"),
    "g4g128-default-lmonly": ("gemma4-g128", [*BASE, "--language-model-only"], "B200", "cubin"),
    "g4g128-fa-lmonly-bs256": (
        "gemma4-g128",
        [*BASE, *FA, "--language-model-only", "--block-size", "256"],
        "B200",
        "cubin",
    ),
    # SM 11.0 (Jetson AGX Thor): FA4 is not FlashAttention's default there (get_flash_attn_version: SM 10.x only)
    "thor-qwen3-default": ("qwen3-hd256", BASE, THOR, "cubin"),
    "thor-qwen3-fa": ("qwen3-hd256", [*BASE, *FA], THOR, "cubin"),
    "thor-qwen3-fp8": ("qwen3-hd256", [*BASE, "--kv-cache-dtype", "fp8"], THOR, "cubin"),
    "thor-qwen35-default": ("qwen3.5-27b", BASE, THOR, "cubin"),
    "thor-sinks-default": ("gpt-oss-hd256", BASE, THOR, "cubin"),
    "thor-gemma4-lmonly": ("gemma4-mixed", [*BASE, "--language-model-only"], THOR, "cubin"),
    # drafters beside a head-256 target: FlashAttention asked without a layer's spec reads the engine's
    # (the target's) model config, whichever model the layer is the drafter's
    "q3-fa-eagle3": ("qwen3-hd256", [*BASE, *FA, *_spec("eagle3", "q3-eagle3")], "B200", "cubin"),
    "q3-fa-eagle3-dfa": ("qwen3-hd256", [*BASE, *FA, *_spec("eagle3", "q3-eagle3", "FLASH_ATTN")], "B200", "cubin"),
    "q3-default-eagle3-dfa": ("qwen3-hd256", [*BASE, *_spec("eagle3", "q3-eagle3", "FLASH_ATTN")], "B200", "cubin"),
    "q3-default-eagle3-dfa-bs16": (
        "qwen3-hd256",
        [*BASE, "--block-size", "16", *_spec("eagle3", "q3-eagle3", "FLASH_ATTN")],
        "B200",
        "cubin",
    ),
    "q3-fa-eagle-dfa": ("qwen3-hd256", [*BASE, *FA, *_spec("eagle", "q3-eagle", "FLASH_ATTN")], "B200", "cubin"),
    "q3-fa-eagle3-dfa-h100": ("qwen3-hd256", [*BASE, *FA, *_spec("eagle3", "q3-eagle3", "FLASH_ATTN")], H100, "cubin"),
    "qwen35-default-mtp-dfa": ("qwen3.5-27b", [*BASE, *_spec("mtp", backend="FLASH_ATTN")], "B200", "cubin"),
    "g4g128-fa-lmonly-eagle3-dfa": (
        "gemma4-g128",
        [*BASE, *FA, "--language-model-only", *_spec("eagle3", "g4-eagle3", "FLASH_ATTN")],
        "B200",
        "cubin",
    ),
}


#: the cases whose answer the kernel does not change, kept as controls (dryboot before the kernel was modelled
#: agreed on them): FlashInfer, the default on a B200, serves a head of 256; a quantized cache or decode context
#: parallelism keeps FlashAttention's 16-multiples (the fp8 cache then refused: FA2 stores none); 0.29.0 / 0.30.0
#: ask no layer's spec (a soft-capped Gemma-2 and Gemma-4's sliding layers keep 16); 0.27.1 / 0.28.0 have no
#: such kernel. Every other case and release failed before (a refusal by name or a block of 16).
CONTROLS = {
    "gemma3-default": C_ALL,
    "qwen35-default": C_ALL,
    "gemma3-fa-fp8": C_ALL,
    "qwen3-fa-tp8dcp2": C_ALL,
    "gemma2-fa-softcap": ("0.29.0", "0.30.0"),
    "gemma4-fa-lmonly": ("0.29.0", "0.30.0"),
    "gemma3-fa": EARLIER,
    "qwen35-fa": EARLIER,
    # the drafters: on an H100 no head-256 kernel; on 0.29.0 the V2 runner's EAGLE / MTP drafter keeps the
    # target's backend (FlashInfer), whatever the speculative config names; 0.29.0 / 0.30.0 choose the block
    # from the target's backend alone and group the MTP layer with the target's (dryboot, reading the MTP
    # module's attention_backend nowhere, agreed by chance)
    "q3-fa-eagle3-dfa-h100": C_ALL,
    "q3-default-eagle3-dfa": ("0.29.0",),
    "q3-default-eagle3-dfa-bs16": ("0.29.0",),
    "qwen35-default-mtp-dfa": ("0.29.0", "0.30.0"),
}


def drafter_argv(argv: list[str], models: dict[str, str]) -> list[str]:
    """``argv`` with each :data:`DRAFTER_TOKEN` name as that model's materialized directory (``models``)."""
    out = []
    for a in argv:
        for name, where in models.items():
            a = a.replace(f'{DRAFTER_TOKEN}{name}"', f'{where}"')
        out.append(a)
    return out


def dryboot_flags(cid: str, models: dict[str, str]) -> list[str]:
    """The case's flags as dryboot takes them: its GPU, and no flashinfer-cubin on that arm."""
    _, argv, gpu, arm = CASES[cid]
    return [*drafter_argv(argv, models), "--gpu", gpu, *(["--no-flashinfer-cubin"] if arm != "cubin" else [])]


def record_path(version: str) -> Path:
    return DATA / f"vllm-{version}.json"
