"""Write vLLM 0.28.0 boot logs for ``dryboot check-log``'s tests, with vLLM's own code.

Run with a vLLM 0.28.0 venv's python (``scripts/fidelity-env.sh``, plus ``fastapi`` and
``partial-json-parser``, which the server's argument parser imports):

    python tests/checklog/vllm_log_writer.py tests/data/checklog

dryboot never imports this file and this file never imports dryboot: every line and figure in
the logs is vLLM's. Each scenario runs as ``vllm serve`` runs, in vLLM's processes:

* **APIServer** (this process, ``decorate_logs("APIServer")``): vLLM's CLI parser
  (``make_arg_parser``) on the scenario's argv, ``log_version_and_model`` and
  ``log_non_default_args`` (the logo and the ``non-default args: {...}`` line), then
  ``AsyncEngineArgs.create_engine_config`` (the HF config class reading config.json from a
  Hugging Face cache laid out in a temporary directory, offline; ModelConfig, SchedulerConfig,
  the architecture's config hooks: "Resolved architecture", "Using max model len", "Chunked
  prefill is enabled", "Mamba cache mode is set to ...").
* **EngineCore** (a forked process named as vLLM names it; ``decorate_logs()``): "Initializing a
  V1 LLM engine (v0.28.0) with config: <VllmConfig>", then the workers, then
  ``get_kv_cache_configs`` (padding layers; the not-enough-memory ``ValueError``, logged by
  ``logger.exception("EngineCore failed to start.")`` with its traceback, as
  ``EngineCoreProc.run_engine_core`` does), ``generate_scheduler_kv_cache_config`` and
  ``update_kv_cache_capacity`` ("GPU KV cache size ... Maximum concurrency").
* **Workers**: with TP = 1 the worker lives in the EngineCore process (``UniProcExecutor``); with
  TP = 2 two forked processes ``Worker_TP0`` / ``Worker_TP1`` (``decorate_logs`` with
  ``WorkerProc``'s names) run concurrently, so their lines interleave. Each calls
  ``current_platform.update_block_size_for_backend`` (the hybrid attention block and mamba
  padding lines) and states its KV budget: "Available KV cache memory: <format_gib> GiB"
  (``Worker.determine_available_memory`` after profiling) or, with ``--kv-cache-memory-bytes``,
  the "reserved ... GiB memory for KV Cache as specified by kv_cache_memory_bytes" line.

Messages a worker's or the engine's own code prints but that cannot run here (no GPU) are emitted
through vLLM's logger with vLLM's message template, read from vLLM's source file at the line the
record names (``_emit`` checks the template is there): "Available KV cache memory", the reserved
line, "Initializing a V1 LLM engine", "EngineCore failed to start.". Their arguments are the
scenario's KV budget (an input), vLLM's ``format_gib`` of it, vLLM's ``VllmConfig``.

What stands in for the GPU (nothing else): vLLM's compiled kernels are absent (empty modules and
kernel namespaces that raise if called, as in ``tests/fidelity``); ``current_platform`` is a
subclass of vLLM's ``NonNvmlCudaPlatform`` answering as an H200 (SM 9.0, 141 GiB) whose
attention backend for the model is FLASH_ATTN (what vLLM selects for these models on an H200);
the model registry inspects classes in-process; layers are described, not built: each layer's KV
spec comes from vLLM's own ``Attention.get_kv_cache_spec`` / ``MambaBase.get_kv_cache_spec`` called
on a stand-in holding exactly the attributes those methods read (heads, head size, KV dtype from
vLLM's ``ModelConfig``; mamba state shapes and dtypes from the real model class's
``get_mamba_state_shape_from_config`` / ``get_mamba_state_dtype_from_config``), then
``GPUModelRunner.get_kv_cache_spec``'s two steps (``indexes_kv_by_block_stride``,
``customize_spec``). Which layers exist is read from config.json (``layer_types``,
``hybrid_override_pattern``; an MTP module adds one full-attention layer, checked against the
recorded figures of ``tests/data/e2e-min/README.md`` case 1b). Records of Triton's absence (a CPU
venv artefact that no GPU host prints) are dropped.

Besides the logs, ``figures.json`` records each scenario's inputs and what vLLM computed
(blocks, tokens, concurrency, block sizes, errors), for the tests to assert against.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
import types
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "examples" / "models"
REVISION = "5bd5e8c35e3a7a1b0f1f6b1f2c7e8d9a0b1c2d3e"

#: Scenarios: the ``vllm serve`` argv, the KV budget each worker measured (bytes), colours.
SCENARIOS: dict[str, dict[str, Any]] = {
    "tp2": {
        "hub_id": "Qwen/Qwen3-Next-80B-A3B-Thinking",
        "config": "Qwen3-Next-80B-A3B-Thinking.config.json",
        "argv": [
            "--tensor-parallel-size",
            "2",
            "--max-model-len",
            "262144",
            "--gpu-memory-utilization",
            "0.92",
            "--port",
            "8000",
            "--served-model-name",
            "qwen3-next",
        ],
        "budgets": [55_771_432_345, 55_749_183_104],  # Worker_TP0, Worker_TP1
    },
    "oom": {
        "hub_id": "Qwen/Qwen3-Next-80B-A3B-Thinking",
        "config": "Qwen3-Next-80B-A3B-Thinking.config.json",
        "argv": ["--tensor-parallel-size", "2", "--max-model-len", "262144", "--gpu-memory-utilization", "0.58"],
        "budgets": [2_590_842_617, 2_590_512_004],
    },
    "mtp": {
        "hub_id": "Qwen/Qwen3-Next-80B-A3B-Thinking",
        "config": "Qwen3-Next-80B-A3B-Thinking.config.json",
        "argv": [
            "--max-model-len",
            "262144",
            "--kv-cache-memory-bytes",
            "42949672960",
            "--max-num-batched-tokens",
            "8192",
            "--speculative-config",
            '{"method": "mtp", "num_speculative_tokens": 3}',
        ],
        "budgets": None,  # --kv-cache-memory-bytes: the worker returns it verbatim
        # tests/data/e2e-min/README.md case 1b: vLLM 0.28.0's recorded figures for these flags
        "recorded": {"block_size": 560, "num_blocks": 2880, "tokens": 1559865},
    },
    "colour": {
        "hub_id": "nvidia/Nemotron-H-56B-Base-8K",
        "config": "Nemotron-H-56B-Base-8K.config.json",
        "argv": ["--max-model-len", "8192"],
        "budgets": [23_363_854_131],
        "env": {"VLLM_LOGGING_COLOR": "1"},
    },
}
#: The edited copy: mtp.log with its "GPU KV cache size" line replaced by the one vLLM logs for
#: this budget (39.5 GiB instead of 40 GiB), everything else unchanged.
EDITED = {"from": "mtp", "kv_cache_memory_bytes": 42_412_802_048}

TEMPLATES = {
    # (file under vllm/, template's first line as in the source)
    "available": ("v1/worker/gpu_worker.py", '"Available KV cache memory: %s GiB",'),
    "init_engine": ("v1/engine/core.py", '"Initializing a V1 LLM engine (v%s) with config: %s",'),
    "failed": ("v1/engine/core.py", 'logger.exception("EngineCore failed to start.")'),
    "reserved": ("v1/worker/gpu_worker.py", '"correspondingly."'),  # then logger.info(msg)
}


# ----------------------------------------------------------------------------- stand-ins


class _AbsentKernel:
    def __init__(self, name: str) -> None:
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"kernel {self.__name__} is absent (CPU log writer)")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _AbsentKernel(f"{self.__name__}.{name}")


#: dryboot's boot stand-ins, loaded by path (this script runs in the vLLM venv, without dryboot)
ENGINE_START = Path(__file__).resolve().parents[2] / "src" / "dryboot" / "boot" / "engine_start.py"
_KEEP: list[Any] = []


def _declare_torchvision_ops() -> None:
    """PyPI's torchvision (a CUDA build) cannot load its op library next to CPU torch; the
    transformers import vLLM's config makes reaches it: declare its two op schemas as the boot
    does (``engine_start._declare_torchvision_ops``)."""
    spec = importlib.util.spec_from_file_location("dryboot_engine_start", ENGINE_START)
    assert spec is not None and spec.loader is not None
    es = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = es  # its dataclasses look their module up
    spec.loader.exec_module(es)
    _KEEP.append(es._declare_torchvision_ops())


def _install() -> types.SimpleNamespace:
    for mod in ("vllm._C_stable_libtorch", "vllm.vllm_flash_attn._vllm_fa2_C", "vllm.vllm_flash_attn._vllm_fa3_C"):
        sys.modules[mod] = types.ModuleType(mod)
    _declare_torchvision_ops()
    import torch
    import vllm.platforms as platforms
    from vllm.platforms.cuda import NonNvmlCudaPlatform
    from vllm.platforms.interface import DeviceCapability
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    class StandInH200(NonNvmlCudaPlatform):
        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> DeviceCapability:
            return DeviceCapability(9, 0)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return "NVIDIA H200"

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return 141 << 30

        @classmethod
        def device_count(cls) -> int:
            return 8

        @classmethod
        def is_pin_memory_available(cls) -> bool:
            return False

        @classmethod
        def _find_non_ssm_backend(cls, vllm_config: Any) -> Any:
            # the real platform walks the built model's attention layers
            return AttentionBackendEnum.FLASH_ATTN.get_class()

    platforms._current_platform = StandInH200()  # type: ignore[attr-defined]
    import vllm._custom_ops as custom_ops

    custom_ops.cutlass_scaled_mm_supports_fp8 = lambda c: c >= 89
    custom_ops.cutlass_scaled_mm_supports_block_fp8 = lambda c: c >= 90
    custom_ops.cutlass_scaled_mm_supports_fp4 = lambda c: c >= 100
    for ns in (
        "_C",
        "_C_cache_ops",
        "_moe_C",
        "_C_custom_ar",
        "_C_cuda_utils",
        "_vllm_fa2_C",
        "_vllm_fa3_C",
        "_flashmla_C",
        "_flashmla_extension_C",
    ):
        setattr(torch.ops, ns, _AbsentKernel(f"torch.ops.{ns}"))
    import vllm.config.vllm as vllm_config_module

    vllm_config_module.HAS_TRITON = True
    from vllm.model_executor.models import registry

    registry._run_in_subprocess = lambda fn: fn()  # type: ignore[assignment]

    import vllm
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.openai.cli_args import make_arg_parser
    from vllm.entrypoints.serve.utils.api_utils import log_non_default_args, log_version_and_model
    from vllm.logger import init_logger
    from vllm.model_executor.layers.attention.attention import Attention
    from vllm.model_executor.layers.mamba.abstract import MambaBase
    from vllm.platforms import current_platform
    from vllm.usage.usage_lib import UsageContext
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    from vllm.utils.mem_utils import format_gib
    from vllm.utils.system_utils import decorate_logs
    from vllm.utils.torch_utils import kv_cache_dtype_str_to_dtype
    from vllm.v1.attention.backend import AttentionType
    from vllm.v1.core import kv_cache_utils as kcu

    return types.SimpleNamespace(
        vllm=vllm,
        AsyncEngineArgs=AsyncEngineArgs,
        make_arg_parser=make_arg_parser,
        log_non_default_args=log_non_default_args,
        log_version_and_model=log_version_and_model,
        init_logger=init_logger,
        Attention=Attention,
        MambaBase=MambaBase,
        current_platform=current_platform,
        UsageContext=UsageContext,
        FlexibleArgumentParser=FlexibleArgumentParser,
        format_gib=format_gib,
        decorate_logs=decorate_logs,
        kv_cache_dtype_str_to_dtype=kv_cache_dtype_str_to_dtype,
        AttentionType=AttentionType,
        kcu=kcu,
    )


class _DropTriton(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "riton" not in record.getMessage()


# ----------------------------------------------------------------------------- emitting


def _template_line(rel: str, first_line: str) -> tuple[str, int]:
    """(absolute path, line of the logging call) of a template in vLLM's source."""
    import vllm

    path = Path(vllm.__file__).parent / rel
    lines = path.read_text().splitlines()
    for i, text in enumerate(lines):
        if first_line in text:
            for j in range(i, max(i - 6, -1), -1):
                if "logger." in lines[j]:
                    return str(path), j + 1
            for j in range(i, min(i + 4, len(lines))):  # a message built first, logged after
                if "logger." in lines[j]:
                    return str(path), j + 1
            raise SystemExit(f"no logger call before {first_line!r} in {rel}")
    raise SystemExit(f"template {first_line!r} not in vllm/{rel}: not vLLM 0.28.0?")


def _emit(logger_name: str, key: str, msg: str, *args: Any, level: int = logging.INFO, exc_info: Any = None) -> None:
    """Log ``msg % args`` through vLLM's logger as if from vLLM's own call site."""
    rel, first = TEMPLATES[key]
    path, lineno = _template_line(rel, first)
    logger = logging.getLogger(logger_name)
    record = logger.makeRecord(logger.name, level, path, lineno, msg, args, exc_info, func=None)
    logger.handle(record)


# ----------------------------------------------------------------------------- layers


def _layer_kinds(hf: Any, num_mtp: int) -> list[tuple[str, str]]:
    """(layer name, "attention"|"mamba") in module order, from the HF config as read by vLLM."""
    out: list[tuple[str, str]] = []
    if getattr(hf, "hybrid_override_pattern", None):  # Nemotron-H: M mamba, * attention, - MLP
        for i, c in enumerate(hf.hybrid_override_pattern):
            if c == "M":
                out.append((f"model.layers.{i}.mixer", "mamba"))
            elif c == "*":
                out.append((f"model.layers.{i}.mixer.attn", "attention"))
    elif getattr(hf, "layer_types", None):  # Qwen3-Next: full_attention / linear_attention
        for i, t in enumerate(hf.layer_types):
            if t not in ("full_attention", "linear_attention"):
                raise SystemExit(f"layer {i}: unexpected layer type {t!r}")
            kind = "attention" if t == "full_attention" else "mamba"
            out.append((f"model.layers.{i}.{'self_attn.attn' if kind == 'attention' else 'linear_attn'}", kind))
    else:
        raise SystemExit("config has neither layer_types nor hybrid_override_pattern")
    for i in range(num_mtp):
        out.append((f"mtp.layers.{i}.self_attn.attn", "attention"))
    return out


def _kv_cache_specs(V: Any, cfg: Any) -> dict[str, Any]:
    """Each layer's spec as vLLM's layer methods and ``GPUModelRunner.get_kv_cache_spec`` build it."""
    mc, cc, pc = cfg.model_config, cfg.cache_config, cfg.parallel_config
    backend = V.current_platform._find_non_ssm_backend(cfg)
    spec_cfg = cfg.speculative_config
    num_mtp = 1 if spec_cfg is not None and spec_cfg.method == "mtp" else 0
    from vllm.model_executor.models import ModelRegistry

    model_cls, _ = ModelRegistry.resolve_model_cls(mc.architectures, model_config=mc)
    shapes = model_cls.get_mamba_state_shape_from_config(cfg)
    dtypes = model_cls.get_mamba_state_dtype_from_config(cfg)
    mamba_type = "gdn_attention" if "Qwen3Next" in mc.architecture else "mamba2"
    from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum

    mamba_enum = {"gdn_attention": MambaAttentionBackendEnum.GDN_ATTN, "mamba2": MambaAttentionBackendEnum.MAMBA2}
    attn_self = types.SimpleNamespace(
        attn_type=V.AttentionType.DECODER,
        kv_cache_dtype=cc.cache_dtype,
        sliding_window=None,
        attn_backend=backend,
        num_kv_heads=mc.get_num_kv_heads(pc),
        head_size=mc.get_head_size(),
        head_size_v=mc.get_head_size(),
        kv_cache_torch_dtype=V.kv_cache_dtype_str_to_dtype(cc.cache_dtype, mc),
    )
    mamba_self = types.SimpleNamespace(
        get_state_shape=lambda: shapes, get_state_dtype=lambda: dtypes, mamba_type=mamba_enum[mamba_type]
    )
    from vllm.config.vllm import set_current_vllm_config

    specs: dict[str, Any] = {}
    for name, kind in _layer_kinds(mc.hf_config, num_mtp):
        if kind == "attention":
            spec = V.Attention.get_kv_cache_spec(attn_self, cfg)
            with set_current_vllm_config(cfg):
                indexes = backend.indexes_kv_by_block_stride()
            spec = backend.customize_spec(replace(spec, indexes_kv_by_block_stride=indexes))
        else:
            spec = V.MambaBase.get_kv_cache_spec(mamba_self, cfg)
        specs[name] = spec
    return specs


# ----------------------------------------------------------------------------- processes


def _worker(V: Any, cfg: Any, budget: int | None, start: Any, rank: int | None) -> None:
    """What a GPU worker logs about the KV cache: block sizes, then its budget."""
    if rank is not None:
        V.decorate_logs(f"Worker_TP{rank}")
        start.wait()
    V.current_platform.update_block_size_for_backend(cfg)
    time.sleep(0.02)
    if budget is None:
        kv = cfg.cache_config.kv_cache_memory_bytes
        free = (141 << 30) - (1 << 30)  # the stand-in H200's free memory at start (not a KV figure)
        msg = (
            f"Initial free memory {V.format_gib(free)} "
            f"GiB, reserved {V.format_gib(kv)} GiB memory for "
            "KV Cache as specified by kv_cache_memory_bytes config and "
            "skipped memory profiling. This does not respect the "
            "gpu_memory_utilization config. Only use kv_cache_memory_bytes "
            "config when you want manual control of KV cache memory "
            "size. If OOM'ed, check the difference of initial free "
            "memory between the current run and the previous run "
            "where kv_cache_memory_bytes is suggested and update it "
            "correspondingly."
        )
        _emit("vllm.v1.worker.gpu_worker", "reserved", msg)
    else:
        _emit("vllm.v1.worker.gpu_worker", "available", "Available KV cache memory: %s GiB", V.format_gib(budget))
    sys.stdout.flush()


def _engine_core(V: Any, cfg: Any, budgets: list[int] | None, out_path: str) -> None:
    V.decorate_logs()
    log = "vllm.v1.engine.core"
    _emit(log, "init_engine", "Initializing a V1 LLM engine (v%s) with config: %s", V.vllm.__version__, cfg)
    tp = cfg.parallel_config.tensor_parallel_size
    figures: dict[str, Any] = {}
    try:
        if tp == 1:
            _worker(V, cfg, budgets[0] if budgets else None, None, None)
        else:
            ctx = mp.get_context("fork")
            start = ctx.Event()
            procs = [
                ctx.Process(
                    target=_worker, args=(V, cfg, budgets[r] if budgets else None, start, r), name=f"Worker_TP{r}"
                )
                for r in range(tp)
            ]
            for p in procs:
                p.start()
            start.set()
            for p in procs:
                p.join()
            # the engine's config gets the workers' block sizes (quietly: the workers logged them)
            vllm_logger = logging.getLogger("vllm")
            level = vllm_logger.level
            vllm_logger.setLevel(logging.ERROR)
            V.current_platform.update_block_size_for_backend(cfg)
            vllm_logger.setLevel(level)
        cc = cfg.cache_config
        figures.update(
            block_size=cc.block_size,
            mamba_block_size=cc.mamba_block_size,
            mamba_page_size_padded=cc.mamba_page_size_padded,
        )
        specs = _kv_cache_specs(V, cfg)
        available = budgets if budgets else [cc.kv_cache_memory_bytes] * tp
        figures["available_memory"] = available
        try:
            configs = V.kcu.get_kv_cache_configs(cfg, [specs] * tp, available)
        except ValueError as exc:
            figures["error"] = str(exc)
            _emit(log, "failed", "EngineCore failed to start.", level=logging.ERROR, exc_info=sys.exc_info())
            sys.stdout.flush()
            raise
        sched = V.kcu.generate_scheduler_kv_cache_config(configs)
        cfg.cache_config.num_gpu_blocks = sched.num_blocks
        cfg.cache_config.block_size = min(g.kv_cache_spec.block_size for g in sched.kv_cache_groups)
        V.kcu.update_kv_cache_capacity(cfg, sched)
        tokens, concurrency = V.kcu.get_kv_cache_capacity(cfg, sched)
        figures.update(
            num_blocks=sched.num_blocks,
            tokens=tokens,
            concurrency=concurrency,
            max_model_len=cfg.model_config.max_model_len,
            groups=[
                [
                    type(g.kv_cache_spec).__name__,
                    g.kv_cache_spec.block_size,
                    g.kv_cache_spec.page_size_bytes,
                    len(g.layer_names),
                ]
                for g in sched.kv_cache_groups
            ],
        )
    finally:
        Path(out_path).write_text(json.dumps(figures, default=str))
        sys.stdout.flush()


def run_scenario(name: str, hub_cache: str, figures_path: str, override_kv: int | None) -> int:
    """One ``vllm serve`` boot, in this process (APIServer) and forked ones."""
    s = SCENARIOS[name]
    V = _install()
    for handler in logging.getLogger("vllm").handlers:
        handler.addFilter(_DropTriton())
    V.decorate_logs("APIServer", skip_if_decorated=True)
    argv = [s["hub_id"], *s["argv"]]
    if override_kv is not None:
        argv = [a if a != "42949672960" else str(override_kv) for a in argv]
    parser = V.make_arg_parser(V.FlexibleArgumentParser())
    args = parser.parse_args(argv)
    args.model = args.model_tag  # vllm/entrypoints/cli/serve.py
    server_logger = V.init_logger("vllm.entrypoints.openai.api_server")
    V.log_version_and_model(server_logger, V.vllm.__version__, args.model)
    V.log_non_default_args(args)
    cfg = V.AsyncEngineArgs.from_cli_args(args).create_engine_config(V.UsageContext.OPENAI_API_SERVER)
    sys.stdout.flush()
    ctx = mp.get_context("fork")
    engine = ctx.Process(target=_engine_core, args=(V, cfg, s["budgets"], figures_path), name="EngineCore")
    engine.start()
    engine.join()
    sys.stdout.flush()
    if engine.exitcode != 0:
        # vllm/v1/engine/utils.py: wait_for_engine_startup
        raise RuntimeError(
            "Engine core initialization failed. See root cause above. "
            f"Failed core proc(s): {{'EngineCore': {engine.exitcode}}}"
        )
    return 0


# ----------------------------------------------------------------------------- driver


def _hub_cache(root: Path) -> Path:
    """A Hugging Face cache holding each scenario's config.json at revision REVISION (main)."""
    hub = root / "hub"
    for s in SCENARIOS.values():
        org, name = s["hub_id"].split("/")
        repo = hub / f"models--{org}--{name}"
        snap = repo / "snapshots" / REVISION
        snap.mkdir(parents=True, exist_ok=True)
        (snap / "config.json").write_bytes((MODELS / s["config"]).read_bytes())
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(REVISION)
    return hub


def _boot(name: str, hub: Path, tmp: Path, override_kv: int | None = None) -> tuple[str, dict[str, Any], int]:
    figures_path = tmp / f"{name}-{override_kv}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "HF_"))}
    env.update(
        HF_HUB_CACHE=str(hub),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
        VLLM_CACHE_ROOT=str(tmp / "vllm-cache"),
        PYTHONUNBUFFERED="1",
    )
    env.update(SCENARIOS[name].get("env", {}))
    cmd = [sys.executable, __file__, "--scenario", name, str(hub), str(figures_path)]
    if override_kv is not None:
        cmd.append(str(override_kv))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=tmp, timeout=900)
    # Triton's absence is a CPU-venv artefact (logged at import, before any filter): dropped
    text = "".join(line for line in proc.stdout.decode().splitlines(keepends=True) if "riton" not in line)
    figures = json.loads(figures_path.read_text()) if figures_path.exists() else {}
    return text, figures, proc.returncode


def main(out_dir: str) -> int:
    import vllm

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"vllm_version": vllm.__version__, "revision": REVISION, "scenarios": {}}
    with tempfile.TemporaryDirectory(prefix="vllm-log-writer-") as t:
        tmp = Path(t)
        hub = _hub_cache(tmp)
        for name, s in SCENARIOS.items():
            text, figures, rc = _boot(name, hub, tmp)
            expect_fail = name == "oom"
            if (rc != 0) != expect_fail:
                sys.stderr.write(text[-6000:])
                raise SystemExit(f"scenario {name}: exit {rc}")
            if "recorded" in s:
                got = {
                    k: figures.get(v)
                    for k, v in (("block_size", "block_size"), ("num_blocks", "num_blocks"), ("tokens", "tokens"))
                }
                if got != s["recorded"]:
                    raise SystemExit(f"scenario {name}: {got} != the recorded e2e-min figures {s['recorded']}")
            (out / f"{name}.log").write_text(text)
            record["scenarios"][name] = {
                "model": s["hub_id"],
                "config": f"examples/models/{s['config']}",
                "argv": s["argv"],
                "budgets": s["budgets"],
                "exit_code": rc,
                "vllm": figures,
            }
            print(f"{name}.log: {len(text.splitlines())} lines, exit {rc}", file=sys.stderr)
        base = EDITED["from"]
        text, figures, rc = _boot(base, hub, tmp, EDITED["kv_cache_memory_bytes"])
        if rc != 0:
            raise SystemExit(f"edited: exit {rc}")
        new_line = next(line for line in text.splitlines() if "GPU KV cache size:" in line)
        original = (out / f"{base}.log").read_text()
        old_line = next(line for line in original.splitlines() if "GPU KV cache size:" in line)
        marker = "GPU KV cache size:"
        edited = original.replace(old_line, old_line[: old_line.index(marker)] + new_line[new_line.index(marker) :])
        (out / "edited.log").write_text(edited)
        record["edited"] = {
            "from": f"{base}.log",
            "kv_cache_memory_bytes": EDITED["kv_cache_memory_bytes"],
            "vllm": figures,
        }
    (out / "figures.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    names = subprocess.run(
        [sys.executable, __file__, "--serve-args"],
        capture_output=True,
        text=True,
        check=True,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("VLLM_")}, "VLLM_CONFIGURE_LOGGING": "0"},
    ).stdout
    (out / "vllm-serve-args.txt").write_text(names)
    return 0


def serve_args() -> int:
    """Print every argument name of ``vllm serve``'s parser (the keys a non-default args line can hold)."""
    V = _install()
    parser = V.make_arg_parser(V.FlexibleArgumentParser())
    for name in sorted(vars(parser.parse_args([]))):
        print(name)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--serve-args":
        sys.exit(serve_args())
    if len(sys.argv) >= 2 and sys.argv[1] == "--scenario":
        name, hub_dir, figs = sys.argv[2], sys.argv[3], sys.argv[4]
        kv = int(sys.argv[5]) if len(sys.argv) > 5 else None
        sys.exit(run_scenario(name, hub_dir, figs, kv))
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
