"""``dryboot.vllm.versions``: version lookup and ``--vllm-version auto``."""

from __future__ import annotations

from importlib import metadata

import pytest

from dryboot.errors import InputError
from dryboot.vllm import versions


def test_table_entries_and_in_between_versions() -> None:
    assert versions.rules_for("0.27.1").version == "0.27.1"
    assert versions.rules_for("0.31.0").version == "0.30.0"
    with pytest.raises(InputError):
        versions.rules_for("0.26.0")


def test_auto_reads_the_installed_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata, "version", lambda name: "0.29.0+cu129" if name == "vllm" else "0")
    versions.rules_for.cache_clear()
    try:
        assert versions.resolve_version("auto") == "0.29.0"
        assert versions.rules_for("auto").version == "0.29.0"
    finally:
        versions.rules_for.cache_clear()


def test_auto_without_vllm_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    with pytest.raises(InputError, match="no vLLM is installed"):
        versions.resolve_version("auto")


def test_every_switch_is_read() -> None:
    """A switch declared in VersionRules must be read somewhere under src/dryboot."""
    import dataclasses
    from pathlib import Path

    src = Path(versions.__file__).resolve().parents[1]
    text = "".join(p.read_text() for p in src.rglob("*.py") if p.name != "versions.py")
    for f in dataclasses.fields(versions.VersionRules):
        if f.name != "version":
            assert f"rules.{f.name}" in text, f"{f.name} is declared but never read"
