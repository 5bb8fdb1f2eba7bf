"""Fixtures for ``dryboot check-log`` tests: the logs vLLM wrote (tests/data/checklog) and a
Hugging Face cache laid out in tmp_path holding the configs those logs name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "checklog"


def figures() -> dict[str, Any]:
    """What vLLM computed for each logged boot (written by vllm_log_writer.py beside the logs)."""
    data: dict[str, Any] = json.loads((DATA / "figures.json").read_text())
    return data


def make_hub_cache(root: Path, repos: dict[str, Path], revision: str) -> Path:
    """models--org--name/snapshots/<revision>/config.json and refs/main, as huggingface_hub lays them out."""
    hub = root / "hub"
    for repo_id, config in repos.items():
        org, name = repo_id.split("/")
        repo = hub / f"models--{org}--{name}"
        snap = repo / "snapshots" / revision
        snap.mkdir(parents=True)
        (snap / "config.json").write_bytes(config.read_bytes())
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(revision)
    return hub


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HF_HUB_CACHE pointing at a cache with every model the test logs name (revision main)."""
    f = figures()
    repos = {s["model"]: REPO / s["config"] for s in f["scenarios"].values()}
    hub = make_hub_cache(tmp_path, repos, f["revision"])
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    return hub
