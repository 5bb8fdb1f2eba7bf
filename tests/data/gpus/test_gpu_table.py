"""The GPU table (gpus.toml) is well formed and every source it cites is quoted in SOURCES.md."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUALITIES = {"bytes", "mib", "mb-repr", "gib2", "spec"}
REQUIRED = {
    "name": str,
    "aliases": list,
    "compute_capability": list,
    "device_name": str,
    "nvml_total_bytes": int,
    "nvml_total_quality": str,
    "cuda_total_bytes": int,
    "cuda_total_quality": str,
    "sources": list,
}
# The GPUs issue 21 asks for at least.
WANTED = {
    "RTX 3090",
    "RTX 4090",
    "RTX 5090",
    "A10G",
    "L4",
    "L40S",
    "A100-40GB",
    "A100-80GB",
    "H100",
    "H100 PCIe",
    "H200",
    "GH200",
    "B200",
    "B300",
}


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _table() -> list[dict[str, Any]]:
    gpus = tomllib.loads((HERE / "gpus.toml").read_text(encoding="utf-8"))["gpu"]
    assert isinstance(gpus, list)
    return gpus


def test_rows_are_complete_and_typed() -> None:
    for row in _table():
        for key, kind in REQUIRED.items():
            assert isinstance(row.get(key), kind), f"{row.get('name')}: {key}"
        assert row["nvml_total_quality"] in QUALITIES and row["cuda_total_quality"] in QUALITIES
        major, minor = row["compute_capability"]
        assert 8 <= major <= 12 and 0 <= minor <= 9
        assert 16 << 30 < row["cuda_total_bytes"] <= row["nvml_total_bytes"] < 300 << 30


def test_names_and_aliases_are_unambiguous() -> None:
    seen: dict[str, str] = {}
    for row in _table():
        for spelling in [row["name"], *row["aliases"]]:
            key = _norm(str(spelling))
            assert seen.setdefault(key, str(row["name"])) == row["name"], f"{spelling!r} names two GPUs"
    assert {_norm(n) for n in WANTED} <= set(seen)


def test_every_cited_source_is_quoted() -> None:
    quoted = set(re.findall(r"^## ([\w.-]+) —", (HERE / "SOURCES.md").read_text(encoding="utf-8"), re.M))
    for row in _table():
        for key in row["sources"]:
            assert key in quoted, f"{row['name']}: source {key} is not in SOURCES.md"
        if row["nvml_total_quality"] != "spec" or row["cuda_total_quality"] != "spec":
            assert row["sources"], f"{row['name']}: a measured figure needs a source"
