"""Stand-ins that let vLLM's quantized layers run ``process_weights_after_loading`` on the meta device.

Runs *inside* the boot environment's interpreter (no dryboot import), next to
``src/dryboot/boot/engine_start.py``'s stand-ins. What is faked, exactly:

* **The repack kernels' schemas.** vLLM's ``_custom_ops.py`` registers a fake (shape-only)
  implementation for each repack kernel, but only ``if hasattr(torch.ops._C, NAME)``: on a CPU
  wheel the kernels do not exist and neither do the fakes. :func:`define_ops` declares each op of
  :data:`OPS` in the ``_C`` namespace with ``torch.library`` (the schema only, no kernel) *before*
  vLLM imports, so vLLM's own ``register_fake`` functions register; called on meta tensors, the
  op dispatches to vLLM's fake, i.e. vLLM's own declaration of the output shape and dtype. The
  ops whose output dryboot depends on: ``gptq_marlin_repack``, ``awq_marlin_repack``,
  ``machete_prepack_B``. Nothing else of the kernels is run or imitated.
* **The op namespace.** ``engine_start`` replaces ``torch.ops._C`` by a namespace whose every op
  is an absent kernel; :func:`route_ops` puts the declared ops of :data:`OPS` back in front of it.
* **Two numpy bit-packing helpers** (``quant_utils.py`` ``pack_cols`` / ``unpack_cols``, which
  copy to the CPU and back) are replaced, where the Marlin kernel and ``marlin_utils`` import
  them, by their output: int32 ``[size_k, size_n / (32 / num_bits)]`` and ``[size_k, size_n]`` on
  the input's device (the shapes their own ``numpy.zeros`` allocate).
* **Scale values.** ``Tensor.item()`` on a meta tensor answers 1.0 (compressed-tensors' KV-cache
  method reads its loaded scales as Python floats after loading; a value never changes a shape),
  ``torch.unique`` of a meta tensor one element (NVFP4's check that a fused layer's parts
  share one global scale), a meta tensor's truth value ``True`` (NVFP4 Marlin's "scales are
  non-negative"), and ``Tensor.cuda()`` of a meta tensor the tensor itself (the swizzled block
  scales are moved "to the GPU": they stay on the meta device, same shape and dtype); a meta
  tensor copied to the host (``kv_cache.py`` reads the KV scales as floats) is ones of its shape,
  and ``torch.nonzero`` of a meta tensor counts every element (torch's own
  ``meta_nonzero_assume_all_nonzero``; NVFP4 Marlin's scale factor reads the largest non-zero
  scale), and ``torch.isnan`` of a meta tensor all false (0.33's ModelOpt NVFP4 checks that its
  scales were loaded, i.e. are no longer the NaN they were created with; the oracle loads no
  weights), and ``torch.allclose`` of a meta tensor true (compressed-tensors' and ModelOpt's NVFP4
  MoE experts warn when w1's and w3's global scales differ: a value check, never a shape).
* **vLLM's reload bookkeeping.** After loading, ``model_loader/reload`` keeps a meta-device copy
  of each layer's tensors (``to_meta_tensor``: ``tensor.data.to("meta")``), which costs nothing on
  a GPU; on the meta device ``.to("meta")`` returns the tensor itself, which would keep the
  pre-repack storage alive. :func:`route_ops` makes that copy a distinct meta tensor and
  :func:`allocated_since` leaves those copies out (:data:`SHADOWS`).
* **Humming** (``humming-kernels``, a requirement of vLLM 0.32's and 0.33's CUDA wheels: 0.1.17,
  0.1.19; both rank it ahead of Marlin on SM 9.0). Where the unpacked wheel is on ``sys.path``
  (``record_quant_weights.py`` puts ``DRYBOOT_HUMMING_PATH`` there; the boot environment itself is
  not touched), :func:`humming_stand_ins` lets its plain-Python post-load step run on the meta
  device. Where the boot environment lacks ``triton`` or ``cuda-bindings`` (0.32.0's CPU torch;
  0.33.0's CUDA torch brings both), the package's own imports of them get stand-in modules whose
  names fail when called (:func:`humming_import_stand_ins`: ``tops_bench``'s benchmark timer, the
  driver calls that launch or load a compiled kernel; none is reached here). Humming
  declares each op's output (``register_op``: the op's own Python body, which skips the kernel for
  a ``FakeTensor``) but asserts CUDA inputs: each op of :data:`HUMMING_OPS` is called with the meta
  tensors wrapped as fake CUDA tensors (``FakeTensor`` over the same meta storage, device
  ``cuda:0``) and its results come back as meta tensors of the same shape, dtype and strides; an
  in-place op hands its input back. The GPU facts Humming reads from its compiled
  ``_device_info`` extension (SM version, SM count, PPU or not) answer from the stand-in platform,
  a meta device counts as device 0, and ``torch.accelerator.current_device_index()`` (vLLM's
  ``create_humming_locks``) answers 0, and ``torch.cuda.device`` of no device, device 0 or the
  meta device (Humming's schemas select the current device around their conversion) selects
  nothing, and ``create_humming_locks`` asked for ``cuda`` (the MoE experts pass the config's
  device) allocates on the meta device, the stand-in GPU's memory. The MoE experts' tile-shape
  heuristics (``get_heuristics_config``, tuning tables per GPU model: a forward-pass choice that
  allocates nothing) answer an empty configuration. Humming's JIT compiler is never reached on SM 9.0 for the
  16-bit-activation layouts recorded (``use_native_dequant`` answers False on SM 9.x before asking
  it; ``use_ldmatrix_dequant`` only for int8/int4 activations).
* **DeepGEMM** (a case set with ``DEEP_GEMM``: the fp8 set, on SM 9.0 / 10.x). vLLM's CUDA wheel
  vendors it (``vllm.third_party.deep_gemm``), but its library needs libtorch_cuda (0.27-0.30) or
  its layout op has no meta kernel (0.33): :func:`deep_gemm_stand_in` puts a ``deep_gemm`` package
  in front whose GEMM kernels exist and are never run while loading and whose scale-factor layout
  functions answer DeepGEMM's documented layout (``csrc/apis/layout.hpp``) as meta shapes; vLLM's
  in-place UE8M0 requantization of the weights (values only) is skipped
  (:func:`deep_gemm_values_only`).
* **Value-only kernels** a case set names (``VALUE_ONLY_KERNELS``; the fp8 set:
  ``static_scaled_fp8_quant``, the per-tensor requantization writing fp8 values into the tensor
  vLLM allocated) do nothing (:data:`VALUE_ONLY`).
* **The GPU** is ``engine_start``'s stand-in platform (capability, SM count: the Marlin
  workspace is one int32 per SM), set per case by the recorder.
* **FlashInfer's architecture query** for a meta tensor answers the stand-in GPU's capability
  (:func:`flashinfer_capability_stand_in`; FlashInfer raised "device must be a cuda device"), and
  where ``cutlass`` (the CuTe DSL) is absent ``flashinfer.cute_dsl.utils`` holds FlashInfer's own
  layout-view functions compiled from its source (:func:`flashinfer_cute_dsl_layout_stand_in`).

* **A repeat count tensor made from a Python list** on the meta device (``Tensor.new_tensor``: Marlin
  FP8's per-tensor scales spread over the fused layer's ``logical_widths``) keeps the list, and
  ``repeat_interleave`` by it sizes its output by the list's sum (:func:`meta_repeat_counts`; the
  meta device raised "cannot repeat_interleave a meta tensor without output_size"). Values only:
  the output's shape is what CUDA gives.

What stays allocated is counted by :func:`live_meta_storages`: every tensor object Python still
holds on the meta device (parameters, buffers, module attributes, kernel objects' workspaces,
closures' tensors such as Machete's activation permutation), each storage once, rounded up to the
CUDA caching allocator's 512-byte blocks, less what was alive before the model was built.
"""

from __future__ import annotations

import contextlib
import gc
from pathlib import Path
from typing import Any

#: the repack kernels whose output shapes vLLM declares in ``_custom_ops.py`` (``register_fake``),
#: and the Machete and Marlin GEMMs (MLA dequantizes a quantized ``kv_b_proj`` after loading by applying it)
OPS = ("gptq_marlin_repack", "awq_marlin_repack", "machete_prepack_B", "machete_mm", "marlin_gemm")
#: vLLM's fake signatures' annotations -> schema types (``ScalarType``: the wrapper passes its id)
_SCHEMA_TYPES = {
    "torch.Tensor": "Tensor",
    "torch.SymInt": "SymInt",
    "int": "int",
    "bool": "bool",
    "float": "float",
    "torch.dtype": "ScalarType",
    "torch.dtype | None": "ScalarType?",
    "ScalarType": "int",
    "torch.Tensor | None": "Tensor?",
    "int | None": "int?",
    "str | None": "str?",
}

#: storages of vLLM's meta-device bookkeeping copies (no GPU memory), by storage id
SHADOWS: dict[int, Any] = {}

#: the ``humming.ops`` functions run on fake CUDA tensors (:func:`humming_stand_ins`)
HUMMING_OPS = (
    "repack_weight",
    "pack_weight",
    "unpack_weight",
    "quant_weight",
    "dequant_weight",
    "process_mxfp4_w4a8_weight",
)

#: vLLM 0.33's modules that import ``create_humming_locks`` (:func:`humming_stand_ins`)
HUMMING_LOCK_USERS = (
    "vllm.utils.humming",
    "vllm.model_executor.kernels.linear.mixed_precision.humming",
    "vllm.model_executor.kernels.linear.nvfp4.humming",
    "vllm.model_executor.kernels.linear.mxfp4.humming",
    "vllm.model_executor.kernels.linear.mxfp6.humming",
    "vllm.model_executor.kernels.linear.mxfp8.humming",
    "vllm.model_executor.kernels.linear.scaled_mm.humming",
    "vllm.model_executor.layers.quantization.humming",
    "vllm.model_executor.layers.fused_moe.experts.fused_humming_moe",
)

_LIB: Any = None
_REAL_NS: Any = None


def schemas() -> dict[str, str]:
    """Each op of :data:`OPS` as this release's ``_custom_ops.py`` declares its fake: the
    ``register_fake("_C::NAME")`` function's parameters and annotations, read from the source
    (``ast``; vLLM is not imported), as a ``torch.library`` schema."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    assert spec is not None and spec.submodule_search_locations
    src = (Path(next(iter(spec.submodule_search_locations))) / "_custom_ops.py").read_text()
    out: dict[str, str] = {}
    for node in ast.walk(ast.parse(src)):
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            if (
                isinstance(dec, ast.Call)
                and isinstance(dec.func, ast.Name)
                and dec.func.id == "register_fake"
                and isinstance(dec.args[0], ast.Constant)
                and str(dec.args[0].value).removeprefix("_C::") in OPS
            ):
                name = str(dec.args[0].value).removeprefix("_C::")
                args = node.args.args
                defaults = [None] * (len(args) - len(node.args.defaults)) + list(node.args.defaults)
                params = []
                for a, d in zip(args, defaults, strict=True):
                    ann = ast.unparse(a.annotation) if a.annotation is not None else "torch.Tensor"
                    p = f"{_SCHEMA_TYPES[ann]} {a.arg}"
                    if d is not None:
                        p += f"={ast.unparse(d)}"
                    params.append(p)
                out[name] = f"{name}({', '.join(params)}) -> Tensor"
    return out


def define_ops() -> None:
    """Declare :data:`OPS` in ``torch.ops._C`` (schemas only, :func:`schemas`), before
    ``vllm._custom_ops`` imports."""
    global _LIB, _REAL_NS
    import torch

    _LIB = torch.library.Library("_C", "FRAGMENT")
    for schema in schemas().values():
        _LIB.define(schema)
    _REAL_NS = torch.ops._C


class _RoutedNamespace:
    """``torch.ops._C`` after ``engine_start``: the declared ops, else its absent kernels."""

    def __init__(self, real: Any, absent: Any) -> None:
        self._real, self._absent = real, absent

    def __getattr__(self, name: str) -> Any:
        if name in OPS:
            return getattr(self._real, name)
        if name in VALUE_ONLY:
            return _writes_values
        return getattr(self._absent, name)


#: kernels that only write values into tensors vLLM allocated before calling them (a case set
#: names them: ``VALUE_ONLY_KERNELS``), answered by doing nothing: ``static_scaled_fp8_quant``
#: (``_custom_ops.scaled_fp8_quant`` allocates the fp8 output and passes the scale in)
VALUE_ONLY: set[str] = set()


class _ValueOnlyKernel:
    """A value-only kernel (:data:`VALUE_ONLY`): its output tensors keep their shape, unwritten;
    its ``.default`` overload (what vLLM's fusion passes name) is itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        return None

    @property
    def default(self) -> _ValueOnlyKernel:
        return self


_writes_values = _ValueOnlyKernel()


def route_ops() -> None:
    """After ``engine_start._install``: the declared ops answer again (vLLM's fakes registered)."""
    import torch

    setattr(torch.ops, "_C", _RoutedNamespace(_REAL_NS, torch.ops._C))  # noqa: B010
    import vllm.model_executor.model_loader.reload.meta as reload_meta

    def to_meta_tensor(tensor: Any) -> Any:
        meta = torch.empty_strided(tuple(tensor.size()), tuple(tensor.stride()), dtype=tensor.dtype, device="meta")
        meta.__class__ = tensor.__class__
        meta.__dict__ = tensor.__dict__.copy()
        st = meta.untyped_storage()
        SHADOWS[st._cdata] = st
        return meta

    reload_meta.to_meta_tensor = to_meta_tensor

    real_item = torch.Tensor.item

    def item(self: Any) -> Any:
        return 1.0 if self.device.type == "meta" else real_item(self)

    torch.Tensor.item = item  # type: ignore[method-assign]

    real_unique = torch.unique

    def unique(t: Any, *args: Any, **kwargs: Any) -> Any:
        # a value check on loaded scales ("one global scale per fused layer"): on the meta device
        # the values agree, one element (never a shape that stays allocated)
        if isinstance(t, torch.Tensor) and t.device.type == "meta" and not args and not kwargs:
            return torch.empty((min(t.numel(), 1),), dtype=t.dtype, device="meta")
        return real_unique(t, *args, **kwargs)

    torch.unique = unique

    real_bool, real_cuda = torch.Tensor.__bool__, torch.Tensor.cuda

    def as_bool(self: Any) -> bool:
        # a value check on loaded scales (NVFP4 Marlin's "scales are non-negative"): passes
        return True if self.device.type == "meta" else real_bool(self)

    def cuda(self: Any, *args: Any, **kwargs: Any) -> Any:
        # a tensor moved to "the GPU" (nvfp4_utils.swizzle_blockscale's ``.cuda()``) stays where
        # the model is, on the meta device, with its shape
        return self if self.device.type == "meta" else real_cuda(self, *args, **kwargs)

    real_to = torch.Tensor.to

    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        # loaded scales read on the host as Python floats (kv_cache.py's ``k_scale.to("cpu")``):
        # ones of the same shape (a value, never a shape of what stays on the GPU)
        dev = args[0] if args else kwargs.get("device")
        if self.device.type == "meta" and str(dev) == "cpu":
            return torch.ones(tuple(self.shape), dtype=self.dtype)
        return real_to(self, *args, **kwargs)

    torch.Tensor.to = to  # type: ignore[method-assign]
    # NVFP4 Marlin's scale factor reads the largest non-zero scale: every element counts as one
    import torch.fx.experimental._config as fx_config

    fx_config.meta_nonzero_assume_all_nonzero = True
    torch.Tensor.__bool__ = as_bool  # type: ignore[method-assign]
    real_isnan = torch.isnan

    def isnan(t: Any) -> Any:
        # ModelOpt NVFP4's "scales were loaded" check (0.33: still the NaN they were created with):
        # a loaded checkpoint's scales are numbers, so no element is NaN (on the host)
        if isinstance(t, torch.Tensor) and t.device.type == "meta":
            return torch.zeros(tuple(t.shape), dtype=torch.bool)
        return real_isnan(t)

    torch.isnan = isnan
    real_clamp_ = torch.Tensor.clamp_

    def clamp_(self: Any, *args: Any, **kwargs: Any) -> Any:
        # an in-place clamp writes values into the tensor it is given (FlashInfer's block-scale floor
        # in prepare_fp8_moe_layer_for_fi): on the meta device torch's reference clamp would call the
        # isnan above, whose host answer meets a meta tensor; a real GPU allocates nothing either way
        return self if self.device.type == "meta" else real_clamp_(self, *args, **kwargs)

    torch.Tensor.clamp_ = clamp_  # type: ignore[method-assign]
    if hasattr(torch, "accelerator") and not torch.accelerator.is_available():
        # the GPU's index (FlashInfer TRT-LLM's fp8 experts read it for their per-expert SwiGLU
        # tensors, which plain fp8 with SiLU never creates): the faked GPU is device 0
        torch.accelerator.current_device_index = lambda: 0
    real_allclose = torch.allclose

    def allclose(a: Any, b: Any, *args: Any, **kwargs: Any) -> bool:
        # compressed-tensors' and ModelOpt's NVFP4 MoE experts compare w1's and w3's loaded global scales (a
        # warning when they differ): a value check, answered "equal" on the meta device
        if isinstance(a, torch.Tensor) and a.device.type == "meta":
            return True
        return bool(real_allclose(a, b, *args, **kwargs))

    torch.allclose = allclose
    torch.Tensor.cuda = cuda  # type: ignore[method-assign]

    def pack_cols(q_w: Any, num_bits: int, size_k: int, size_n: int) -> Any:
        return torch.empty((size_k, size_n // (32 // num_bits)), dtype=torch.int32, device=q_w.device)

    def unpack_cols(packed_q_w: Any, num_bits: int, size_k: int, size_n: int) -> Any:
        return torch.empty((size_k, size_n), dtype=torch.int32, device=packed_q_w.device)

    import importlib

    for modname in (
        "vllm.model_executor.kernels.linear.mixed_precision.marlin",
        "vllm.model_executor.layers.quantization.utils.marlin_utils",
    ):
        with contextlib.suppress(ImportError):
            mod = importlib.import_module(modname)
            if hasattr(mod, "pack_cols"):
                mod.pack_cols = pack_cols
            if hasattr(mod, "unpack_cols"):
                mod.unpack_cols = unpack_cols
    # repacking's transients are released per layer on unified-memory devices: nothing to release
    import vllm.model_executor.model_loader.utils as loader_utils

    if hasattr(loader_utils, "release_device_memory_under_pressure"):
        loader_utils.release_device_memory_under_pressure = lambda *a, **k: None


#: modules ``humming-kernels`` imports at import that a CPU boot environment may lack, and what of
#: them it reaches at import: ``triton`` (``humming/ops/bench.py``: ``triton.testing.do_bench``
#: inside ``tops_bench``, a throughput benchmark), ``cuda.bindings.driver`` (the ``humming/kernel/*``
#: launchers and ``humming/jit/runtime.py``: ``cbd.CUlaunchConfig`` in signatures, the driver API
#: inside ``__call__`` / ``load``, i.e. launching or loading a compiled kernel)
#: (0.1.10 / 0.1.12, pinned by 0.27.1-0.30.0: ``humming/ops/input.py`` and ``ops/moe.py`` also define
#: Triton kernels at import, ``@triton.jit`` over ``triton.language``: the stand-in's ``jit`` hands the
#: function back, never compiled; they quantize activations and align MoE tokens in a forward pass)
#: (0.1.10, pinned by 0.27.1: ``humming/utils/jit.py`` imports pyelftools' ``ELFFile``, read when a
#: compiled kernel is loaded)
HUMMING_IMPORT_ONLY = (
    "triton",
    "triton.language",
    "cuda",
    "cuda.bindings",
    "cuda.bindings.driver",
    "elftools",
    "elftools.elf",
    "elftools.elf.elffile",
)


class _NotHere:
    """A stand-in for a name of a module absent from the boot environment (:func:`humming_import_stand_ins`):
    usable in a signature or an annotation, failing loudly when called."""

    def __init__(self, qualname: str) -> None:
        self.qualname = qualname

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _NotHere(f"{self.qualname}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self.qualname} is not in the boot environment and is not run on the meta device")


def humming_import_stand_ins() -> list[str]:
    """Let ``humming-kernels`` import where the boot environment lacks what its package imports
    at import (:data:`HUMMING_IMPORT_ONLY`; humming-kernels 0.1.17, pinned by vLLM 0.32.0, on
    0.32.0's CPU torch 2.13.0 has neither ``triton`` nor ``cuda-bindings``). From then on, an
    ``import`` of an absent one of them *from a module of the ``humming`` package* gets a
    stand-in module (every attribute a :class:`_NotHere`: calling one raises); every
    other importer (torch's own ``triton`` probes among them) sees what is installed, and
    nothing stays in ``sys.modules``. Nothing of them is reached by Humming's post-load step: its
    ops run through their ``register_op`` shape bodies on fake tensors (:func:`humming_stand_ins`),
    never a compiled kernel. Called before vLLM imports (vLLM's ``has_humming`` imports the
    package once and remembers a failure); a second call changes nothing. Returns the modules
    stood in for."""
    import builtins
    import importlib.util
    import types

    if getattr(builtins.__import__, "humming_stand_ins", None) is not None:  # installed already
        return list(builtins.__import__.humming_stand_ins)
    absent: dict[str, types.ModuleType] = {}
    for name in HUMMING_IMPORT_ONLY:
        try:
            present = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # the parent package is absent
            present = False
        if not present:
            mod = types.ModuleType(name)
            mod.__getattr__ = _NotHere(name).__getattr__  # type: ignore[method-assign]
            absent[name] = mod
    for name, mod in absent.items():  # ``import cuda.bindings.driver as cbd`` walks the parents
        parent, _, child = name.rpartition(".")
        if parent in absent:
            setattr(absent[parent], child, mod)
    if "triton" in absent:  # ``@triton.jit`` at import: the function handed back, never compiled
        absent["triton"].jit = lambda fn=None, **kw: fn if fn is not None else (lambda f: f)  # type: ignore[attr-defined]
    real_import = builtins.__import__

    def humming_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        importer = str((globals or {}).get("__name__", ""))
        if level == 0 and name in absent and (importer == "humming" or importer.startswith("humming.")):
            # ``import a.b.c`` binds ``a``; ``import a.b.c as x`` / ``from a.b import c`` read on from it
            return absent[name] if fromlist else absent[name.partition(".")[0]]
        return real_import(name, globals, locals, fromlist, level)

    if absent:  # kept for the process: vLLM imports more of humming's modules as it picks kernels
        humming_import.humming_stand_ins = sorted(absent)  # type: ignore[attr-defined]
        builtins.__import__ = humming_import
    return sorted(absent)


def humming_stand_ins() -> bool:
    """Let Humming's post-load step run on the meta device (module docstring); False where the
    ``humming`` package is not importable (vLLM then never picks it: ``has_humming``)."""
    import importlib.util

    if importlib.util.find_spec("humming") is None:
        return False
    import types

    humming_import_stand_ins()

    import humming.ops as hops
    import torch
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.utils._pytree import tree_map

    def platform() -> Any:
        from vllm.platforms import current_platform

        return current_platform

    class _DeviceFacts:
        """What Humming's ``_device_info`` extension answers, from the stand-in GPU."""

        def __init__(self, index: int) -> None:
            self.index = index

        @property
        def _cap(self) -> tuple[int, int]:
            c = platform().get_device_capability()
            return int(c.major), int(c.minor)

        @property
        def sm_major(self) -> int:
            return self._cap[0]

        @property
        def sm_minor(self) -> int:
            return self._cap[1]

        @property
        def sm_version(self) -> int:
            return self._cap[0] * 10 + self._cap[1]

        @property
        def sm_count(self) -> int:
            return int(platform().num_compute_units(0))

        @property
        def name(self) -> str:
            return str(platform().get_device_name(0))

        is_ppu = False

    # ``humming.device`` from 0.1.17 (0.1.10 / 0.1.12 ask torch.cuda: the stand-in GPU's answers)
    if importlib.util.find_spec("humming.device") is not None:
        import humming.device as hdevice
        import humming.utils.device as hutils_device

        hutils_device._extension = types.SimpleNamespace(_DeviceInfo=_DeviceFacts)  # type: ignore[assignment]
        # the constructor that reads the device: ``__new__`` (0.1.19: one shared instance a device),
        # ``__init__`` (0.1.17)
        ctor = "__new__" if "__new__" in vars(hdevice.DeviceInfo) else "__init__"
        real_ctor = getattr(hdevice.DeviceInfo, ctor)

        def device_info_ctor(first: Any, index: Any = None) -> Any:
            if isinstance(index, torch.device) and index.type == "meta":
                index = 0
            return real_ctor(first, index)

        setattr(hdevice.DeviceInfo, ctor, device_info_ctor)
    torch.accelerator.current_device_index = lambda: 0
    real_cuda_device = torch.cuda.device

    def cuda_device(device: Any) -> Any:
        # Humming's schemas select "the" device around their conversion (``torch.cuda.device
        # (None)``): the stand-in host has one, already current
        if device is None or isinstance(device, int) or getattr(device, "type", None) == "meta":
            return contextlib.nullcontext()
        return real_cuda_device(device)

    torch.cuda.device = cuda_device  # type: ignore[assignment,misc]

    def on_fake_cuda(fn: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            mode = FakeTensorMode(allow_non_fake_inputs=True)
            back: dict[int, Any] = {}

            def to_fake(t: Any) -> Any:
                if isinstance(t, torch.Tensor) and t.device.type == "meta":
                    f = FakeTensor(mode, t, torch.device("cuda", 0))
                    back[id(f)] = t
                    return f
                return t

            def to_meta(t: Any) -> Any:
                if isinstance(t, FakeTensor):
                    if id(t) in back:  # an input handed back (an in-place op)
                        return back[id(t)]
                    return torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="meta")
                return t

            fargs, fkwargs = tree_map(to_fake, (args, kwargs))
            if not back:
                return fn(*args, **kwargs)
            with mode:
                out = fn(*fargs, **fkwargs)
            return tree_map(to_meta, out)

        return run

    for name in HUMMING_OPS:
        setattr(hops, name, on_fake_cuda(getattr(hops, name)))

    # humming-kernels 0.1.17 (vLLM 0.32.0) asks the CUDA compiler's version (NVRTC, looked up through
    # ``torch.version.cuda``: None in the CPU torch) for ``LayerConfig.use_native_dequant``, a flag of the
    # repack kernel that changes no shape (``ops/weight.py`` ``repack_weight``'s output shape ignores it;
    # below SM 8.9 it is False for fp8 whatever the version): answered as the cu13 toolchain vLLM's wheels
    # require (``humming-kernels[cu13]``)
    with contextlib.suppress(ImportError):
        import humming.config.config as hconfig

        if torch.version.cuda is None and hasattr(hconfig, "_cuda_compiler_version"):
            hconfig._cuda_compiler_version = lambda *a, **k: (13, 0)  # type: ignore[attr-defined]

    import importlib

    import vllm.utils.humming as vhumming

    # before 0.32.0 each Humming layer allocates its locks itself, on its weight's device (the meta device)
    real_locks = getattr(vhumming, "create_humming_locks", None)

    def create_humming_locks(device: Any) -> Any:
        # the MoE experts ask for their locks on "cuda" (the config's device): the stand-in
        # GPU's memory is the meta device
        if torch.device(device).type == "cuda":
            device = torch.device("meta")
        return real_locks(device)

    # the MoE experts pick their kernels' tile shapes at construction (``get_heuristics_config``:
    # tuning tables by GPU model, read through the compiled extension): a forward-pass choice that
    # allocates nothing, answered empty
    vhumming.get_heuristics_config = lambda *a, **k: {}  # type: ignore[attr-defined]
    for modname in HUMMING_LOCK_USERS if real_locks is not None else ():
        with contextlib.suppress(ImportError):
            mod = importlib.import_module(modname)
            if hasattr(mod, "create_humming_locks"):
                mod.create_humming_locks = create_humming_locks
    return True


def live_meta_storages() -> dict[int, tuple[int, Any]]:
    """Every storage of a tensor Python holds on the meta device: {id: (bytes, storage)}."""
    import torch

    gc.collect()
    out: dict[int, tuple[int, Any]] = {}
    tensor = torch.Tensor
    for o in gc.get_objects():
        # the type, not isinstance (which reads a lazy proxy's ``__class__`` and loads its module)
        if issubclass(type(o), tensor) and o.device.type == "meta":
            st = o.untyped_storage()
            out[st._cdata] = (st.nbytes(), st)
    return out


def allocated_since(before: dict[int, tuple[int, Any]], model: Any = None) -> tuple[int, int, int]:
    """(allocator blocks in bytes, storage bytes, storages) of what is alive now and was not in
    ``before`` (whose storages the caller keeps alive, so no id is reused), plus every storage of
    ``model``'s parameters and buffers even if it existed before (a table vLLM caches across
    models in one process, e.g. ``get_rope``'s, is allocated anew by a fresh engine)."""
    import itertools

    now = live_meta_storages()
    mine = set()
    if model is not None:
        mine = {t.untyped_storage()._cdata for t in itertools.chain(model.parameters(), model.buffers())}
    sizes = [n for k, (n, _) in now.items() if (k not in before or k in mine) and k not in SHADOWS]
    return sum(-(-n // 512) * 512 for n in sizes), sum(sizes), len(sizes)


#: DeepGEMM's GEMM kernels vLLM resolves by name (``vllm/utils/deep_gemm.py`` ``_lazy_init``):
#: present, so vLLM picks DeepGEMM where a CUDA install does; never run while loading
DEEP_GEMM_KERNELS = (
    "fp8_gemm_nt",
    "m_grouped_fp8_gemm_nt_contiguous",
    "m_grouped_fp8_gemm_nt_masked",
    "fp8_m_grouped_gemm_nt_masked",
    "fp8_einsum",
    "cublaslt_gemm_nt",
)


def deep_gemm_stand_in(capability: Any) -> None:
    """A ``deep_gemm`` package as a CUDA install of vLLM has it (the wheel vendors it as
    ``vllm.third_party.deep_gemm``; its library needs libtorch_cuda, or, where it loads, its
    layout op declares no meta shape), for a case set that asks (``DEEP_GEMM = True``).

    What is faked, exactly: the package exists (``has_deep_gemm``), its GEMM kernels
    (:data:`DEEP_GEMM_KERNELS`) exist and raise if called (none is while loading), and its
    scale-factor layout functions answer DeepGEMM's documented layout (``csrc/apis/layout.hpp``
    ``transform_sf_into_required_layout``, ``get_mn_major_tma_aligned_tensor``,
    ``get_mn_major_tma_aligned_packed_ue8m0_tensor``) as shapes, strides and dtypes on the meta
    device, for the stand-in GPU's architecture (``capability()``: ``(major, minor)``):

    * SM 9.0, float32 ``[128, 128]`` weight blocks: checked and kept as they are;
    * float32 per-row (``[1, 128]``) scales on SM 9.0: MN-major, the MN extent padded to
      16 bytes (4 floats);
    * float32 scales on SM 10.x/12.x: broadcast to one row per output (``gran_mn`` rows share a
      scale), the exponents packed four to an int32, MN-major, the MN extent padded to 4;
    * anything else: DeepGEMM's "Unknown SF transformation".

    Also the UE8M0 requantization vLLM runs on the weights before (``requant_weight_ue8m0_inplace``:
    a dequantize-requantize written back with ``copy_``, values only) is skipped: under the meta
    device its ``torch.compile``'d helper mixes a host scalar into a fake tensor."""
    import importlib.machinery
    import sys
    import types

    import torch

    mod = types.ModuleType("deep_gemm")
    mod.__spec__ = importlib.machinery.ModuleSpec("deep_gemm", None)
    mod.__version__ = "stand-in"  # type: ignore[attr-defined]

    def kernel(name: str) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"DeepGEMM kernel {name} called while loading (stand-in)")

        return run

    for name in DEEP_GEMM_KERNELS:
        setattr(mod, name, kernel(name))

    def mn_major(sf: Any, dtype: Any) -> Any:
        # [..., mn, sk] MN-major: mn is the fastest dimension, padded to 16 bytes
        *g, mn, sk = sf.shape
        align = 16 // torch.empty((), dtype=dtype).element_size()
        pmn = -(-mn // align) * align
        shape, stride = (*g, mn, sk), (*([sk * pmn] if g else []), 1, pmn)
        return torch.empty_strided(shape, stride, dtype=dtype, device=sf.device)

    def get_mn_major_tma_aligned_tensor(sf: Any) -> Any:
        return mn_major(sf, sf.dtype)

    def get_mn_major_tma_aligned_packed_ue8m0_tensor(sf: Any) -> Any:
        *g, mn, sk = sf.shape
        return mn_major(torch.empty((*g, mn, -(-sk // 4)), dtype=torch.int32, device="meta"), torch.int32)

    def transform_sf_into_required_layout(
        sf: Any,
        mn: int,
        k: int,
        recipe: Any = None,
        num_groups: Any = None,
        is_sfa: Any = False,
        disable_ue8m0_cast: bool = False,
        **_: Any,
    ) -> Any:
        arch = capability()[0]
        gran_mn, gran_k = (recipe[0] if is_sfa else recipe[1]), recipe[2]
        fp32 = sf.dtype == torch.float32
        if fp32 and gran_mn == 1 and gran_k == 128 and (arch == 9 or disable_ue8m0_cast):
            return get_mn_major_tma_aligned_tensor(sf)
        if fp32 and gran_mn == 128 and gran_k == 128 and (arch == 9 or disable_ue8m0_cast):
            return sf
        if fp32 and gran_k in (32, 128) and arch in (10, 12):
            *g, _, sk = sf.shape
            rows = torch.empty((*g, mn, sk), dtype=sf.dtype, device=sf.device) if gran_mn != 1 else sf
            return get_mn_major_tma_aligned_packed_ue8m0_tensor(rows)
        raise RuntimeError("Unknown SF transformation (DeepGEMM)")

    mod.transform_sf_into_required_layout = transform_sf_into_required_layout  # type: ignore[attr-defined]
    mod.get_mn_major_tma_aligned_tensor = get_mn_major_tma_aligned_tensor  # type: ignore[attr-defined]
    mod.get_mn_major_tma_aligned_packed_ue8m0_tensor = get_mn_major_tma_aligned_packed_ue8m0_tensor  # type: ignore[attr-defined]
    mod.get_mk_alignment_for_contiguous_layout = lambda: 128  # type: ignore[attr-defined]
    mod.get_m_alignment_for_contiguous_layout = lambda: 128  # type: ignore[attr-defined]
    mod.get_num_sms = lambda: 0  # type: ignore[attr-defined]
    mod.set_num_sms = lambda n: None  # type: ignore[attr-defined]
    sys.modules["deep_gemm"] = _DEEP_GEMM["module"] = mod


_DEEP_GEMM: dict[str, Any] = {}


def deep_gemm_values_only(present: bool) -> None:
    """Before a case, after vLLM imports: the stand-in package present or not (``present``:
    the GPU's architecture is one the case set records with DeepGEMM), the in-place UE8M0
    requantization skipped (:func:`deep_gemm_stand_in`), vLLM's per-process DeepGEMM answers
    (``DeepGemmQuantScaleFMT``'s cache) forgotten."""
    import contextlib
    import sys

    if present:
        sys.modules["deep_gemm"] = _DEEP_GEMM["module"]
    else:
        sys.modules.pop("deep_gemm", None)

    with contextlib.suppress(ImportError, AttributeError):
        import vllm.model_executor.layers.quantization.utils.fp8_utils as fu

        fu.requant_weight_ue8m0_inplace = lambda *a, **k: None
    with contextlib.suppress(ImportError, AttributeError):
        import vllm.utils.deep_gemm as vdg

        if hasattr(vdg.DeepGemmQuantScaleFMT, "_oracle_cache"):
            del vdg.DeepGemmQuantScaleFMT._oracle_cache


def flashinfer_capability_stand_in(capability: Any) -> None:
    """FlashInfer's ``utils.get_compute_capability(device)`` answering the stand-in GPU's
    ``capability()`` (``(major, minor)``) for the meta device, which stands for the GPU's memory
    here: FlashInfer's own answer for a CUDA device is ``torch.cuda.get_device_properties``'
    ``(major, minor)`` and for any other device ``ValueError("device must be a cuda device")``.
    Its callers read the architecture from the tensor they were given (the CuTe DSL BF16 x FP4
    weight preparation, ``gemm_bf16_fp4_cute_dsl._prepare_cute_dsl``: ``b.device``), so on the
    meta device every SM 10.x weight preparation that asks failed in the oracle though vLLM on a
    B200 runs it. A CUDA device still gets FlashInfer's own answer (none is here). The function
    is replaced in ``flashinfer.utils`` and in every FlashInfer module that imported it by name
    (those imported later bind the stand-in); called before each case (the stand-in is idempotent,
    its answer follows the case's GPU). Nothing else of FlashInfer is touched: which code path
    runs and what it allocates stay FlashInfer's and vLLM's."""
    import sys

    try:
        import flashinfer.utils as fu
    except ImportError:
        return
    real = getattr(fu, "_oracle_real_get_compute_capability", None) or getattr(fu, "get_compute_capability", None)
    if real is None:  # a FlashInfer without it (nothing asks)
        return
    fu._oracle_real_get_compute_capability = real

    def get_compute_capability(device: Any) -> tuple[int, int]:
        if getattr(device, "type", None) == "meta":
            major, minor = capability()
            return int(major), int(minor)
        return tuple(real(device))  # type: ignore[return-value]

    for name, mod in list(sys.modules.items()):
        if (name == "flashinfer" or name.startswith("flashinfer.")) and getattr(
            mod, "get_compute_capability", None
        ) in (real, getattr(fu, "get_compute_capability", None)):
            mod.get_compute_capability = get_compute_capability


#: the functions of FlashInfer's ``cute_dsl/utils.py`` its SM 10.x BF16 x FP4 weight preparation calls
#: (``gemm_bf16_fp4_cute_dsl._prepare_cute_dsl_sm100``), each plain torch (a view), and what they call
CUTE_DSL_LAYOUT_FUNCTIONS = ("ceil_div", "convert_sf_to_mma_layout")


def flashinfer_cute_dsl_layout_stand_in() -> bool:
    """Where the CuTe DSL (``cutlass``, vLLM's CUDA wheel requires ``nvidia-cutlass-dsl``; the boot
    environment lacks it) does not import, ``flashinfer.cute_dsl.utils`` (whose top imports it) is
    a module holding FlashInfer's own functions of :data:`CUTE_DSL_LAYOUT_FUNCTIONS`, compiled from
    that file's source (nothing restated): ``convert_sf_to_mma_layout`` checks the swizzled scales'
    element count and returns a strided 6-D view of them, allocating nothing. Any other name of
    the module is absent (raises where asked; no kernel is reached while loading). Returns whether
    the stand-in was installed."""
    import ast
    import importlib.util
    import sys
    import types
    from pathlib import Path

    if importlib.util.find_spec("cutlass") is not None or importlib.util.find_spec("flashinfer") is None:
        return False
    spec = importlib.util.find_spec("flashinfer.cute_dsl")
    if spec is None or not spec.submodule_search_locations:
        return False
    path = Path(next(iter(spec.submodule_search_locations))) / "utils.py"
    tree = ast.parse(path.read_text(), str(path))
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in CUTE_DSL_LAYOUT_FUNCTIONS]
    import torch

    mod = types.ModuleType("flashinfer.cute_dsl.utils")
    mod.__file__ = str(path)
    mod.__dict__["torch"] = torch
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(path), "exec"), mod.__dict__)
    sys.modules["flashinfer.cute_dsl.utils"] = mod
    return True


def meta_repeat_counts() -> None:
    """``Tensor.new_tensor`` of a Python list on the meta device keeps the list (``_repeat_counts``),
    and ``Tensor.repeat_interleave`` of a meta tensor by such a tensor, given no ``output_size``, passes
    the list's sum (what CUDA computes from the values): the module docstring's repeat counts."""
    import torch

    if getattr(torch.Tensor.repeat_interleave, "_dryboot", False):
        return
    new_tensor, repeat_interleave = torch.Tensor.new_tensor, torch.Tensor.repeat_interleave

    def keeping(self: Any, data: Any, *args: Any, **kwargs: Any) -> Any:
        out = new_tensor(self, data, *args, **kwargs)
        if out.is_meta and isinstance(data, (list, tuple)) and all(isinstance(x, int) for x in data):
            out._repeat_counts = list(data)
        return out

    def sized(self: Any, repeats: Any, *args: Any, **kwargs: Any) -> Any:
        counts = getattr(repeats, "_repeat_counts", None)
        if self.is_meta and counts is not None and kwargs.get("output_size") is None and len(args) < 2:
            kwargs["output_size"] = sum(counts)
        return repeat_interleave(self, repeats, *args, **kwargs)

    sized._dryboot = True  # type: ignore[attr-defined]
    torch.Tensor.new_tensor = keeping  # type: ignore[method-assign]
    torch.Tensor.repeat_interleave = sized  # type: ignore[method-assign]
