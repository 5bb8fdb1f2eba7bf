"""The boot environment the boot tests run in.

Named explicitly: ``$DRYBOOT_BOOT_PYTHON``, else ``$DRYBOOT_VLLM_PYTHON`` when it holds vLLM 0.28.0
(``export DRYBOOT_BOOT_PYTHON="$(dryboot boot-env --vllm-version 0.28.0 | tail -n 1)"``). An environment
that merely happens to sit in ``~/.cache/dryboot/boot-env`` is not used: whether these tests run is
never decided by the machine's cache. With none named, the tests that need it skip, saying so --
unless ``CI`` is set: CI builds the environment and names it first (``.ci/run``), and there a
missing one is a failure, never a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dryboot.boot.env import installed_vllm
from dryboot.boot.session import resolve_tree
from dryboot.errors import InputError

RELEASE = "0.28.0"


def _candidates() -> list[str]:
    found = [os.environ.get("DRYBOOT_BOOT_PYTHON"), os.environ.get("DRYBOOT_VLLM_PYTHON")]
    return [c for c in found if c]


def _release_of(python: str) -> str | None:
    try:
        return resolve_tree(str(installed_vllm(python).parent)).version
    except InputError:
        return None


@pytest.fixture(scope="session")
def boot_python() -> str:
    for c in _candidates():
        if Path(c).is_file() and _release_of(c) == RELEASE:
            return c
    why = (
        f"no vLLM {RELEASE} boot environment named: set DRYBOOT_BOOT_PYTHON to the python of "
        f"`dryboot boot-env --vllm-version {RELEASE}` (its last line)"
    )
    if os.environ.get("CI"):
        pytest.fail(why + "; CI builds one in .ci/run")
    pytest.skip(why)


@pytest.fixture(scope="session")
def pristine(boot_python: str) -> Path:
    """The environment's installed vLLM package (``site-packages/vllm``)."""
    return installed_vllm(boot_python)
