"""Read a Hugging Face ``config.json`` and choose the model family that reads it, as
``vllm/transformers_utils/config.py`` (``get_config``) and the model registry do.

:func:`load_model` is the entry point (a file or a directory); :func:`geometry_from_config` takes
an already parsed object. The family's rules are in :mod:`dryboot.vllm.models`; the typed field
access they share is :mod:`dryboot.vllm.config.hf`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from dryboot.errors import InputError
from dryboot.inputs import open_regular
from dryboot.vllm import DATA
from dryboot.vllm.config.hf import ConfigFields, ModelGeometry
from dryboot.vllm.fp8_utils import block_shards
from dryboot.vllm.models.common import check_numeric_fields
from dryboot.vllm.models.llama import EAGLE_HEADS, eagle_head_refusal
from dryboot.vllm.models.registry import Family, family_for
from dryboot.vllm.models.wrappers import TEXT_CONFIG_ALONE, TEXT_CONFIG_PATHS
from dryboot.vllm.transformers_utils.speculators import is_speculators, verifier

__all__ = [
    "apply_hf_overrides",
    "check_config",
    "geometry_from_config",
    "load_config_json",
    "load_model",
    "text_config_fields",
    "unknown_override_keys",
    "with_hf_quant_config",
]

#: the largest ``config.json`` read (the largest published ones are tens of KiB)
MAX_CONFIG_BYTES = 16 << 20
#: the first four bytes of a GGUF file (llama.cpp's format, which vLLM's GGUF loader reads)
GGUF_MAGIC = b"GGUF"
#: the deepest nesting taken (published configs nest three or four levels)
MAX_DEPTH = 64


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
        with open_regular(p, source) as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise InputError(source, None, f"cannot read: {exc.strerror or exc}") from None
    if raw[:4] == GGUF_MAGIC:
        # vLLM reads a .gguf file's own metadata (its GGUF loader); dryboot reads config.json only
        raise InputError(
            source, None, "a GGUF file: GGUF checkpoints are not modelled (give the config.json directory)"
        )
    if len(raw) > MAX_CONFIG_BYTES:
        raise InputError(source, None, f"larger than {MAX_CONFIG_BYTES >> 20} MiB: not a config.json")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(source, f"byte {exc.start}", "not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(source, None, f"nested deeper than {MAX_DEPTH} levels: not a config.json") from None
    if not isinstance(data, dict):
        raise InputError(source, None, "a config.json must hold a JSON object")
    return source, data


def check_config(data: dict[str, Any], source: str) -> None:
    """What every config must be before a family reads it: at most :data:`MAX_DEPTH` levels of
    nesting, and each ``model_type`` a string (at the top and in every sub-config).

    :raises InputError: naming the field.
    """
    todo: list[tuple[Any, str, int]] = [(data, "", 1)]
    while todo:
        value, path, depth = todo.pop()
        if depth > MAX_DEPTH:
            raise InputError(source, path.rstrip(".") or None, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            kind = value.get("model_type")
            if kind is not None and not isinstance(kind, str):
                raise InputError(source, f"{path}model_type", f"must be a string, got {json.dumps(kind)}")
            todo.extend((v, f"{path}{k}.", depth + 1) for k, v in value.items() if isinstance(v, dict | list))
        elif isinstance(value, list):
            todo.extend(
                (v, f"{path.rstrip('.')}[{i}].", depth + 1) for i, v in enumerate(value) if isinstance(v, dict | list)
            )


def check_model_type(architecture: str, family: Family, data: dict[str, Any], source: str) -> None:
    """Refuse a ``model_type`` that names another family's config class: vLLM would read the
    file with that class and build ``architecture`` from it, a pairing no family models.

    :raises InputError: naming ``model_type``, the architecture and what its family reads.
    """
    kind = data.get("model_type")
    table = _model_types()
    if not isinstance(kind, str) or kind not in table.values():
        return  # a config class no family names: the family's own rules decide
    if architecture in EAGLE_HEADS and eagle_head_refusal(kind, data) is None:
        return  # vLLM's EAGLEConfig reads a head with whatever class its model_type names
    mine = {table[a] for a in family.architectures if a in table}
    if kind not in mine:
        owners = sorted(a for a, t in table.items() if t == kind)
        raise InputError(
            source,
            "model_type",
            f"{kind!r} is the config class of {', '.join(owners)}, but architectures names {architecture} "
            f"(read as {', '.join(sorted(mine))}): the two disagree, and dryboot does not guess which one vLLM's "
            "checkpoint means",
        )


@lru_cache(maxsize=1)
def _model_types() -> dict[str, str]:
    """architecture -> its config class's ``model_type`` (``data/model-types.json``)."""
    table: dict[str, str] = json.loads((DATA / "model-types.json").read_text(encoding="utf-8"))
    return table


def unknown_override_keys(data: dict[str, Any], overrides: dict[str, Any]) -> list[str]:
    """The ``--hf-overrides`` keys ``config.json`` does not have (dotted for a nested config):
    vLLM sets them anyway, so a misspelled key changes nothing, silently."""
    out = []
    for key, value in overrides.items():
        if key not in data:
            out.append(key)
        elif isinstance(value, dict) and isinstance(data[key], dict) and key.endswith("_config"):
            out += [f"{key}.{k}" for k in unknown_override_keys(data[key], value)]
    return out


def load_model(path: str | Path, hf_overrides: dict[str, Any] | None = None) -> ModelGeometry:
    """Load a model's :class:`ModelGeometry` from its ``config.json`` (file or directory),
    with ``--hf-overrides`` applied (:func:`apply_hf_overrides`).

    :raises InputError: the file is missing or malformed, or a field the planner needs is
        missing or has the wrong type (the message names the field).
    """
    source, data = load_config_json(path)
    data = with_hf_quant_config(data, source)
    if hf_overrides:
        data = apply_hf_overrides(data, hf_overrides)
    return geometry_from_config(data, source)


#: model_types whose vLLM config class sets ``architectures`` itself, whatever the checkpoint names (0.33.0's
#: ``MuseSparkConfig.__init__``): the class vLLM resolves and builds (a ``muse_spark`` config naming
#: MuseSparkDSparkModel starts as MuseSparkForConditionalGeneration: recorded on 0.33.0,
#: tests/fidelity/test_drafter_as_model.py)
OWN_ARCHITECTURES = {"muse_spark": "MuseSparkForConditionalGeneration"}


def named_by_config_class(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``architectures`` as vLLM's config class sets it (:data:`OWN_ARCHITECTURES`);
    unchanged for any other model_type."""
    own = OWN_ARCHITECTURES.get(str(data.get("model_type")))
    if own is None or data.get("architectures") == [own]:
        return data
    return {**data, "architectures": [own]}


def refuse_drafter_as_model(path: str | Path, version: str, hf_overrides: dict[str, Any] | None = None) -> None:
    """Refuse a checkpoint whose ``architectures`` names a speculative-decoding class of vLLM ``version``'s
    registry, as vLLM does not serve it as the model
    (:func:`dryboot.vllm.models.drafter_as_model.drafter_as_model_refusal`); checked before the config is
    read as a model's (most drafter classes are no family's). A speculators-format config is left to
    :func:`load_model` (vLLM serves its verifier), and so is a config whose class sets its own architectures
    (:data:`OWN_ARCHITECTURES`).

    :raises InputError: naming the class and how vLLM fails on it.
    """
    from dryboot.vllm.models.drafter_as_model import drafter_as_model_refusal  # at call: a refusal's only

    source, data = load_config_json(path)
    if hf_overrides:
        data = apply_hf_overrides(data, hf_overrides)
    archs = data.get("architectures")
    if is_speculators(data) or not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        return  # load_model says what is wrong, or reads it
    if data.get("model_type") in OWN_ARCHITECTURES:
        return  # vLLM's config class names the class it builds (load_model reads it as that class)
    if (why := drafter_as_model_refusal(archs[0], version)) is not None:
        raise InputError(source, "architectures", why)


#: the file ModelOpt 0.29 and earlier keep their quantization config in, beside ``config.json``
HF_QUANT_CONFIG = "hf_quant_config.json"


def with_hf_quant_config(data: dict[str, Any], source: str) -> dict[str, Any]:
    """``config.json`` (read from ``source``) with the ``hf_quant_config.json`` beside it as its
    ``quantization_config``, where it has none: vLLM 0.28.0 ``get_config`` reads that file then,
    and ``_normalize_quantization_config`` names a ModelOpt one's ``quant_method`` from its
    ``quantization.quant_algo`` (FP8 kinds: ``modelopt``; NVFP4: ``modelopt_fp4``). Only a file
    named ``config.json`` has such a sibling (any other name is a config on its own).

    :raises InputError: the file is unreadable, not a JSON object, or names a ModelOpt
        ``quant_algo`` vLLM does not know (its ``ValueError``).
    """
    config = Path(source)
    sibling = config.with_name(HF_QUANT_CONFIG)
    if data.get("quantization_config") is not None or config.name != "config.json" or not sibling.is_file():
        return data
    where, quant = load_config_json(sibling)
    check_config(quant, where)
    return {**data, "quantization_config": quant}


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
    is read with the wrapper's other keys beneath it (``get_text_config``), except where the wrapper builds
    it from its own keys alone (:data:`~dryboot.vllm.models.wrappers.TEXT_CONFIG_ALONE`).

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
        if architecture not in TEXT_CONFIG_ALONE:
            merged.update({k: v for k, v in level.items() if k != key})
        level = level[key]
    if "num_hidden_layers" in level:
        return architecture, ConfigFields(source, {**merged, **level}, "".join(f"{k}." for k in path), root=data)
    return architecture, ConfigFields(source, data, "", root=data)


#: top-level ``model_type`` -> (the ``text_config.model_type`` its config class renames, the name
#: it gives it): transformers' ``Exaone4_5_Config`` reads EXAONE 4.5's first published
#: ``exaone4_5_text`` as ``exaone4`` (transformers 5.10-5.24, every release's venv)
TEXT_MODEL_TYPE_RENAMES: dict[str, tuple[str, str]] = {"exaone4_5": ("exaone4_5_text", "exaone4")}


#: top-level ``model_type`` -> the ``text_config`` keys its config class renames (vLLM's
#: ``HCXVisionConfig.text_config_attribute_map``: GPT-2's names to the common ones, which
#: ``GPT2Config`` maps back, so a GPT-2 text model answers to both)
TEXT_KEY_RENAMES: dict[str, dict[str, str]] = {
    "hyperclovax_vlm": {
        "n_embd": "hidden_size",
        "n_positions": "max_position_embeddings",
        "n_head": "num_attention_heads",
        "n_layer": "num_hidden_layers",
    }
}


def renamed_text_model_type(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its ``text_config.model_type`` renamed as its config class renames it
    (:data:`TEXT_MODEL_TYPE_RENAMES`) and its text keys given their common names too
    (:data:`TEXT_KEY_RENAMES`); ``data`` itself when nothing is renamed."""
    text = data.get("text_config")
    keys = TEXT_KEY_RENAMES.get(str(data.get("model_type")))
    if keys is not None and isinstance(text, dict) and any(k in text for k in keys):
        data = {**data, "text_config": {**text, **{new: text[old] for old, new in keys.items() if old in text}}}
        text = data["text_config"]
    rename = TEXT_MODEL_TYPE_RENAMES.get(str(data.get("model_type")))
    if rename is None or not isinstance(text, dict) or text.get("model_type") != rename[0]:
        return data
    return {**data, "text_config": {**text, "model_type": rename[1]}}


def geometry_from_config(data: dict[str, Any], source: str = "<config>") -> ModelGeometry:
    """Build a :class:`ModelGeometry` from a parsed HF config object, by the rules of the
    model family that serves its architecture (:mod:`dryboot.vllm.models`).

    :raises InputError: as :func:`load_model`, and for an architecture dryboot does not model
        (named, with the families it does).
    """
    check_config(data, source)
    if is_speculators(data):
        raise InputError(
            source,
            "speculators_config",
            f"a speculators-format draft model: vLLM serves its verifier ({verifier(data)}) with it as the drafter; "
            "plan the verifier's config with this one as --speculative-config model",
        )
    data = renamed_text_model_type(named_by_config_class(data))
    architecture, f = text_config_fields(data, source)
    family = family_for(architecture, source)
    check_model_type(architecture, family, data, source)
    check_numeric_fields(f)
    model = family.read(f.with_defaults(family.defaults(f)), architecture)
    if f.prefix and model.mamba.hf_layer_types:
        # read from the wrapper's text config: vLLM's hf_config is the wrapper's class, which keeps
        # no layer_types of its own (ModelConfig.is_hybrid: Qwen3.5's multimodal classes)
        model = model.evolve(hf_layer_types=False)
    shards = block_shards(f.root.get("quantization_config") or f.data.get("quantization_config"), f.data)
    if shards:
        model = model.evolve(fp8_block_shards=shards)
    auto_map = data.get("auto_map")
    return model.evolve(
        hf_model_type=str(data.get("model_type") or ""),
        auto_config=isinstance(auto_map, dict) and "AutoConfig" in auto_map,
    )
