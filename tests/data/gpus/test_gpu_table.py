"""The GPU table (gpus.toml) is well formed and every source it cites is quoted in SOURCES.md."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUALITIES = {"bytes", "mib", "mb-repr", "gib2", "spec", "unsupported"}
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
    # issue 27
    "GB10",
    "RTX PRO 6000 Blackwell",
    "RTX PRO 4500 Blackwell",
}
#: GPUs added after a release's matrix was recorded, with no venv of that release at hand
#: (re-record with the README's loop): (release, GPU).
NOT_RECORDED = (
    {
        (version, gpu)
        for version in ("0.27.1", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
        for gpu in ("GB10", "RTX PRO 6000 Blackwell", "RTX PRO 4500 Blackwell")
    }
    | {
        (version, gpu)  # issue 33's host variants: the same card's backend as the row they vary
        for version in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
        for gpu in ("RTX 4090 (WSL2)", "RTX 4090 (cloud VM)", "RTX PRO 6000 Blackwell Server Edition")
    }
    | {
        (version, "Jetson AGX Thor")  # session 25: the boot environments at hand lack the matrix's triton
        for version in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
    }
)


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
        if row["nvml_total_quality"] == "unsupported":  # GB10: NVML reports no total
            assert row["nvml_total_bytes"] == 0 and row.get("unified_memory") is True
            assert 16 << 30 < row["cuda_total_bytes"] < 300 << 30
        else:
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


GiB = 1 << 30


def _matrices() -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted((HERE / "backend-matrix").glob("vllm-*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        found[doc["vllm_version"]] = doc
    return found


def _minor(version: str) -> int:
    return int(version.split(".")[1])


def _serve_defaults(gpu: dict[str, Any], version: str) -> tuple[int, int]:
    """docs/gpu-rules.md section 6, restated: `vllm serve` batch defaults from NVML memory and name."""
    memory, name = gpu["nvml_total_bytes"], gpu["device_name"].lower()
    gb10 = _minor(version) >= 33 and tuple(gpu["compute_capability"]) == (12, 1)
    if _minor(version) >= 28 and memory >= 160 * GiB:
        return 16384, 1024
    if memory >= 70 * GiB and "a100" not in name and not gb10:
        return 8192, 1024
    return 2048, 256


def test_matrices_cover_the_table_and_agree_with_the_documented_defaults() -> None:
    matrices = _matrices()
    assert "0.28.0" in matrices
    for version, doc in matrices.items():
        rows = {(r["gpu"], r["arm"]): r for r in doc["rows"]}
        for gpu in _table():
            if (version, gpu["name"]) in NOT_RECORDED:
                continue
            row = rows.get((gpu["name"], "cubin"))
            assert row is not None and "cases" in row, f"{version}: {gpu['name']} not recorded"
            got = row["batch_defaults"]["OPENAI_API_SERVER"]
            assert (got["max_num_batched_tokens"], got["max_num_seqs"]) == _serve_defaults(gpu, version), (
                f"{version} {gpu['name']}"
            )


def test_matrices_agree_with_the_documented_flash_attention_versions() -> None:
    """docs/gpu-rules.md section 3: FA2 only on SM 8.x and 12.x; FA3 on SM 9.x up to head 256, FA4 above."""
    for version, doc in _matrices().items():
        for row in doc["rows"]:
            if "cases" not in row:
                continue
            fa = row["flash_attn_version_by_head_size"]
            major = row["compute_capability"][0]
            if major in (8, 12):
                assert set(fa.values()) == {2}, f"{version} {row['gpu']}"
            elif major == 9:
                assert [fa[h] for h in ("64", "128", "256", "512")] == [3, 3, 3, 4], f"{version} {row['gpu']}"


def test_engine_starts_follow_the_documented_refusals() -> None:
    """docs/gpu-rules.md section 3: fp8 through Triton (gpt-oss's sinks, every MLA model) is refused
    below SM 8.9 with vLLM's message; the recorded DSA config (``index_topk`` 256) starts only on
    SM 9.x and 10.x (SM 12.x's sparse backend takes ``index_topk`` 2048 only)."""
    caps = {g["name"]: tuple(g["compute_capability"]) for g in _table()}
    files = sorted((HERE / "oracle-as-gpu").glob("vllm-*.jsonl"))
    assert files
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            cap, case = caps[row["gpu"]], row["id"]
            where = f"{path.name} {row['gpu']} {case}"
            if case in ("GptOssForCausalLM/fp8", "DeepseekV3ForCausalLM/fp8"):
                refused = "FP8 KV cache is not supported by the Triton" in row.get("error", "")
                assert refused == (cap < (8, 9)), where
                if refused:
                    assert row["gpu"] != "" and f"(compute capability {cap[0]}.{cap[1]})" in row["error"], where
            if case.startswith("DeepseekV32ForCausalLM/"):
                assert bool(row.get("ok")) == (cap[0] in (9, 10)), where


# --- every figure from its source's own words (issue 38) --------------------------------------
FIGURES = ("device_name", "compute_capability", "nvml_total_bytes", "cuda_total_bytes")
MiB = 1 << 20


def _sections() -> dict[str, str]:
    """SOURCES.md's sections by key, whitespace collapsed (a quote may span an aligned column)."""
    text = (HERE / "SOURCES.md").read_text(encoding="utf-8")
    return {
        m.group(1): " ".join(m.group(2).split())
        for m in re.finditer(r"^## ([\w.-]+) —(.*?)(?=^## |\Z)", text, re.M | re.S)
    }


def _stated(field: str, quality: str | None, words: str) -> set[object]:
    """The figures ``words`` state for ``field``, read as the quality says they are written."""
    if field == "device_name":
        return {words}
    if field == "compute_capability":
        found = re.findall(r"major=(\d+), minor=(\d+)|sm_(\d)(\d)\b|(?<![\d.])(\d+)\.(\d)(?![\d.])", words)
        return {tuple(int(x) for x in m if x) for m in found}
    if quality == "unsupported":
        return {0} if "Not Supported" in words else set()
    if quality == "bytes":
        return {int(n) for n in re.findall(r"(\d+) bytes", words)}
    if quality == "mib":  # llama.cpp's memory breakdown prints MiB without a unit: "| total = free + ..."
        found = re.findall(r"([\d,]+)\s?(?:MiB|MB)\b|\| (\d+) =", words)
        return {int((a or b).replace(",", "")) * MiB for a, b in found}
    if quality == "mb-repr":
        return {int(n) * MiB for n in re.findall(r"total_memory=(\d+)MB", words)}
    if quality == "gib2":  # vLLM's and torch's two decimals (torchao's dump says "GB" for GiB)
        return {round(float(n) * GIB_) for n in re.findall(r"(\d+\.\d+) ?Gi?B", words)}
    return set()


GIB_ = 1 << 30


def test_every_figure_is_its_sources_quoted_figure() -> None:
    """Each device name, capability and total reads back out of the words its source is quoted
    with; a figure no source states is listed as unquoted, with why, and its quality says so."""
    sections = _sections()
    for row in _table():
        quoted, unquoted = row.get("quoted", {}), row.get("unquoted", {})
        for field in FIGURES:
            where = f"{row['name']}: {field}"
            assert (field in quoted) != (field in unquoted), f"{where}: quoted or unquoted (with why), once"
            if field in unquoted:
                assert field.endswith("_bytes") or field == "compute_capability", where
                if field.endswith("_bytes"):
                    assert row[field.replace("_bytes", "_quality")] == "spec", where
                continue
            key, words = quoted[field]
            assert key in row["sources"], f"{where}: {key} is not among the row's sources"
            assert " ".join(words.split()) in sections[key], f"{where}: {key} does not say {words!r}"
            quality = row.get(field.replace("_bytes", "_quality")) if field.endswith("_bytes") else None
            assert quality != "spec", f"{where}: a quoted figure is not a spec figure"
            figure = tuple(row[field]) if field == "compute_capability" else row[field]
            stated = _stated(field, quality, words)
            if field == "device_name":
                assert row["device_name"] in words, f"{where}: {words!r}"
            else:
                assert figure in stated, f"{where}: {figure} is not what {key} says ({words!r} -> {stated})"


def test_dryboots_default_gpu_is_a_posted_figure() -> None:
    """The H200 (the oracle's stand-in and dryboot's default) holds posted totals, not a placeholder."""
    (h200,) = [r for r in _table() if r["name"] == "H200"]
    assert h200["nvml_total_quality"] != "spec" and h200["cuda_total_quality"] != "spec"
    assert not h200.get("unquoted")
