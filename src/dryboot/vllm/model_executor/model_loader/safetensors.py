"""Safetensors headers and the sharded-checkpoint index, read offline (never a tensor's data).

A ``.safetensors`` file starts with an 8-byte little-endian unsigned length ``N`` and ``N`` bytes
of UTF-8 JSON: ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``
(the format vLLM reads through ``safetensors.safe_open`` in
``model_executor/model_loader/weight_utils.py::safetensors_weights_iterator``).
``model.safetensors.index.json`` maps each tensor to its shard (``weight_map``) and states
``metadata.total_size`` (tensor bytes as the exporter wrote them).

Errors: every malformed or hostile input raises :class:`dryboot.errors.InputError` naming the file
and the field (the CLI prints one line and exits 2). The header is bounded
(:data:`MAX_HEADER_BYTES`, the limit the ``safetensors`` library itself enforces).
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dryboot.errors import InputError

#: the safetensors library's own bound on the JSON header (``N_MAX_HEADER`` = 100 MB)
MAX_HEADER_BYTES = 100_000_000
#: the index file vLLM's loader reads to select shards (``filter_duplicate_safetensors_files``)
INDEX_FILE = "model.safetensors.index.json"

#: bytes per element of each safetensors dtype (``F8_E4M3`` / ``F8_E5M2`` fp8; ``U8`` packed fp4)
DTYPE_BYTES: dict[str, float] = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
    "F4": 0.5,
}


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a checkpoint: its safetensors ``dtype``, ``shape`` and size in bytes."""

    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor's data (``numel`` x bytes per element, rounded up for packed fp4)."""
        return math.ceil(math.prod(self.shape) * DTYPE_BYTES[self.dtype])


def parse_header(blob: bytes, source: str = "<header>") -> dict[str, TensorInfo]:
    """The tensors a safetensors header declares, from the header's JSON bytes (after the length).

    :param blob: the ``N`` bytes of JSON that follow the 8-byte length.
    :returns: tensor name -> :class:`TensorInfo` (``__metadata__`` left out).
    :raises InputError: not UTF-8 JSON, not an object, or a tensor entry without a known dtype,
        a shape of non-negative integers, or data offsets matching its size.
    """
    try:
        doc = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise InputError(source, "header", f"not a JSON safetensors header ({type(e).__name__})") from None
    if not isinstance(doc, dict):
        raise InputError(source, "header", "not a JSON object")
    out: dict[str, TensorInfo] = {}
    for name, entry in doc.items():
        if name == "__metadata__":
            continue
        if not isinstance(entry, dict):
            raise InputError(source, f"header[{name!r}]", "not an object")
        dtype = entry.get("dtype")
        shape = entry.get("shape")
        offsets = entry.get("data_offsets")
        if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
            raise InputError(source, f"header[{name!r}].dtype", f"unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            raise InputError(source, f"header[{name!r}].shape", "not a list of non-negative integers")
        info = TensorInfo(dtype, tuple(shape))
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(type(o) is int and o >= 0 for o in offsets)
            or offsets[1] - offsets[0] != info.nbytes
        ):
            raise InputError(source, f"header[{name!r}].data_offsets", "do not span the tensor's bytes")
        out[name] = info
    return out


def read_header(path: Path) -> dict[str, TensorInfo]:
    """The tensors of one ``.safetensors`` file, reading only its first ``8 + N`` bytes.

    :raises InputError: unreadable, shorter than its header, or a header above
        :data:`MAX_HEADER_BYTES`, or a malformed header (:func:`parse_header`).
    """
    source = str(path)
    try:
        with path.open("rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise InputError(source, None, "shorter than a safetensors header (8-byte length)")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER_BYTES:
                raise InputError(source, "header", f"length {n} above the {MAX_HEADER_BYTES}-byte bound")
            blob = f.read(n)
    except OSError as e:
        raise InputError(source, None, f"cannot read ({e.strerror or type(e).__name__})") from None
    if len(blob) < n:
        raise InputError(source, "header", f"truncated ({len(blob)} of {n} bytes)")
    return parse_header(blob, source)


def read_index(path: Path) -> tuple[int | None, dict[str, str]]:
    """``metadata.total_size`` (or ``None``) and the ``weight_map`` of a checkpoint index.

    :raises InputError: not JSON, or a weight map that is not names -> shard file names inside
        the checkpoint directory.
    """
    source = str(path)
    try:
        if path.stat().st_size > MAX_HEADER_BYTES:
            raise InputError(source, None, f"above {MAX_HEADER_BYTES} bytes")
        doc: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(source, None, f"cannot read ({e.strerror or type(e).__name__})") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise InputError(source, None, f"not JSON ({type(e).__name__})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("weight_map"), dict):
        raise InputError(source, "weight_map", "missing or not an object")
    wmap: dict[str, str] = {}
    for name, shard in doc["weight_map"].items():
        if not isinstance(shard, str) or "/" in shard or "\\" in shard or shard in ("", ".", ".."):
            raise InputError(source, f"weight_map[{name!r}]", "not a shard file name in this directory")
        wmap[name] = shard
    meta = doc.get("metadata")
    total = meta.get("total_size") if isinstance(meta, dict) else None
    if total is not None and (type(total) is not int or total < 0):
        raise InputError(source, "metadata.total_size", "not a non-negative integer")
    return total, wmap


def has_shards(directory: Path) -> bool:
    """Whether ``directory`` holds a safetensors checkpoint (an index or any ``*.safetensors`` file)."""
    return (directory / INDEX_FILE).is_file() or any(directory.glob("*.safetensors"))


def checkpoint_tensor_names(source: Path) -> list[str] | None:
    """The tensor names of the checkpoint beside a model given as ``source`` (its directory or its
    ``config.json``; a config file of another name stands alone), or ``None`` where no shards are there.

    :raises InputError: as :func:`read_checkpoint`."""
    if not (source.is_dir() or source.name == "config.json"):
        return None
    directory = source if source.is_dir() else source.parent
    return list(read_checkpoint(directory)[0]) if has_shards(directory) else None


def read_checkpoint(directory: Path) -> tuple[dict[str, TensorInfo], int | None]:
    """Every tensor of a checkpoint directory (or HF cache snapshot), from its headers.

    The shards are those the index names (as vLLM's loader selects them) or, without an index,
    every ``*.safetensors`` file of the directory. Returns (tensors, index ``total_size``).

    :raises InputError: no safetensors file, a shard the index names missing, a tensor in two
        shards, or any malformed header.
    """
    index = directory / INDEX_FILE
    total: int | None = None
    if index.is_file():
        total, wmap = read_index(index)
        shards = sorted(set(wmap.values()))
    else:
        shards = sorted(p.name for p in directory.glob("*.safetensors"))
    if not shards:
        raise InputError(
            str(directory), None, "no *.safetensors file (weights from the config alone need no --load-format)"
        )
    tensors: dict[str, TensorInfo] = {}
    for shard in shards:
        path = directory / shard
        if not path.is_file():
            raise InputError(str(index), "weight_map", f"names {shard}, which is missing")
        for name, info in read_header(path).items():
            if name in tensors:
                raise InputError(str(path), f"header[{name!r}]", "tensor also in another shard")
            tensors[name] = info
    return tensors, total
