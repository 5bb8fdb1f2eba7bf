from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from dryboot.vllm.versions import VersionRules

# CI runs the property tests derandomized (the same examples every run, so a landing never
# depends on a draw); a developer's run explores new examples each time
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]

# --- git's configuration is the tests' own (issue 38): the git oracles (``git apply``, ``git am``) read
# no user or system config, so a stray ``~/.gitconfig`` (``core.autocrlf``, ``apply.whitespace``) cannot
# change the truth; set at import, before any test module builds its environment from os.environ.
#: The variables that pin it; tests that build a git environment from scratch add these.
GIT_PINNED = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
for _name in [n for n in os.environ if n.startswith("GIT_")]:
    del os.environ[_name]
os.environ.update(GIT_PINNED)
#: The model configs the repository ships (examples and tests share them).
MODELS = REPO / "examples" / "models"


@pytest.fixture(scope="session")
def models_dir() -> Path:
    """``examples/models``: Hugging Face configs shipped with the repository."""
    return MODELS


# --- a VersionRules switch flipped for one test ------------------------------------------------
@pytest.fixture
def flip_rules() -> Iterator[Callable[..., VersionRules]]:
    """Replace fields of a release's :class:`VersionRules` for one test: ``flip_rules("0.30.0",
    switch=value)`` sets them in ``VERSIONS`` (``version`` must be a table entry) and clears
    ``rules_for``'s cache, returning the flipped rules; the test's end puts every flipped release
    back and clears the cache again."""
    from dryboot.vllm import versions  # at call: the conftest imports no dryboot module

    saved: dict[str, VersionRules] = {}

    def flip(version: str, **fields: Any) -> VersionRules:
        saved.setdefault(version, versions.VERSIONS[version])
        flipped = dataclasses.replace(versions.VERSIONS[version], **fields)
        versions.VERSIONS[version] = flipped
        versions.rules_for.cache_clear()
        return flipped

    try:
        yield flip
    finally:
        versions.VERSIONS.update(saved)
        versions.rules_for.cache_clear()


# --- the network marker (issue 28): the default run is hermetic -------------------------------
#: Setting this environment variable to ``1`` runs the tests marked ``network`` (``.ci/run`` does).
NETWORK_ENV = "DRYBOOT_NETWORK"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-network",
        action="store_true",
        default=False,
        help=f"run the tests marked 'network' (they fetch from Debian and PyPI); same as {NETWORK_ENV}=1",
    )


def _network_on(config: pytest.Config) -> bool:
    return bool(config.getoption("--run-network")) or os.environ.get(NETWORK_ENV) == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the ``network`` tests unless asked for: a bare clone's ``pytest`` needs no network."""
    if _network_on(config):
        return
    skip = pytest.mark.skip(reason=f"needs the network (package registries): set {NETWORK_ENV}=1 or --run-network")
    for item in items:
        if "network" in item.keywords:
            item.add_marker(skip)
