"""The recorders' common start inside a boot environment's interpreter (no dryboot import).

``start()`` loads ``src/dryboot/boot/engine_start.py`` by path, points ``sys.stdout`` at stderr
(vLLM's own prints must not mix with the recorder's JSON lines) and installs that module's
stand-ins: a faked H200 (SM 9.0, 132 SMs), vLLM's CUDA kernels treated as absent, distributed
groups of the configured sizes. It returns the module and the real stdout. ``stub_cuda_python()``
adds a cuda-python whose every call raises (see its text).
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any, TextIO

ENGINE_START = Path(__file__).resolve().parents[2] / "src" / "dryboot" / "boot" / "engine_start.py"


def start() -> tuple[types.ModuleType, TextIO]:
    """``(engine_start, real_stdout)`` with the stand-ins installed (``engine_start.V`` is vLLM)."""
    spec = importlib.util.spec_from_file_location("engine_start", ENGINE_START)
    assert spec is not None and spec.loader is not None
    es = importlib.util.module_from_spec(spec)
    sys.modules["engine_start"] = es
    spec.loader.exec_module(es)
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    es._install()
    return es, real_stdout


def stub_cuda_python() -> None:
    """MiniMax-M2's q/k norm (``layers/minimax_rms_norm/rms_norm_tp.py``) at TP > 1 imports
    cuda-python to allocate its Lamport all-reduce workspace with ``cudaMalloc``, outside torch's
    caching allocator (so outside ``Model loading took``), and falls back to the eager path when
    that allocation raises (a GPU without P2P). cuda-python is absent here: a stub module whose
    every call raises gives vLLM's own fallback; the model's tensors are the same either way."""
    if importlib.util.find_spec("cuda") is not None:
        return

    class _Raising(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)

            def fail(*a: Any, **k: Any) -> Any:
                raise RuntimeError("cuda-python stub (fidelity recorder): no CUDA here")

            return fail

    cuda, bindings, runtime = types.ModuleType("cuda"), types.ModuleType("cuda.bindings"), _Raising("runtime")
    bindings.runtime = runtime  # type: ignore[attr-defined]
    cuda.bindings = bindings  # type: ignore[attr-defined]
    sys.modules.update({"cuda": cuda, "cuda.bindings": bindings, "cuda.bindings.runtime": runtime})


def register_config_classes(models_dir: str, model_types: list[str]) -> None:
    """Stand in for a checkpoint's own config class (``auto_map``, read under
    ``--trust-remote-code``) where the release's pinned transformers lacks the ``model_type``: the
    config class of that ``model_type`` from another transformers' ``models_dir`` (its
    ``<model_type>/configuration_<model_type>.py``, the upstreamed form of the checkpoint's code)
    is loaded and registered with ``AutoConfig``, so vLLM reads the config with it. Only the
    config reading is stood in for; vLLM's model class is the release's own."""
    from transformers import AutoConfig

    for model_type in model_types:
        package = f"transformers.models.{model_type}"
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [f"{models_dir}/{model_type}"]
            sys.modules[package] = module
        name = f"{package}.configuration_{model_type}"
        spec = importlib.util.spec_from_file_location(name, f"{models_dir}/{model_type}/configuration_{model_type}.py")
        assert spec is not None and spec.loader is not None
        config_module = importlib.util.module_from_spec(spec)
        sys.modules[name] = config_module
        spec.loader.exec_module(config_module)
        (cls,) = (
            v
            for v in vars(config_module).values()
            if isinstance(v, type) and getattr(v, "model_type", None) == model_type and v.__module__ == name
        )
        AutoConfig.register(model_type, cls)
