"""The GPU vLLM runs on, as vLLM's CUDA platform reads it (``vllm/platforms/cuda.py``).

A :class:`GPU` carries what vLLM asks the device at engine start: the compute capability
(``get_device_capability``), the device name (``get_device_name``, NVML's string), NVML's total
memory (``get_device_total_memory``: the batch defaults' tiers) and CUDA's total
(``torch.accelerator.get_memory_info``: what ``--gpu-memory-utilization`` multiplies). The named
GPUs come from ``dryboot/data/gpus.toml`` (a copy of ``tests/data/gpus/gpus.toml``, whose
``SOURCES.md`` gives every figure's public source); ``smXY:NNG`` names any other.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from dryboot.errors import InputError
from dryboot.units import parse_human_int

#: The GPU dryboot assumes when none is named.
DEFAULT_GPU_NAME = "H200"


@dataclass(frozen=True)
class GPU:
    """One GPU.

    :param name: the table's name (``RTX 3090``), or the ``smXY:NNG`` text as given.
    :param capability: (major, minor) CUDA compute capability.
    :param device_name: the name vLLM prints and tests (``NVIDIA GeForce RTX 3090``; the batch
        defaults look for ``a100`` in it).
    :param nvml_total_bytes: NVML's total memory (bytes).
    :param cuda_total_bytes: CUDA's total memory (bytes).
    :param approximate: the CUDA total is a specification placeholder, not a posted figure,
        so a budget from ``--gpu-memory-utilization`` is approximate.
    """

    name: str
    capability: tuple[int, int]
    device_name: str
    nvml_total_bytes: int
    cuda_total_bytes: int
    approximate: bool = False

    @property
    def sm(self) -> int:
        """``major * 10 + minor`` (86 for 8.6), vLLM's ``DeviceCapability.to_int``."""
        return self.capability[0] * 10 + self.capability[1]

    @property
    def family(self) -> int:
        """``is_device_capability_family``'s family: ``(major * 10) * 10`` (100 for 10.x)."""
        return self.capability[0] * 10

    def label(self) -> str:
        """``RTX 3090 (SM 8.6, NVIDIA GeForce RTX 3090)``."""
        return f"{self.name} (SM {self.capability[0]}.{self.capability[1]}, {self.device_name})"


def _key(text: str) -> str:
    """Names compare case- and separator-insensitively (``rtx-3090`` is ``RTX 3090``)."""
    return re.sub(r"[\s_\-]+", "", text).lower()


@cache
def _rows() -> tuple[dict[str, Any], ...]:
    """The table's ``[[gpu]]`` rows, read once per process."""
    doc = tomllib.loads(files("dryboot").joinpath("data/gpus.toml").read_text(encoding="utf-8"))
    return tuple(doc["gpu"])


@cache
def gpu_table() -> dict[str, GPU]:
    """Every named GPU by its canonical name (the table's order)."""
    out = {}
    for row in _rows():
        major, minor = row["compute_capability"]
        out[row["name"]] = GPU(
            row["name"],
            (major, minor),
            row["device_name"],
            row["nvml_total_bytes"],
            row["cuda_total_bytes"],
            row["cuda_total_quality"] == "spec",
        )
    return out


@cache
def _by_key() -> dict[str, str]:
    out: dict[str, str] = {}
    for row in _rows():
        for spelling in (row["name"], *row.get("aliases", ())):
            out.setdefault(_key(spelling), row["name"])
    return out


def default_gpu() -> GPU:
    """The GPU assumed when none is named (:data:`DEFAULT_GPU_NAME`)."""
    return gpu_table()[DEFAULT_GPU_NAME]


_SM = re.compile(r"sm_?(\d{2,3}):(.+)", re.IGNORECASE)


def parse_gpu(text: str, source: str = "--gpu") -> GPU:
    """A GPU of the table by name or alias (``RTX 3090``, ``rtx3090``, ``a100-80gb``), or
    ``smXY:SIZE`` (``sm86:24G``: capability 8.6, 24 GiB as both totals; ``sm100:180G``).

    :raises InputError: an unknown name (the known ones listed) or a malformed ``sm`` form.
    """
    name = _by_key().get(_key(text))
    if name is not None:
        return gpu_table()[name]
    m = _SM.fullmatch(text.strip())
    if m:
        digits = m.group(1)
        major, minor = int(digits[:-1]), int(digits[-1])
        try:
            total = parse_human_int(m.group(2))
        except ValueError as exc:
            raise InputError(source, text, f"memory: {exc}") from None
        if total < 1 or major < 7:
            raise InputError(source, text, "needs a capability of SM 7.0 or newer and a positive memory size")
        return GPU(text.strip(), (major, minor), f"SM {major}.{minor} GPU", total, total)
    known = ", ".join(gpu_table())
    raise InputError(source, text, f"unknown GPU (known: {known}; or smXY:SIZE, e.g. sm86:24G)")


def gdn_prefill_alignment(release_alignment: int | None, gpu: GPU, head_k_dim: int) -> int | None:
    """The Gated DeltaNet checkpoint alignment (tokens) when the layer takes FlashInfer's GDN
    prefill, else ``None`` (vLLM 0.33 ``qwen_gdn_linear_attn.py`` ``_resolve_gdn_prefill_backend``:
    SM 9.0 exactly; SM 10.x and 12.x with ``linear_key_head_dim`` 128 on a CUDA 13 runtime, which
    0.33's torch wheel is; never SM 8.x). ``release_alignment``: the release's alignment
    (``VersionRules.gdn_align_sm90``; ``None`` before 0.33)."""
    if release_alignment is None:
        return None
    if gpu.capability == (9, 0) or (gpu.capability[0] in (10, 12) and head_k_dim == 128):
        return release_alignment
    return None
