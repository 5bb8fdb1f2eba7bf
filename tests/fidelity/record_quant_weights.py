"""Record what vLLM holds for a quantized model's weights after ``process_weights_after_loading``.

    $DRYBOOT_VLLM_PYTHON tests/fidelity/record_quant_weights.py [NAME...]

Runs *inside* a boot environment's interpreter (no dryboot import). For every published config of
``data/weights/quant-configs/`` on each GPU of :data:`GPUS` under each TP of :data:`TPS`: the
stand-ins of ``engine_start.py`` (the GPU faked with the row's capability and SM count, kernels
absent, distributed groups of the configured sizes) plus ``quant_fakes.py`` (the repack kernels'
schemas declared so vLLM's own ``register_fake`` shape functions register); vLLM's CLI parser,
``create_engine_config``, the model built by vLLM's loader on the meta device
(``initialize_model``), then vLLM's own ``model_loader.utils.process_weights_after_loading`` (each
quantized layer's repacking for the kernel vLLM chose). Counted: every storage still held on the
meta device, created since before the build, rounded to the CUDA allocator's 512-byte blocks
(``quant_fakes.allocated_since``), and the kernel each layer class chose (vLLM's own
``_kernel_backends_being_used`` sets / ``kernel`` attributes).

Environment: ``RECORD_GPUS`` (names, comma-separated) and ``RECORD_TPS`` restrict the cases,
``RECORD_OUT`` writes elsewhere, ``RECORD_AGAIN`` re-records cases already in the file,
``RECORD_TRACE`` prints each failure's traceback, ``RECORD_ARGV`` (a JSON list) adds flags after
the TP (part of the case id), ``RECORD_CASES`` (a recorded file) records only
the case ids that file holds (another release's case list), ``RECORD_FAST`` skips the figure
before the post-load step (``built_allocated_bytes``: null), ``RECORD_DUMP`` prints the first MoE
layer's tensors after loading to stderr (``RECORD_DUMP=<suffix>``: the first module whose name
ends so; ``RECORD_DUMP=all``: every module), ``RECORD_SET`` picks another case set (``extra``,
``modelopt``, ``moe``, ``humming``, ``mxfp8``, ``fp8``, ``dsv4``, ``fp8gdn``, ``qwen4exp``, ``kimik3``, ``nemlatent``,
``nvfp4moe``, ``qwen3vl``, ``ficounter``, ``ficounterfam``, ``mlaws``, ``mlapf``, ``fp8rest``, ``sparsemla``,
``fp8ignore``, ``mm3hum``, ``nvfp4smla``, ``gptqempty``, ``bw33``, ``ossbf16``, ``humfp8``, ``sinksfam``, ``trtllm``,
``ctnvfp4a16``:
``quant_cases_<set>.py``; a set's ``checkpoint_dir`` writes its own checkpoints, its
``LOAD_WEIGHTS`` runs vLLM's loader over their tensors before the post-load step),
``RECORD_WORKSPACE`` sets up the worker's workspace manager before each case (as a set's
``WORKSPACE`` does; rows marked ``workspace``), ``DRYBOOT_HUMMING_PATH`` a folder
holding the unpacked ``humming-kernels`` wheel (put on ``sys.path``: vLLM 0.32 / 0.33 then pick Humming
where a CUDA install does; its imports of an absent ``triton`` / ``cuda-bindings`` stood in for before vLLM
first imports it, ``quant_fakes.humming_import_stand_ins``; each row records the package's version as ``humming``),
``VLLM_HAS_FLASHINFER_CUBIN`` (vLLM's own variable) answers that ``flashinfer-cubin`` is installed, as on vLLM's
images (FlashInfer's TRT-LLM attention usable: FlashInfer serves attention sinks on SM 10.x / 12.x; rows
marked ``flashinfer_cubin``; ``0``: not installed, as the offline oracle is without it, each case id
ending ``(no flashinfer-cubin)``).

Writes ``data/weights/quant-recorded-<vllm version>.json``: ``{"vllm", "cases": {id: {"config",
"gpu", "capability", "sm_count", "argv", "ok", "allocated_bytes", "storage_bytes", "kernels",
"error", "humming", "max_num_batched_tokens"}}}``. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
ENGINE_START = HERE.parents[1] / "src" / "dryboot" / "boot" / "engine_start.py"

#: name, capability, SM count (tests/data/gpus/gpus.toml)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("A100-80GB", (8, 0), 108),
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
    ("B200", (10, 0), 148),
)
TPS = (1, 2, 4)
#: GPUs recorded only when ``RECORD_GPUS`` names them (MXFP4's Marlin backend on SM 12.0)
EXTRA_GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("RTX 5090", (12, 0), 170),)

import importlib  # noqa: E402
import os  # noqa: E402

QUANT_CONFIGS = DATA / "quant-configs"
RECORDED_NAME = "quant-recorded-{version}.json"
if os.environ.get("RECORD_SET") in (
    "extra",
    "modelopt",
    "moe",
    "humming",
    "mxfp8",
    "dsv4",
    "fp8",
    "kvfp8",
    "fp8gdn",
    "llama4",
    "gemma4",
    "qwen4exp",
    "kimik3",
    "nemlatent",
    "qwen3vl",
    "nvfp4moe",
    "ficounter",
    "ficounterfam",
    "mlaws",
    "mlapf",
    "fp8rest",
    "sparsemla",
    "fp8ignore",
    "mm3hum",
    "nvfp4smla",
    "gptqempty",
    "bw33",
    "ossbf16",
    "humfp8",
    "sinksfam",
    "trtllm",
    "remotefam",
    "ctnvfp4a16",
):  # quant_cases_<set>.py
    sys.path.insert(0, str(HERE))
    _set = importlib.import_module(f"quant_cases_{os.environ['RECORD_SET']}")
    GPUS, TPS, QUANT_CONFIGS, RECORDED_NAME = _set.GPUS, _set.TPS, _set.CONFIGS, _set.RECORDED_NAME
    EXTRA_ARGV: tuple[str, ...] = getattr(_set, "EXTRA_ARGV", ())
    #: the GPU architectures (major) recorded with DeepGEMM present (quant_fakes.deep_gemm_stand_in)
    DEEP_GEMM: tuple[int, ...] = getattr(_set, "DEEP_GEMM", ())
    VALUE_ONLY_KERNELS: tuple[str, ...] = getattr(_set, "VALUE_ONLY_KERNELS", ())  # quant_fakes.VALUE_ONLY
    EXTRA_GPUS = getattr(_set, "EXTRA_GPUS", EXTRA_GPUS)  # the set's GPUs recorded only when named
    #: Kimi-K3's wrapper takes a GPU's branch of its tower cast (``is_meta_module`` answers False)
    GPU_CAST: bool = getattr(_set, "GPU_CAST", False)
    #: the worker's workspace manager set up (on the meta device) before each case, as
    #: ``Worker.init_device`` does before the model (the MLA backends' prefill workspace on SM 10.x)
    WORKSPACE: bool = getattr(_set, "WORKSPACE", False)
    #: the set's own checkpoint writer (cdir, tmp) -> directory, else :func:`checkpoint_dir`
    SET_CHECKPOINT_DIR: Any = getattr(_set, "checkpoint_dir", None)
    #: vLLM's loader run over the checkpoint's tensors (meta tensors of the header's shapes)
    LOAD_WEIGHTS: bool = getattr(_set, "LOAD_WEIGHTS", False)
else:
    VALUE_ONLY_KERNELS = ()
    GPU_CAST = WORKSPACE = LOAD_WEIGHTS = False
    SET_CHECKPOINT_DIR = None
    EXTRA_ARGV, DEEP_GEMM = (), ()
#: RECORD_WORKSPACE: the worker's workspace manager set up before each case in any set (each row
#: marked ``workspace``): FLASHMLA_SPARSE's ``__init__`` reserves it while the model is built
WORKSPACE = WORKSPACE or bool(os.environ.get("RECORD_WORKSPACE"))
if os.environ.get("RECORD_GPUS"):  # a subset, by name: "RTX 3090,H100"
    GPUS = tuple(g for g in GPUS + EXTRA_GPUS if g[0] in os.environ["RECORD_GPUS"].split(","))
if os.environ.get("RECORD_TPS"):
    TPS = tuple(int(t) for t in os.environ["RECORD_TPS"].split(","))


#: ``VLLM_HAS_FLASHINFER_CUBIN`` as the rows record it (``None``: not set)
CUBIN = None if os.environ.get("VLLM_HAS_FLASHINFER_CUBIN") is None else os.environ["VLLM_HAS_FLASHINFER_CUBIN"] != "0"


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


#: model types whose config classes tie the embeddings by default
GEMMA = ("gemma2", "gemma3", "gemma3_text")


#: the other decoder-block linear layers a GPTQ checkpoint of the MoE families quantizes (read by
#: vLLM's ``maybe_update_config`` as above): Gated DeltaNet projections (Qwen3-Next's, Qwen3.5's),
#: shared experts (Qwen's ``shared_expert``, DeepSeek / GLM's ``shared_experts``), MLA projections
MOE_FAMILY_LINEARS = (
    *(f"linear_attn.{n}" for n in ("in_proj_qkvz", "in_proj_ba", "in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a")),
    "linear_attn.out_proj",
    *(f"mlp.{s}.{n}" for s in ("shared_expert", "shared_experts") for n in ("gate_proj", "up_proj", "down_proj")),
    *(f"self_attn.{n}" for n in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj")),
)


#: Llama-4's decoder-block linear layers under their checkpoint names (``llama4.py``: the dense
#: MLP and the MoE block are the layer's ``feed_forward``; its routed experts per expert,
#: ``feed_forward.experts.<j>.*``, added per :func:`llama4_linears`)
LLAMA4_LINEARS = tuple(
    f"feed_forward.{s}{n}" for s in ("", "shared_expert.") for n in ("gate_proj", "up_proj", "down_proj")
)


def llama4_linears(config: dict[str, Any]) -> tuple[str, ...]:
    """The ``feed_forward`` linear layers a quantized Llama-4 text checkpoint holds per layer
    (``model_type`` ``llama4_text``; none for other models): dense, shared-expert and per-expert
    names, so that vLLM's ``maybe_update_config`` reads every one of them as quantized."""
    if config.get("model_type") != "llama4_text":
        return ()
    experts = int(config.get("num_local_experts", 0))
    per_expert = tuple(
        f"feed_forward.experts.{j}.{n}" for j in range(experts) for n in ("gate_proj", "up_proj", "down_proj")
    )
    return (*LLAMA4_LINEARS, *per_expert)


def checkpoint_dir(cdir: Path, tmp: Path) -> Path:
    """The directory vLLM is given: the config, and header-only safetensors naming the tensors a
    GPTQ-packed checkpoint holds (every decoder-block linear layer as ``qweight``/``qzeros`` I32,
    ``scales`` F16, ``g_idx`` I32; embedding, norms and head BF16). vLLM 0.28.0 reads which layers
    are quantized from the checkpoint's safetensors metadata (dtypes only; ``AutoGPTQConfig.
    maybe_update_config``) when ``modules_in_block_to_quantize`` is absent; shapes are [1]. A
    Llama-4 text config's layers are named as its checkpoint names them (:func:`llama4_linears`)."""
    config = json.loads((cdir / "config.json").read_text())
    d = tmp / cdir.name
    d.mkdir(parents=True, exist_ok=True)
    for f in cdir.iterdir():
        if f.suffix == ".json":
            (d / f.name).write_bytes(f.read_bytes())
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    off = 0

    def add(name: str, dt: str) -> None:
        nonlocal off
        nb = 2 if dt == "BF16" or dt == "F16" else 4
        header[name] = {"dtype": dt, "shape": [1], "data_offsets": [off, off + nb]}
        off += nb

    add("model.embed_tokens.weight", "BF16")
    add("model.norm.weight", "BF16")
    # a tied model's checkpoint holds no lm_head tensor (0.30+ unties the embeddings when it does,
    # then compares their values: ModelConfig.word_embeddings_untied_by_checkpoint); Gemma-2/3
    # configs tie by default, a wrapper's in its text_config
    text = config.get("text_config") or {}
    tied = config.get("tie_word_embeddings", text.get("tie_word_embeddings", str(config.get("model_type")) in GEMMA))
    if not tied:
        add("lm_head.weight", "BF16")
    # an MXFP4 (gpt-oss) checkpoint: its float tensors are bfloat16, as vLLM reads them for the
    # dtype; its experts' U8 blocks / scales are not read before loading
    mxfp4 = (config.get("quantization_config") or {}).get("quant_method") == "mxfp4"
    # a vision-language wrapper (its layers under text_config) gets no per-layer tensors: ModelOpt
    # reads no safetensors metadata
    for i in range(0 if mxfp4 else int(config.get("num_hidden_layers", 0))):
        p = f"model.layers.{i}"
        for n in ("input_layernorm", "post_attention_layernorm", "self_attn.q_norm", "self_attn.k_norm"):
            add(f"{p}.{n}.weight", "BF16")
        for lin in (
            "self_attn.q_proj",
            "self_attn.k_proj",
            "self_attn.v_proj",
            "self_attn.o_proj",
            "mlp.gate_proj",
            "mlp.up_proj",
            "mlp.down_proj",
            *MOE_FAMILY_LINEARS,
            *llama4_linears(config),
        ):
            for t, dt in (("qweight", "I32"), ("qzeros", "I32"), ("scales", "F16"), ("g_idx", "I32")):
                add(f"{p}.{lin}.{t}", dt)
    blob = json.dumps(header).encode()
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(blob)) + blob)
    return d


def load_header_weights(V: Any, cfg: Any, model: Any, mdir: Path) -> None:
    """Run vLLM's own ``DefaultModelLoader.load_weights`` on the built model, its weights iterator
    (``get_all_weights``) yielding each tensor of ``mdir``'s header-only ``model.safetensors`` as a
    meta tensor of the header's shape and dtype: the model's ``load_weights`` maps and loads them
    as a real checkpoint's (copies onto the meta device hold nothing), and fails where the built
    layers take no such tensor."""
    import torch

    dtypes = {"F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32, "I32": torch.int32}
    raw = (mdir / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = {k: v for k, v in json.loads(raw[8 : 8 + n]).items() if k != "__metadata__"}
    loader = V.get_model_loader(cfg.load_config)

    def weights(*args: Any, **kwargs: Any) -> Any:
        for name, info in header.items():
            yield name, torch.empty(info["shape"], dtype=dtypes[info["dtype"]], device="meta")

    loader.get_all_weights = weights
    loader.counter_before_loading_weights = time.perf_counter()
    loader.load_weights(model, cfg.model_config)


def mxfp4_config(cdir: Path) -> bool:
    """An MXFP4 (gpt-oss) checkpoint."""
    qc = json.loads((cdir / "config.json").read_text()).get("quantization_config") or {}
    return bool(qc.get("quant_method") == "mxfp4")


def kernels_of(model: Any) -> dict[str, int]:
    """The kernel object each quantized layer's method holds (an attribute whose class name ends
    in ``LinearKernel``, searched through the method's attributes, e.g. INC's
    ``scheme.inner_method.kernel``), counted by class name; the method's name where none."""

    def find(obj: Any, depth: int) -> str | None:
        if type(obj).__name__.endswith("LinearKernel"):
            return type(obj).__name__
        if depth == 0 or not hasattr(obj, "__dict__"):
            return None
        for v in vars(obj).values():
            if hasattr(v, "__dict__") and not isinstance(v, type):
                found = find(v, depth - 1)
                if found:
                    return found
        return None

    out: dict[str, int] = {}
    for m in model.modules():
        qm = getattr(m, "quant_method", None)
        if qm is None:
            continue
        name = find(qm, 3) or find(getattr(m, "scheme", None), 2) or type(qm).__name__
        if name not in ("UnquantizedLinearMethod", "UnquantizedEmbeddingMethod"):
            out[name] = out.get(name, 0) + 1
    return dict(sorted(out.items()))


def linear_kernels_of(model: Any) -> dict[str, int]:
    """The kernel object each ``Fp8LinearMethod`` holds (``fp8_linear``: e.g.
    ``DeepGemmFp8BlockScaledMMKernel``), counted by class name; the experts' kernel each
    ``FusedMoE`` layer's method holds (``moe_kernel`` / ``fused_experts``), by class name."""
    out: dict[str, int] = {}
    for m in model.modules():
        qm = getattr(m, "quant_method", None)
        for attr in ("fp8_linear", "moe_kernel", "fused_experts", "experts_cls"):
            obj = getattr(qm, attr, None)
            if obj is not None:
                inner = getattr(obj, "fused_experts", None)
                name = type(obj).__name__ + (f"/{type(inner).__name__}" if inner is not None else "")
                out[name] = out.get(name, 0) + 1
    return dict(sorted(out.items()))


def dump_experts(model: Any) -> None:
    """Print the first MoE layer's tensors (parameters, buffers, tensor attributes) after loading:
    name, shape, dtype (``RECORD_DUMP``; a reading aid, not recorded)."""
    import torch

    want = os.environ.get("RECORD_DUMP", "1")
    for name, m in model.named_modules():
        moe = hasattr(m, "w13_weight") or hasattr(m, "w13_qweight") or hasattr(m, "w13_weight_packed")
        if want == "all" or (want == "1" and moe) or (want != "1" and name.endswith(want)):
            seen = [("", m)]
            qm = getattr(m, "quant_method", None)
            for attr, obj in (("quant_method", qm), ("scheme", getattr(m, "scheme", None))):
                if obj is not None:
                    seen += [(f"{attr}.", obj), *((f"{attr}.{k}.", v) for k, v in vars(obj).items())]
            for pre, obj in seen:
                if not hasattr(obj, "__dict__"):
                    continue
                items = dict(vars(obj))
                for k, v in list(items.items()):  # a kernel object's tensors (Humming's locks)
                    if type(v).__name__.endswith("Kernel") and hasattr(v, "__dict__"):
                        items.update({f"{k}.{a}": t for a, t in vars(v).items()})
                if isinstance(obj, torch.nn.Module):
                    items.update(obj.named_parameters(recurse=False))
                    items.update(obj.named_buffers(recurse=False))
                for k, v in sorted(items.items()):
                    if isinstance(v, torch.Tensor):
                        nb = v.untyped_storage().nbytes()
                        sys.stderr.write(f"DUMP {name}.{pre}{k} {tuple(v.shape)} {v.dtype} storage {nb}\n")
            if want != "all":
                return


def _yarn_ramp_on_cpu(torch: Any) -> None:
    """DeepSeek-V4's (and V3's) YaRN rope builds its ramp mask on the default (meta) device, where
    ``torch.clamp`` with Python bounds mixes devices: the mask is computed on the CPU and moved to
    the meta device (a value, not a held tensor: the sizes counted are unchanged). gpt-oss's
    ``YaRNScalingRotaryEmbedding`` (``yarn_scaling_rope.py``) does the same where the release's
    torch raises there (0.29.0's): patched in that module too where it imports the function."""
    import vllm.model_executor.layers.rotary_embedding.deepseek_scaling_rope as dsr

    for mod in (dsr, importlib.import_module("vllm.model_executor.layers.rotary_embedding.yarn_scaling_rope")):
        real = getattr(mod, "yarn_linear_ramp_mask", None)
        if real is None:
            continue

        def on_cpu(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            with torch.device("cpu"):
                return _real(*args, **kwargs).to("meta")

        mod.yarn_linear_ramp_mask = on_cpu


def _triton_target_is_faked_gpu(capability: Any) -> None:
    """Make Triton's ``current_target`` (which triton_kernels' ``cuda_capability_geq`` asks to pick
    the Hopper / Blackwell MX layouts in ``_swizzle_mxfp4``) answer the faked GPU's CUDA target:
    without a driver it answers None, and triton_kernels falls back to its strided layouts, which
    no CUDA GPU gets (``RECORD_MXFP4_NATIVE``; nothing where ``triton`` does not import: an environment
    without it picks no Triton kernels, and FlashInfer's stand-in below still applies)."""
    try:
        from triton.backends.compiler import GPUTarget
        from triton.language import target_info
    except ImportError:
        return

    def current_target() -> Any:
        major, minor = capability()
        return GPUTarget("cuda", major * 10 + minor, 32)

    target_info.current_target = current_target


def _flashinfer_scale_interleave_by_shape() -> None:
    """FlashInfer's ``block_scale_interleave`` (``nvfp4_block_scale_interleave``, which vLLM's
    FlashInfer TRT-LLM MXFP4 conversion calls per expert) on any device: the flat output its own
    Python wrapper allocates before the compiled kernel fills it (``_compute_swizzled_layout_sf_size``:
    rows padded to 128, columns to 4), in the input's dtype (``RECORD_MXFP4_NATIVE``, where
    ``flashinfer`` imports; nothing where it does not)."""
    try:
        import flashinfer.fp4_quantization as shim
        from flashinfer.quantization import fp4_quantization as fq
    except ImportError:
        return
    import torch

    def by_shape(unswizzled_sf: Any, *args: Any, **kwargs: Any) -> Any:
        experts = unswizzled_sf.shape[0] if unswizzled_sf.dim() == 3 else 1
        size = fq._compute_swizzled_layout_sf_size(unswizzled_sf.shape[-2], unswizzled_sf.shape[-1], 128)
        return torch.empty((experts * size,), dtype=unswizzled_sf.dtype, device=unswizzled_sf.device)

    import flashinfer  # vLLM's NVFP4 TRT-LLM experts import it from the package (flashinfer_fp4_moe.py)

    for mod in (shim, fq, flashinfer):
        for name in ("block_scale_interleave", "nvfp4_block_scale_interleave"):
            if hasattr(mod, name):
                setattr(mod, name, by_shape)
    # the TRT-LLM experts' per-expert float32 constants go to ``torch.accelerator``'s device index
    # (a GPU's): the meta device stands for it in that module
    try:
        from vllm.model_executor.layers.fused_moe.experts import trtllm_mxfp4_moe as trt
    except ImportError:
        return

    class _OnMeta:
        def __getattr__(self, name: str) -> Any:
            real = getattr(torch, name)
            if name not in ("tensor", "full", "empty", "zeros", "ones"):
                return real

            def on_meta(*args: Any, **kwargs: Any) -> Any:
                if isinstance(kwargs.get("device"), int):
                    kwargs["device"] = "meta"
                return real(*args, **kwargs)

            return on_meta

    trt.torch = _OnMeta()  # type: ignore[assignment]


def _named(configs: Path) -> list[Path]:
    """The config folders of ``configs`` the command line names (all of them where it names none)."""
    only = set(sys.argv[1:])
    return [p for p in sorted(configs.iterdir()) if p.is_dir() and (not only or p.name in only)]


def main() -> int:
    if os.environ.get("DRYBOOT_HUMMING_PATH"):  # the unpacked humming-kernels wheel (quant_fakes.py)
        sys.path.insert(0, os.environ["DRYBOOT_HUMMING_PATH"])
    qf = _load("quant_fakes", HERE / "quant_fakes.py")
    if importlib.util.find_spec("humming") is not None:  # before vLLM's has_humming imports it
        qf.humming_import_stand_ins()
    qf.VALUE_ONLY.update(VALUE_ONLY_KERNELS)
    qf.define_ops()
    es = _load("engine_start", ENGINE_START)
    if DEEP_GEMM:  # DeepGEMM as a CUDA install has it (the set asks: quant_fakes.py)
        qf.deep_gemm_stand_in(lambda: es.GPU.capability)
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    es._install()
    qf.route_ops()
    qf.meta_repeat_counts()  # Marlin FP8's per-tensor scales spread over logical widths
    qf.flashinfer_cute_dsl_layout_stand_in()  # FlashInfer's CuTe DSL layout views without ``cutlass``
    # the release of humming-kernels the cases are recorded with (each row's ``humming``), or None
    humming = importlib.import_module("humming").__version__ if qf.humming_stand_ins() else None
    import torch
    from vllm.model_executor.model_loader.utils import process_weights_after_loading

    if GPU_CAST:  # as record_weights.py's RECORD_WEIGHTS_GPU_CAST: the tower cast as on a GPU
        with contextlib.suppress(ImportError):
            from vllm.models.kimi_k3.nvidia import model as k3

            if hasattr(k3, "is_meta_module"):
                k3.is_meta_module = lambda module: False

    if os.environ.get("RECORD_SET") in (
        "dsv4",
        "fp8",
        "moe",
        "nvfp4moe",
        "fp8rest",
        "sparsemla",
        "nvfp4smla",
        "ossbf16",
        "sinksfam",
    ) or any(mxfp4_config(p) for p in _named(QUANT_CONFIGS)):
        # DeepSeek-V3's YaRN rope (dsv4, fp8, moe, nvfp4moe sets; Laguna's, fp8rest), gpt-oss's (the first
        # set's MXFP4 configs; the ossbf16 set's bf16 ones)
        _yarn_ramp_on_cpu(torch)

    if os.environ.get("RECORD_MXFP4_NATIVE"):
        # an environment without triton (0.28-0.32's): FlashInfer's interleave only (NVFP4 TRT-LLM experts)
        with contextlib.suppress(ImportError):
            _triton_target_is_faked_gpu(lambda: es.GPU.capability)
        _flashinfer_scale_interleave_by_shape()
    V = es.V
    only = set(sys.argv[1:])
    listed = (
        set(json.loads(Path(os.environ["RECORD_CASES"]).read_text())["cases"])
        if os.environ.get("RECORD_CASES")
        else None
    )
    out_path = Path(os.environ.get("RECORD_OUT") or DATA / RECORDED_NAME.format(version=V.vllm.__version__))
    doc = json.loads(out_path.read_text()) if out_path.exists() else {"cases": {}}
    doc["vllm"] = V.vllm.__version__
    tmp = Path(tempfile.mkdtemp(prefix="record-quant-"))
    for cdir in sorted(p for p in QUANT_CONFIGS.iterdir() if p.is_dir()):
        if only and cdir.name not in only:
            continue
        mdir = (SET_CHECKPOINT_DIR or checkpoint_dir)(cdir, tmp)
        for gpu, cap, sms in GPUS:
            for tp in TPS:
                # RECORD_ARGV: flags after the TP (JSON list, e.g. ["--language-model-only"]), in the case id
                argv = ["--tensor-parallel-size", str(tp), *json.loads(os.environ.get("RECORD_ARGV") or "[]")]
                cid = f"{cdir.name} {gpu} {' '.join(argv)}" + (" (no flashinfer-cubin)" if CUBIN is False else "")
                if cid in doc["cases"] and not os.environ.get("RECORD_AGAIN"):
                    continue
                if listed is not None and cid not in listed:
                    continue
                if mxfp4_config(cdir) and cap[0] in (9, 10) and not os.environ.get("RECORD_MXFP4_NATIVE"):
                    # vLLM picks the OAI Triton kernels (SM 9.0) or FlashInfer TRT-LLM (SM 10.x), whose
                    # packages this environment lacks: its own choice would be another backend
                    # (RECORD_MXFP4_NATIVE: records them where the environment has them, 0.33.0's)
                    continue
                t0 = time.perf_counter()
                es.GPU.name, es.GPU.capability, es.GPU.sm_count = f"NVIDIA {gpu}", cap, sms
                es._reset_per_process_caches()
                qf.flashinfer_capability_stand_in(lambda: es.GPU.capability)  # meta tensors' GPU
                if DEEP_GEMM:
                    qf.deep_gemm_values_only(cap[0] in DEEP_GEMM)
                row: dict[str, Any] = {
                    "config": cdir.name,
                    "gpu": gpu,
                    "capability": list(cap),
                    "sm_count": sms,
                    "argv": argv,
                    "ok": False,
                }
                if humming:
                    row["humming"] = humming
                if os.environ.get("RECORD_MXFP4_NATIVE") and mxfp4_config(cdir):
                    row["triton"] = importlib.import_module("triton").__version__  # only imported, never run
                    with contextlib.suppress(ImportError):  # FlashInfer TRT-LLM's (SM 10.x)
                        row["flashinfer"] = importlib.import_module("flashinfer").__version__
                if CUBIN is not None:  # vLLM's own switch: TRT-LLM attention usable (or not)
                    row["flashinfer_cubin"] = CUBIN
                if GPU_CAST:
                    row["gpu_cast"] = True
                model = None
                if os.environ.get("RECORD_WORKSPACE"):
                    row["workspace"] = True
                if WORKSPACE:  # Worker.init_device's, before the model (not in Model loading took)
                    from vllm.v1.worker.workspace import init_workspace_manager

                    init_workspace_manager(torch.device("meta"), 1)
                before = qf.live_meta_storages()
                try:
                    args = es._parse(str(mdir), ["--max-model-len", "4096", *argv, *EXTRA_ARGV])
                    cfg = V.AsyncEngineArgs.from_cli_args(args).create_engine_config(
                        usage_context=V.UsageContext.OPENAI_API_SERVER
                    )
                    es._set_parallel_groups(cfg, 0)
                    with V.set_current_vllm_config(cfg):
                        model = V.get_model_loader(cfg.load_config).load_model(
                            vllm_config=cfg, model_config=cfg.model_config
                        )
                        # the figure before the post-load step (one more scan of the heap: skipped
                        # under RECORD_FAST)
                        built = (None,) if os.environ.get("RECORD_FAST") else qf.allocated_since(before, model)
                        if LOAD_WEIGHTS:  # vLLM's loader over the checkpoint's tensors (no data read)
                            load_header_weights(V, cfg, model, mdir)
                            row["loaded"] = True
                        process_weights_after_loading(model, cfg.model_config, torch.device("meta"))
                    if os.environ.get("RECORD_DUMP"):  # one MoE layer's tensors after loading, to stderr
                        dump_experts(model)
                    alloc, storage, n = qf.allocated_since(before, model)
                    row.update(
                        ok=True,
                        allocated_bytes=alloc,
                        storage_bytes=storage,
                        storages=n,
                        built_allocated_bytes=built[0],
                        kernels=kernels_of(model),
                        linear_kernels=linear_kernels_of(model),
                        quantization=cfg.model_config.quantization,
                        # what a buffer built with the model is sized by (FlashInfer's KV counter)
                        max_num_batched_tokens=cfg.scheduler_config.max_num_batched_tokens,
                    )
                    if os.environ.get("RECORD_SET") == "dsv4":  # the top-k buffer's rows
                        row["max_num_batched_tokens"] = cfg.scheduler_config.max_num_batched_tokens
                    if os.environ.get("RECORD_SET") in ("sparsemla", "nvfp4smla"):  # the index groups' workspace rows
                        row["max_num_seqs"] = cfg.scheduler_config.max_num_seqs
                except BaseException as e:  # every failure recorded as vLLM's answer for that case
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    row["error"] = f"{type(e).__name__}: {e}"[:500]
                    if LOAD_WEIGHTS and model is not None:  # built, then failed: the kernels it had chosen
                        row["built_kernels"] = kernels_of(model)
                    if os.environ.get("RECORD_TRACE"):
                        import traceback

                        traceback.print_exc()
                with contextlib.suppress(Exception):
                    del model
                del before
                row["seconds"] = round(time.perf_counter() - t0, 2)
                doc["cases"][cid] = row
                real_stdout.write(json.dumps({cid: row}) + "\n")
                real_stdout.flush()
                doc["cases"] = dict(sorted(doc["cases"].items()))
                out_path.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
