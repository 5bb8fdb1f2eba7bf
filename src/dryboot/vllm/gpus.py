"""The GPU vLLM runs on, as vLLM's CUDA platform reads it (``vllm/platforms/cuda.py``).

A :class:`GPU` carries what vLLM asks the device at engine start: the compute capability
(``get_device_capability``), the device name (``get_device_name``, NVML's string), NVML's total
memory (``get_device_total_memory``: the batch defaults' tiers) and CUDA's total
(``torch.accelerator.get_memory_info``: what ``--gpu-memory-utilization`` multiplies). The named
GPUs come from ``dryboot/data/gpus.toml`` (a copy of ``tests/data/gpus/gpus.toml``, whose
``SOURCES.md`` gives every figure's public source); ``smXY:SIZE`` names any other.
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

    :param name: the table's name (``RTX 3090``), or the ``smXY:SIZE`` text as given.
    :param capability: (major, minor) CUDA compute capability.
    :param device_name: the name vLLM prints and tests (``NVIDIA GeForce RTX 3090``; the batch
        defaults look for ``a100`` in it).
    :param nvml_total_bytes: NVML's total memory (bytes).
    :param cuda_total_bytes: CUDA's total memory (bytes).
    :param approximate: the CUDA total is a specification placeholder, not a posted figure,
        so a budget from ``--gpu-memory-utilization`` is approximate.
    :param unified_memory: CPU and GPU share memory (GB10): vLLM's ``MemorySnapshot`` takes free
        memory from ``psutil`` (``utils/mem_utils.py``) and NVML reports no total
        (``nvml_total_bytes`` 0: ``get_device_total_memory`` raises, the batch defaults take the
        small tier).
    :param host_reserved_bytes: (low, high) memory the host itself holds on the device besides the
        CUDA context (the Windows desktop under WSL2): the startup gate's free memory lacks it.
    """

    name: str
    capability: tuple[int, int]
    device_name: str
    nvml_total_bytes: int
    cuda_total_bytes: int
    approximate: bool = False
    unified_memory: bool = False
    host_reserved_bytes: tuple[int, int] = (0, 0)

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
            bool(row.get("unified_memory", False)),
            _host_reserved(row),
        )
    return out


def _host_reserved(row: dict[str, Any]) -> tuple[int, int]:
    low, high = row.get("host_reserved_mib", (0, 0))
    return int(low) << 20, int(high) << 20


def sm_count(name: str) -> int | None:
    """The multiprocessors of the table's GPU ``name`` (``sm_count``), ``None`` where no source
    gives them (the Marlin kernels' workspace is one int32 per SM)."""
    for row in _rows():
        if row["name"] == name:
            return int(row["sm_count"]) if "sm_count" in row else None
    return None


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


_SM = re.compile(r"sm_?(\d{2,3}):(.*)", re.IGNORECASE | re.DOTALL)
_SIZE = re.compile(r"(\d{1,30}(?:\.\d{1,30})?)([KMGTkmgt]?)")
#: vLLM's human-readable units (``dryboot.units``): upper case binary, lower case decimal
_UNIT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}

#: The compute capabilities of the CUDA GPUs that exist (``smXY`` must name one): Volta (7.0),
#: Xavier (7.2), Turing (7.5), Ampere (8.0, 8.6, Orin 8.7), Ada (8.9), Hopper (9.0), Blackwell
#: (10.0, 10.3; Thor 11.0; 12.0; GB10 12.1).
CAPABILITIES: tuple[tuple[int, int], ...] = (
    (7, 0), (7, 2), (7, 5), (8, 0), (8, 6), (8, 7), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1),
)  # fmt: skip
#: The smallest memory ``smXY:SIZE`` takes (1 GiB: no CUDA GPU vLLM runs on has less).
MIN_MEMORY_BYTES = 1 << 30
#: The largest (1 PiB, as every memory flag: no GPU comes near).
MAX_MEMORY_BYTES = 1 << 50


#: vLLM's startup line (the gate's refusal and the INFO summary): ``Free memory on device [cuda:0]
#: (F/T GiB) on startup``; ``T`` is CUDA's total as the host shows it.
_FREE_LINE = re.compile(
    r"Free memory on device(?:\s+cuda:\d+)?\s*\(\s*(\d{1,6}(?:\.\d{1,6})?)\s*/\s*(\d{1,6}(?:\.\d{1,6})?)\s*GiB\)"
)


def parse_gpu_memory(text: str) -> int:
    """``--gpu-memory``: bytes (``24G``, ``25757220864``), or vLLM's logged ``Free memory on device
    (F/T GiB) on startup`` line, whose ``T`` (CUDA's total, two decimals) gives ``round(T x 2^30)``.

    :raises ValueError: one line, neither form.
    """
    m = _FREE_LINE.search(text)
    if m:
        return round(float(m.group(2)) * (1 << 30))
    return parse_human_int(text)


def _sm_names() -> str:
    return ", ".join(f"sm{major}{minor}" for major, minor in CAPABILITIES)


def parse_memory_size(text: str, source: str, whole: str) -> int:
    """``SIZE`` of ``smXY:SIZE`` in bytes: a number, decimals allowed, with vLLM's units (``K``
    ``M`` ``G`` ``T`` binary, ``k`` ``m`` ``g`` ``t`` decimal; ``31.38G`` is
    ``round(31.38 * 2^30)``, a GiB figure vLLM printed with ``format_gib`` read back), or bytes
    without a unit; between :data:`MIN_MEMORY_BYTES` and :data:`MAX_MEMORY_BYTES`.

    :raises InputError: ``source`` ``whole``, a malformed size or one out of bounds.
    """
    m = _SIZE.fullmatch(text.strip())
    if m is None:
        raise InputError(source, whole, f"memory {text.strip()!r} is not a size (e.g. 24G, 31.38G, 178.35G)")
    number, unit = m.group(1), m.group(2)
    whole_part, _, frac = number.partition(".")
    scale = _UNIT[unit]
    # exact decimal arithmetic: int(digits) * scale / 10**len(frac), rounded half up
    denominator = int(10 ** len(frac))
    total = (int(whole_part + frac) * scale * 2 + denominator) // (2 * denominator)
    if total > MAX_MEMORY_BYTES:
        raise InputError(source, whole, f"memory {text.strip()} is above 1 PiB (1024T), more than any GPU has")
    if total < MIN_MEMORY_BYTES:
        hint = f" (did you mean {number}G?)" if not unit else ""
        raise InputError(
            source, whole, f"memory {text.strip()} is {total:,} bytes, below any GPU's (1G at least){hint}"
        )
    return total


def parse_gpu(text: str, source: str = "--gpu") -> GPU:
    """A GPU of the table by name or alias (``RTX 3090``, ``rtx3090``, ``a100-80gb``), or
    ``smXY:SIZE`` (``sm86:24G``: capability 8.6, 24 GiB as both totals; ``sm120:31.38G``;
    ``sm100:180G``): ``XY`` one of :data:`CAPABILITIES`, ``SIZE`` as :func:`parse_memory_size`.

    :raises InputError: an unknown name (the known ones listed), a capability no GPU has (the
        existing ones listed), or a malformed or out-of-bounds size.
    """
    name = _by_key().get(_key(text))
    if name is not None:
        return gpu_table()[name]
    m = _SM.fullmatch(text.strip())
    if m:
        digits = m.group(1)
        major, minor = int(digits[:-1]), int(digits[-1])
        if (major, minor) not in CAPABILITIES:
            raise InputError(
                source,
                text,
                f"no CUDA GPU has compute capability {major}.{minor} (sm{digits}); the ones that exist: {_sm_names()}",
            )
        total = parse_memory_size(m.group(2), source, text)
        if (major, minor) == (12, 1):  # only GB10: unified memory, NVML reports no total
            return GPU(text.strip(), (12, 1), "SM 12.1 GPU", 0, total, unified_memory=True)
        return GPU(text.strip(), (major, minor), f"SM {major}.{minor} GPU", total, total)
    known = ", ".join(gpu_table())
    close = closest_gpu_names(text)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise InputError(source, text, f"unknown GPU ({hint}known: {known}; or smXY:SIZE, e.g. sm86:24G)")


_FIRST_WORD = re.compile(r"[A-Za-z]*\d+")


def closest_gpu_names(text: str, n: int = 3) -> tuple[str, ...]:
    """Up to ``n`` table names closest to an unknown ``text`` (``A100-PCIe`` -> ``A100-40GB-PCIe``,
    ``A100-80GB-PCIe``, ...): spellings beginning with its model number (``A100``, ``H100``)
    first, then by :class:`difflib.SequenceMatcher` ratio (at least 0.7 for another model).
    Empty: nothing close."""
    import difflib  # at call: only an unknown GPU name is compared

    key = _key(text)
    word = _FIRST_WORD.match(text.strip().removeprefix("NVIDIA ").removeprefix("nvidia "))
    model = word.group(0).lower() if word else None
    ranked: list[tuple[bool, float, str]] = []
    for spelling, name in _by_key().items():
        ratio = difflib.SequenceMatcher(None, key, spelling).ratio()
        same = model is not None and spelling.removeprefix("nvidia").startswith(model)
        if same or ratio >= 0.7:
            ranked.append((same, ratio, name))
    out: list[str] = []
    for _, _, name in sorted(ranked, key=lambda r: (not r[0], -r[1])):
        if name not in out:
            out.append(name)
    return tuple(out[:n])


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
