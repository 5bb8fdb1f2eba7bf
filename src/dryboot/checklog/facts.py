"""The facts a boot log states outside its ``non-default args`` line: each line vLLM prints that
fixes a flag or an input of the KV prediction, read with the line it came from.

Read (vLLM's wording, 0.10-0.33; the file each is logged from):

* ``Using fp8 data type to store kv cache`` (``config/cache.py``: ``_verify_cache_dtype``, any
  ``fp8*`` ``--kv-cache-dtype``): ``kv_cache_dtype`` is fp8;
* FlashInfer's ``... kv_cache_dtype=torch.float8_e4m3fn, arch=sm121`` (``flashinfer.py``): the
  cache's torch dtype and the GPU's compute capability;
* ``Enabling num_speculative_tokens > 1 will run multiple times of forward on same MTP layer``
  (``config/speculative.py``): an MTP drafter with k > 1;
* the attention backend chosen (``Using FLASH_ATTN attention backend out of potential backends``,
  ``Using AttentionBackendEnum.FLASHINFER backend``, ``Using Flash Attention backend on V1 engine``);
* ``Initializing a V1 LLM engine (vX) with config: ...`` (``v1/engine/core.py``): ``dtype``,
  ``max_seq_len``, ``tensor_parallel_size``, ``pipeline_parallel_size``, ``quantization``,
  ``kv_cache_dtype``, ``enable_prefix_caching``, the speculative config's method and
  ``num_spec_tokens``, the CUDA graph capture sizes; each key read on its own, so a line a document
  re-wrapped (rejoined by :func:`dryboot.checklog.parse.unwrap`) or abridged with ``…`` gives the
  keys it still shows;
* ``Resolved architecture: X`` (``config/model.py``);
* ``Free memory on device (F/T GiB)`` (``v1/worker/gpu_worker.py``): the GPU's CUDA total;
* torch's ``CUDA out of memory. Tried to allocate X GiB. GPU 0 has a total capacity of T GiB``
  (the GPU's CUDA total again) and the traceback frame it came from (``in load_model``, ``in
  initialize_kv_cache``, ``in _allocate_kv_cache_tensors``): a boot that failed, and where.

All functions are pure; nothing here raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol


class LogLine(Protocol):
    """The line a fact comes from (:class:`dryboot.checklog.parse.LogLine`, which imports this
    module: named here by what is read of it)."""

    @property
    def number(self) -> int: ...

    @property
    def process(self) -> str | None: ...

    @property
    def where(self) -> str: ...


@dataclass(frozen=True)
class Fact:
    """One fact a line of the log states.

    :param name: what it fixes: a vLLM flag (``kv_cache_dtype``, ``tensor_parallel_size``,
        ``enable_prefix_caching``, ``max_model_len``, ``dtype``, ``quantization``,
        ``pipeline_parallel_size``, ``speculative_method``, ``num_speculative_tokens``,
        ``num_speculative_tokens_over_1``, ``attention_backend``, ``cudagraph_capture_sizes``,
        ``architecture``), the GPU (``gpu_capability`` as ``major.minor``, ``gpu_total_gib``), or a
        failed boot (``failure``: torch's CUDA out-of-memory error; ``failure_stage``: the
        traceback frame it came from, ``load_model`` or ``initialize_kv_cache``).
    :param value: the value as the line states it, normalised to vLLM's flag spelling where one
        exists (``fp8`` for ``torch.float8_e4m3fn``; ``True``/``False`` as ``true``/``false``).
    :param said: the words of the line it was read from (for the report).
    """

    name: str
    value: str
    said: str
    line: LogLine

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "value": self.value,
            "said": self.said,
            "line": self.line.number,
            "process": self.line.process,
        }


#: Words one of which every fact line holds that the KV filters' own words miss (the engine's
#: config line, ``Resolved architecture`` and ``Free memory on device`` are kept by theirs); each
#: is one more scan of every chunk of a long log, so they are few and short.
TRIGGER_WORDS = (
    "store kv cache",
    "arch=sm",
    "num_speculative_tokens >",
    "backend",
    "out of memory",
    ", in load_model",
    "_kv_cache",
)

_KV_STORE = re.compile(r"Using (?P<dtype>fp8|nvfp4)\w* data type to store kv cache")
_TORCH_KV = re.compile(r"kv_cache_dtype=torch\.(?P<dtype>\w+)")
_ARCH = re.compile(r"\barch=sm_?(?P<sm>\d{2,3})a?\b")
_MTP_MULTI = re.compile(r"Enabling num_speculative_tokens > 1 will run multiple times of forward on same MTP layer")
_BACKENDS = (
    re.compile(r"Using (?P<backend>[A-Z][A-Z0-9_]+) attention backend out of potential backends"),
    re.compile(r"Using (?:AttentionBackendEnum|_Backend)\.(?P<backend>[A-Z][A-Z0-9_]+) backend"),
    re.compile(r"Using (?P<backend>[A-Za-z][\w ]*?) backend on V1 engine"),
    re.compile(r"Using (?P<backend>[A-Z][A-Z0-9_]+) backend\.?$"),
)
_ENGINE_CONFIG = re.compile(r"LLM engine (?:\(v[^)\s]*\) )?with config: (?P<config>.*)")
#: vLLM's ``Resolved architecture: X`` line (``config/model.py``), read here and by the parser
ARCHITECTURE_LINE = re.compile(r"Resolved architecture: (?P<arch>\S+)")
_FREE = re.compile(r"Free memory on device \((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\)")
_OOM = re.compile(
    r"CUDA out of memory\. Tried to allocate (?P<alloc>[\d.]+ [GM]iB)\.(?: GPU (?P<gpu>\d+) has a total "
    r"capacity of (?P<total>[\d.]+) GiB)?"
)
#: The traceback frames that say where a boot ran out of memory (``gpu_model_runner.py``,
#: ``gpu_worker.py``): loading the weights, or allocating the KV cache.
_FRAME = re.compile(
    r", in (?P<frame>load_model|initialize_kv_cache|_allocate_kv_cache_tensors|initialize_kv_cache_tensors)\s*$"
)

#: Keys of the engine's config line read, with the pattern of the value.
_CONFIG_KEYS: tuple[tuple[str, str, str], ...] = (
    ("dtype", r"(?<![\w.])dtype=torch\.(?P<v>\w+)", "dtype"),
    ("max_model_len", r"(?<![\w.])max_seq_len=(?P<v>\d+)", "max_seq_len"),
    ("tensor_parallel_size", r"(?<![\w.])tensor_parallel_size=(?P<v>\d+)", "tensor_parallel_size"),
    ("pipeline_parallel_size", r"(?<![\w.])pipeline_parallel_size=(?P<v>\d+)", "pipeline_parallel_size"),
    ("quantization", r"(?<![\w.])quantization=(?P<v>[\w-]+)", "quantization"),
    ("kv_cache_dtype", r"(?<![\w.'])kv_cache_dtype=(?P<v>\w+)", "kv_cache_dtype"),
    ("enable_prefix_caching", r"(?<![\w.])enable_prefix_caching=(?P<v>True|False)", "enable_prefix_caching"),
    ("speculative_method", r"SpeculativeConfig\(method='(?P<v>\w+)'", "speculative_config.method"),
    ("num_speculative_tokens", r"SpeculativeConfig\([^)]*?num_spec_tokens=(?P<v>\d+)", "num_spec_tokens"),
    ("cudagraph_capture_sizes", r"'cudagraph_capture_sizes': \[(?P<v>[\d, ]*)\]", "cudagraph_capture_sizes"),
)
_CONFIG_PATTERNS = tuple((name, re.compile(p), said) for name, p, said in _CONFIG_KEYS)

#: The torch dtype FlashInfer names -> ``--kv-cache-dtype``'s family (fp8 e4m3 is ``fp8``).
_TORCH_TO_FLAG = {
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8_e5m2",
    "uint8": "fp8",
    "bfloat16": "auto",
    "float16": "auto",
    "half": "auto",
}


def read_facts(message: str, line: LogLine) -> list[Fact]:
    """Every fact ``message`` (one log message, its header removed) states."""
    out: list[Fact] = []
    if "store kv cache" in message and (m := _KV_STORE.search(message)):
        out.append(Fact("kv_cache_dtype", m["dtype"], m.group(0), line))
    if "kv_cache_dtype=torch." in message and (m := _TORCH_KV.search(message)):
        flag = _TORCH_TO_FLAG.get(m["dtype"])
        if flag is not None:
            out.append(Fact("kv_cache_dtype", flag, m.group(0), line))
    if "arch=sm" in message and (m := _ARCH.search(message)):
        sm = m["sm"]
        out.append(Fact("gpu_capability", f"{sm[:-1]}.{sm[-1]}", m.group(0), line))
    if "num_speculative_tokens > 1" in message and (m := _MTP_MULTI.search(message)):
        out.append(Fact("num_speculative_tokens_over_1", "mtp", m.group(0), line))
    if "backend" in message:
        for pattern in _BACKENDS:
            if m := pattern.search(message):
                out.append(Fact("attention_backend", m["backend"], m.group(0), line))
                break
    if "with config:" in message and (m := _ENGINE_CONFIG.search(message)):
        config = m["config"]
        for name, pattern, said in _CONFIG_PATTERNS:
            if km := pattern.search(config):
                value = km["v"]
                if name == "enable_prefix_caching":
                    value = value.lower()
                elif name == "cudagraph_capture_sizes":
                    value = ",".join(v.strip() for v in value.split(",") if v.strip())
                elif name == "dtype":
                    value = {"half": "float16", "float": "float32"}.get(value, value)
                text = km.group(0) if not name.startswith(("speculative", "num_spec")) else f"{said}={km['v']}"
                out.append(Fact(name, value, text if len(text) <= 80 else text[:77] + "...", line))
    if "Resolved architecture" in message and (m := ARCHITECTURE_LINE.search(message)):
        out.append(Fact("architecture", m["arch"], m.group(0), line))
    if "Free memory on device" in message and (m := _FREE.search(message)):
        out.append(Fact("gpu_total_gib", m["total"], m.group(0), line))
    if "CUDA out of memory" in message and (m := _OOM.search(message)):
        out.append(Fact("failure", "CUDA out of memory", m.group(0), line))
        if m["total"]:
            out.append(Fact("gpu_total_gib", m["total"], m.group(0), line))
    if ", in " in message and "vllm" in message and (m := _FRAME.search(message)):  # vLLM's own frame
        stage = "load_model" if m["frame"] == "load_model" else "initialize_kv_cache"
        out.append(Fact("failure_stage", stage, m.group(0).strip(", "), line))
    return out


def first_of(facts: tuple[Fact, ...] | list[Fact], name: str) -> Fact | None:
    """The first fact of ``name`` (``None`` when the log states none)."""
    return next((f for f in facts if f.name == name), None)


def disagreeing(facts: tuple[Fact, ...] | list[Fact], name: str) -> tuple[Fact, Fact] | None:
    """Two facts of ``name`` that state different values (the first, and the first that differs)."""
    first = first_of(facts, name)
    if first is None:
        return None
    other = next((f for f in facts if f.name == name and f.value != first.value), None)
    return (first, other) if other is not None else None
