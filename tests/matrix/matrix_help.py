"""Shared helpers of the matrix tests: corpus models, matrix files written to a directory."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "data" / "configs" / "public"
#: Light, published configs (tests/data/configs/public/<repo>/config.json with its SOURCE).
QWEN3_06B = CONFIGS / "Qwen--Qwen3-0.6B"
QWEN25_15B = CONFIGS / "Qwen--Qwen2.5-1.5B"


def write_matrix(directory: Path, text: str, name: str = "matrix.toml") -> Path:
    """MATRIX.toml in ``directory`` holding ``text``; its path."""
    p = directory / name
    p.write_text(text, encoding="utf-8")
    return p
