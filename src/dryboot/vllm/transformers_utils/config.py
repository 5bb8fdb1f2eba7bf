"""Read a Hugging Face ``config.json`` and choose the model family that reads it, as
``vllm/transformers_utils/config.py`` (``get_config``) and the model registry do.

:func:`load_model` is the entry point (a file or a directory); :func:`geometry_from_config` takes
an already parsed object. The family's rules are in :mod:`dryboot.vllm.models`; the typed field
access they share is :mod:`dryboot.vllm.config.hf`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, ModelGeometry
from dryboot.vllm.models.registry import family_for
from dryboot.vllm.models.wrappers import TEXT_CONFIG_PATHS

__all__ = ["apply_hf_overrides", "geometry_from_config", "load_config_json", "load_model", "text_config_fields"]


def load_config_json(path: str | Path) -> tuple[str, dict[str, Any]]:
    """Read ``path`` (a ``config.json`` or a directory holding one) as a JSON object.

    :returns: (the file's path as text, the parsed object).
    :raises InputError: missing file, unreadable JSON, or not an object.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    source = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(source, None, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(source, None, f"cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise InputError(source, None, "a config.json must hold a JSON object")
    return source, data


def load_model(path: str | Path, hf_overrides: dict[str, Any] | None = None) -> ModelGeometry:
    """Load a model's :class:`ModelGeometry` from its ``config.json`` (file or directory),
    with ``--hf-overrides`` applied (:func:`apply_hf_overrides`).

    :raises InputError: the file is missing or malformed, or a field the planner needs is
        missing or has the wrong type (the message names the field).
    """
    source, data = load_config_json(path)
    if hf_overrides:
        data = apply_hf_overrides(data, hf_overrides)
    return geometry_from_config(data, source)


def apply_hf_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``config.json`` with ``--hf-overrides`` applied as ``ModelConfig`` applies a dict: a
    value for a nested config (``text_config``...) updates it key by key, recursively; any
    other value replaces the key at the top level (a dict value whole, as ``setattr`` does).
    """
    out = dict(data)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key.endswith("_config"):
            out[key] = _update_nested(out[key], value)
        else:
            out[key] = value
    return out


def _update_nested(target: dict[str, Any], updates: dict[str, Any]) -> dict[str, Any]:
    out = dict(target)
    for key, value in updates.items():
        out[key] = (
            _update_nested(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def text_config_fields(data: dict[str, Any], source: str) -> tuple[str, ConfigFields]:
    """(architecture, fields of the language model): a multimodal wrapper's ``text_config``
    is read with the wrapper's other keys beneath it (``get_text_config``).

    :raises InputError: ``architectures`` is not a list of strings.
    """
    architectures = data.get("architectures") or []
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        raise InputError(source, "architectures", "must be a list of strings")
    architecture = architectures[0] if architectures else ""
    path = TEXT_CONFIG_PATHS.get(architecture, ("text_config",))
    # each level's other keys beneath the next level's
    merged: dict[str, Any] = {}
    level: Any = data
    for key in path:
        if not isinstance(level, dict) or not isinstance(level.get(key), dict):
            return architecture, ConfigFields(source, data, "", root=data)
        merged.update({k: v for k, v in level.items() if k != key})
        level = level[key]
    if "num_hidden_layers" in level:
        return architecture, ConfigFields(source, {**merged, **level}, "".join(f"{k}." for k in path), root=data)
    return architecture, ConfigFields(source, data, "", root=data)


def geometry_from_config(data: dict[str, Any], source: str = "<config>") -> ModelGeometry:
    """Build a :class:`ModelGeometry` from a parsed HF config object, by the rules of the
    model family that serves its architecture (:mod:`dryboot.vllm.models`).

    :raises InputError: as :func:`load_model`, and for an architecture dryboot does not model
        (named, with the families it does).
    """
    architecture, f = text_config_fields(data, source)
    family = family_for(architecture, source)
    return family.read(f.with_defaults(family.defaults(f)), architecture)
