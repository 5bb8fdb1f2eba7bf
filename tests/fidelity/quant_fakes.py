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
* **Humming** (``humming-kernels``, a requirement of vLLM 0.33's CUDA wheel; 0.33 ranks it ahead
  of Marlin on SM 9.0). Where the unpacked wheel is on ``sys.path`` (``record_quant_weights.py``
  puts ``DRYBOOT_HUMMING_PATH`` there; the boot environment itself is not touched),
  :func:`humming_stand_ins` lets its plain-Python post-load step run on the meta device. Humming
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
* **The GPU** is ``engine_start``'s stand-in platform (capability, SM count: the Marlin
  workspace is one int32 per SM), set per case by the recorder.

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
        return getattr(self._absent, name)


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


def humming_stand_ins() -> bool:
    """Let Humming's post-load step run on the meta device (module docstring); False where the
    ``humming`` package is not importable (vLLM then never picks it: ``has_humming``)."""
    import importlib.util

    if importlib.util.find_spec("humming") is None:
        return False
    import types

    import humming.device as hdevice
    import humming.ops as hops
    import humming.utils.device as hutils_device
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

    hutils_device._extension = types.SimpleNamespace(_DeviceInfo=_DeviceFacts)  # type: ignore[assignment]
    real_new = hdevice.DeviceInfo.__new__

    def device_info_new(cls: Any, index: Any = None) -> Any:
        if isinstance(index, torch.device) and index.type == "meta":
            index = 0
        return real_new(cls, index)

    hdevice.DeviceInfo.__new__ = device_info_new  # type: ignore[method-assign]
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

    import importlib

    import vllm.utils.humming as vhumming

    real_locks = vhumming.create_humming_locks

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
    for modname in HUMMING_LOCK_USERS:
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
