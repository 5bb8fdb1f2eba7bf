"""The safetensors header and index readers: bounded, never reading tensor data, one clear
error for hostile input (property-tested)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.safetensors import (
    DTYPE_BYTES,
    MAX_HEADER_BYTES,
    TensorInfo,
    parse_header,
    read_checkpoint,
    read_header,
    read_index,
)


def _file(path: Path, header: object, tail: bytes = b"") -> Path:
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + tail)
    return path


def test_reads_names_dtypes_shapes(tmp_path: Path) -> None:
    p = _file(
        tmp_path / "m.safetensors",
        {
            "__metadata__": {"format": "pt"},
            "a.weight": {"dtype": "BF16", "shape": [4, 8], "data_offsets": [0, 64]},
            "b.weight_scale": {"dtype": "F32", "shape": [], "data_offsets": [64, 68]},
        },
        tail=b"\0" * 68,
    )
    got = read_header(p)
    assert got == {"a.weight": TensorInfo("BF16", (4, 8)), "b.weight_scale": TensorInfo("F32", ())}
    assert got["a.weight"].nbytes == 64 and got["b.weight_scale"].nbytes == 4


def test_header_length_bounded_without_reading_it(tmp_path: Path) -> None:
    p = tmp_path / "huge.safetensors"
    p.write_bytes(struct.pack("<Q", MAX_HEADER_BYTES + 1) + b"{")
    with pytest.raises(InputError, match="above"):
        read_header(p)


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (b"", "shorter"),
        (struct.pack("<Q", 100) + b"{}", "truncated"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
        (struct.pack("<Q", 3) + b"\xff\xfe{", "not a JSON"),
    ],
)
def test_hostile_files(tmp_path: Path, raw: bytes, match: str) -> None:
    p = tmp_path / "x.safetensors"
    p.write_bytes(raw)
    with pytest.raises(InputError, match=match):
        read_header(p)


@pytest.mark.parametrize(
    "entry",
    [
        {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]},
        {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]},
        {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]},
        {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]},
        {"dtype": "F32", "shape": [1]},
        "x",
    ],
)
def test_bad_entries_name_the_tensor(entry: object) -> None:
    with pytest.raises(InputError, match=r"header\['t'\]"):
        parse_header(json.dumps({"t": entry}).encode(), "f.safetensors")


def test_index_refuses_paths_outside_the_directory(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "../x.safetensors"}}))
    with pytest.raises(InputError, match="not a shard file name"):
        read_index(tmp_path / "model.safetensors.index.json")


def test_missing_shard_and_duplicate_tensor(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "s1.safetensors"}}))
    with pytest.raises(InputError, match="missing"):
        read_checkpoint(tmp_path)
    entry = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
    _file(tmp_path / "s1.safetensors", {"a": entry})
    _file(tmp_path / "s2.safetensors", {"a": entry})
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})
    )
    with pytest.raises(InputError, match="another shard"):
        read_checkpoint(tmp_path)


def test_no_safetensors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no \*\.safetensors"):
        read_checkpoint(tmp_path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@st.composite
def headers(draw: st.DrawFn) -> tuple[bytes, str | None]:
    """A header as bytes, and the tensor whose entry was spoiled (``None``: a valid header): a valid
    header of up to four tensors, then (half the time) one field of one entry replaced by any JSON
    value, or the bytes cut short."""
    spec = draw(
        st.dictionaries(
            st.text(min_size=1, max_size=8).filter(lambda n: n != "__metadata__"),
            st.tuples(st.sampled_from(sorted(DTYPE_BYTES)), st.lists(st.integers(0, 16), max_size=3)),
            min_size=1,
            max_size=4,
        )
    )
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, (dt, shape) in spec.items():
        nb = TensorInfo(dt, tuple(shape)).nbytes
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nb]}
        off += nb
    spoiled = None
    how = draw(st.sampled_from(["valid", "field", "cut"]))
    if how == "field":
        spoiled = draw(st.sampled_from(sorted(spec)))
        field = draw(st.sampled_from(["dtype", "shape", "data_offsets"]))
        entry = dict(header[spoiled])  # type: ignore[call-overload]
        entry[field] = draw(json_values)
        header[spoiled] = entry
    blob = json.dumps(header).encode()
    if how == "cut":
        blob = blob[: draw(st.integers(0, len(blob) - 1))]
        spoiled = "<cut>"
    return blob, spoiled


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | json_values.map(lambda v: (json.dumps(v).encode(), "<any>")) | headers())
def test_parse_header_never_crashes(given_: bytes | tuple[bytes, str | None]) -> None:
    """Arbitrary bytes or JSON, or a header valid or spoiled in one field: the tensors it declares,
    or one InputError naming the spoiled entry; nothing else."""
    blob, spoiled = (given_, "<any>") if isinstance(given_, bytes) else given_
    try:
        got = parse_header(blob)
    except InputError as e:
        event("refused")
        assert "\n" not in e.line()
        assert spoiled is not None, f"a valid header refused: {e.line()}"
        if spoiled not in ("<any>", "<cut>"):
            assert f"header[{spoiled!r}]" in e.line()
        return
    event("parsed, tensors" if got else "parsed, empty")
    doc = json.loads(blob)
    assert set(got) == set(doc) - {"__metadata__"}
    for name, info in got.items():
        assert info.dtype == doc[name]["dtype"] and list(info.shape) == doc[name]["shape"]
        assert doc[name]["data_offsets"][1] - doc[name]["data_offsets"][0] == info.nbytes


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=10).filter(lambda s: s != "__metadata__"),
        st.tuples(st.sampled_from(sorted(DTYPE_BYTES)), st.lists(st.integers(0, 64), max_size=3)),
        max_size=6,
    )
)
def test_parse_header_round_trip(spec: dict[str, tuple[str, list[int]]]) -> None:
    header = {}
    off = 0
    for name, (dt, shape) in spec.items():
        nb = TensorInfo(dt, tuple(shape)).nbytes
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nb]}
        off += nb
    got = parse_header(json.dumps(header).encode())
    assert got == {n: TensorInfo(dt, tuple(s)) for n, (dt, s) in spec.items()}
