"""Finding config.json offline: --model, local paths, the Hugging Face cache (HF_HUB_CACHE / HF_HOME)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dryboot.checklog.locate import find_config, hub_cache_dir
from dryboot.errors import InputError

from .conftest import REPO, make_hub_cache

CONFIG = REPO / "examples" / "models" / "Qwen3-Next-80B-A3B-Thinking.config.json"
REV = "0" * 39 + "1"
OTHER = "f" * 40


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)


def test_hub_cache_dir_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub_cache_dir() == (tmp_path / "home" / "hub", "HF_HOME")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "c"))
    assert hub_cache_dir() == (tmp_path / "c", "HF_HUB_CACHE")


def test_hub_id_main_via_hf_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_hub_cache(tmp_path / "home", {"Qwen/Qwen3-Next-80B-A3B-Thinking": CONFIG}, REV)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    found = find_config(None, "Qwen/Qwen3-Next-80B-A3B-Thinking")
    assert found.path == tmp_path / "home" / "hub" / "models--Qwen--Qwen3-Next-80B-A3B-Thinking" / "snapshots" / REV / (
        "config.json"
    )
    assert "revision main" in found.how


def test_hub_id_at_a_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub = make_hub_cache(tmp_path, {"org/m": CONFIG}, REV)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    assert find_config(None, "org/m", revision=REV).path.parent.name == REV
    with pytest.raises(InputError) as exc:
        find_config(None, "org/m", revision=OTHER)
    line = exc.value.line()
    assert f"no config.json for revision {OTHER}" in line
    assert f"it holds {REV[:12]} (main)" in line
    assert f"hf download org/m config.json --revision {OTHER}" in line


def test_repo_not_in_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub = make_hub_cache(tmp_path, {"org/m": CONFIG}, REV)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    with pytest.raises(InputError) as exc:
        find_config(None, "org/other", source="x.log")
    assert exc.value.line().startswith("x.log: model: org/other is not in the Hugging Face cache")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "missing"))
    with pytest.raises(InputError, match="does not exist"):
        find_config(None, "org/m")


def test_local_paths_and_model_option(tmp_path: Path) -> None:
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_bytes(CONFIG.read_bytes())
    assert find_config(None, str(d)).path == d / "config.json"
    assert find_config(str(CONFIG), "org/ignored").how == "--model"
    with pytest.raises(InputError, match=r"no config\.json there"):
        find_config(str(tmp_path / "nope"), None)
    with pytest.raises(InputError, match="local path that does not exist here"):
        find_config(None, "/models/gone")
    assert find_config(None, "org/m", hf_config_path=str(d)).how == "hf_config_path in the logged args"
