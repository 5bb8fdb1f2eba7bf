"""What the CUDA-graph capture set reads from ``-O`` / ``--optimization-level`` and
``--compilation-config`` (vLLM's ``config/compilation.py`` ``CompilationConfig`` and
``config/vllm.py`` ``OPTIMIZATION_LEVEL_TO_CONFIG``, the same in 0.27.1-0.33.0).

``-O0``: no torch.compile and ``cudagraph_mode`` NONE; ``-O1``: PIECEWISE; ``-O2`` (the
default) and ``-O3``: FULL_AND_PIECEWISE. An explicit ``cudagraph_mode`` replaces the level's.
``cudagraph_capture_sizes`` / ``max_cudagraph_capture_size`` replace the default capture list
(``VllmConfig._set_cudagraph_sizes``); ``cudagraph_mm_encoder`` captures a multimodal
encoder's graphs too. Other keys are kept by name: the budget says it does not read them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError

__all__ = [
    "CUDAGRAPH_MODES",
    "OPTIMIZATION_LEVELS",
    "CompilationSettings",
    "compilation_settings",
    "parse_compilation_config",
]

#: ``CUDAGraphMode`` names.
CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
#: ``OPTIMIZATION_LEVEL_TO_CONFIG``'s ``cudagraph_mode`` per level.
OPTIMIZATION_LEVELS = {0: "NONE", 1: "PIECEWISE", 2: "FULL_AND_PIECEWISE", 3: "FULL_AND_PIECEWISE"}
#: the keys read here; ``mode`` is the compilation mode (0/NONE: no torch.compile).
_READ = ("cudagraph_mode", "cudagraph_capture_sizes", "max_cudagraph_capture_size", "cudagraph_mm_encoder", "mode")
_COMPILATION_MODES = {"0": 0, "NONE": 0, "1": 1, "STOCK_TORCH_COMPILE": 1, "2": 2, "DYNAMO_TRACE_ONCE": 2}
_COMPILATION_MODES |= {"3": 3, "VLLM_COMPILE": 3}


@dataclass(frozen=True)
class CompilationSettings:
    """The capture set's inputs after ``-O`` and ``--compilation-config``.

    :param cudagraph_mode: a :data:`CUDAGRAPH_MODES` name.
    :param compiled: torch.compile runs (``mode`` VLLM_COMPILE, the default above ``-O0``).
    :param capture_sizes: ``cudagraph_capture_sizes`` as given (tokens), or ``None``.
    :param max_capture_size: ``max_cudagraph_capture_size`` (tokens), or ``None``.
    :param mm_encoder: ``cudagraph_mm_encoder``.
    :param unread: the other keys given, by name.
    """

    cudagraph_mode: str = "FULL_AND_PIECEWISE"
    compiled: bool = True
    capture_sizes: tuple[int, ...] | None = None
    max_capture_size: int | None = None
    mm_encoder: bool = False
    unread: tuple[str, ...] = ()


def _positive_ints(value: Any, key: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"{key}: expected a non-empty list of token counts, got {value!r}")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value):
        raise ValueError(f"{key}: every size must be an integer >= 1, got {value!r}")
    return tuple(sorted(set(value)))


def parse_compilation_config(text: str) -> str:
    """``--compilation-config`` / ``-cc``: a JSON object (checked here; kept as canonical JSON
    text for :func:`compilation_settings`).

    :raises ValueError: not a JSON object, or a read key of the wrong type (one line).
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise ValueError('not JSON; expected an object such as {"cudagraph_mode": "PIECEWISE"}') from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    _settings(data, 2)
    return json.dumps(data, sort_keys=True)


def _settings(data: dict[str, Any], level: int) -> CompilationSettings:
    mode = data.get("cudagraph_mode", OPTIMIZATION_LEVELS[level])
    if not isinstance(mode, str) or mode.upper() not in CUDAGRAPH_MODES:
        raise ValueError(f"cudagraph_mode: expected one of {', '.join(CUDAGRAPH_MODES)}, got {mode!r}")
    compiled = level > 0
    if "mode" in data:
        cm = data["mode"]
        key = str(cm).upper() if isinstance(cm, str | int) and not isinstance(cm, bool) else None
        if key not in _COMPILATION_MODES:
            raise ValueError(f"mode: expected 0-3 or a CompilationMode name, got {cm!r}")
        compiled = _COMPILATION_MODES[key] > 0
    sizes = data.get("cudagraph_capture_sizes")
    top = data.get("max_cudagraph_capture_size")
    if top is not None and (not isinstance(top, int) or isinstance(top, bool) or top < 1):
        raise ValueError(f"max_cudagraph_capture_size: expected an integer >= 1, got {top!r}")
    enc = data.get("cudagraph_mm_encoder", False)
    if not isinstance(enc, bool):
        raise ValueError(f"cudagraph_mm_encoder: expected true or false, got {enc!r}")
    return CompilationSettings(
        cudagraph_mode=mode.upper(),
        compiled=compiled,
        capture_sizes=None if sizes is None else _positive_ints(sizes, "cudagraph_capture_sizes"),
        max_capture_size=top,
        mm_encoder=enc,
        unread=tuple(sorted(k for k in data if k not in _READ)),
    )


def compilation_settings(optimization_level: int, compilation_config: str | None) -> CompilationSettings:
    """The settings of ``-O<level>`` with ``--compilation-config`` (canonical JSON, as
    :func:`parse_compilation_config` keeps it) applied over the level's defaults.

    :raises InputError: a level outside 0-3, or a bad compilation config (named).
    """
    if optimization_level not in OPTIMIZATION_LEVELS:
        raise InputError("--optimization-level", None, f"must be 0, 1, 2 or 3, got {optimization_level}")
    data: dict[str, Any] = {}
    if compilation_config is not None:
        try:
            loaded = json.loads(compilation_config)
        except json.JSONDecodeError:
            raise InputError("--compilation-config", None, "not JSON") from None
        if not isinstance(loaded, dict):
            raise InputError("--compilation-config", None, "expected a JSON object")
        data = loaded
    try:
        return _settings(data, optimization_level)
    except ValueError as e:
        raise InputError("--compilation-config", None, str(e)) from None
