from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, bytes], Path]:
    """write(relpath, bytes) -> Path under tmp_path (parents created)."""

    def _w(rel: str, data: bytes) -> Path:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        return p

    return _w
