from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The model configs the repository ships (examples and tests share them).
MODELS = REPO / "examples" / "models"


@pytest.fixture(scope="session")
def models_dir() -> Path:
    """``examples/models``: Hugging Face configs shipped with the repository."""
    return MODELS
