"""A config with some top-level fields changed, for the tests that refuse or read one field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def changed(config: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``config`` with each field of ``changes`` set to its value, or removed where the
    value is ``None``."""
    out = dict(config)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out
