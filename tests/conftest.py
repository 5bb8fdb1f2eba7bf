from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
MODELS = SHARED / "data" / "models"


@pytest.fixture(scope="session")
def models_dir() -> Path:
    if not MODELS.is_dir():
        pytest.skip("../shared/data/models is not beside the clone")
    return MODELS
