"""LongCat-Flash (0.32+) and Step-3.5 (0.33) read with transformers' own config class
(``LongcatFlashConfig``, ``Step3p7TextConfig``; switch ``hf_config_class_architectures``): the
fields the model class reads that the class does not define must be in config.json (vLLM fails
building the model otherwise: the 0.33.0 sweep's records), and the class's defaults fill the rest.

``data/weights/recorded-<release>-fields.json``: ``record_weights.py --tiny ARCH...
defaults/ARCH...`` in the release's boot environment with ``RECORD_WEIGHTS_OVERLAY`` (the doc's
``overlay``: the published checkpoints' values of those fields, merged into the tiny configs and
the defaults configs). Nothing recorded comes from dryboot. Needs no vLLM.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm.versions import VersionRules

sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_weights as T

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import RankWeights, rank_weights

DATA = Path(__file__).resolve().parent / "data" / "weights"
RELEASES = ("0.32.0", "0.33.0")
FIELDS = {v: json.loads((DATA / f"recorded-{v}-fields.json").read_text()) for v in RELEASES}
CASES = sorted((v, cid) for v, doc in FIELDS.items() for cid in doc["cases"])


def _config(version: str, row: dict[str, Any], overlay: bool = True) -> dict[str, Any]:
    name = row["config"]
    if name.startswith("arch--defaults--"):
        arch = name[len("arch--defaults--") :]
        config = json.loads((T.ARCHS / "defaults" / f"{arch}.json").read_text())
    else:
        config, _ = T._config(name)
        arch = config["architectures"][0]
    return {**config, **FIELDS[version]["overlay"][arch]} if overlay else config


def _stage(version: str, row: dict[str, Any], config: dict[str, Any], stage: int) -> RankWeights:
    par = replace(T._parallel(row["argv"], stage), vllm_version=version)
    return rank_weights(config, par, **T._serve(row))


def _figures(version: str, row: dict[str, Any], config: dict[str, Any]) -> list[list[int]]:
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    out = []
    for stage in range(len(stages)):
        w = _stage(version, row, config, stage)
        out.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    return out


def test_records_are_the_release() -> None:
    for v, doc in FIELDS.items():
        assert doc["vllm"] == v
        assert sum(row["ok"] for row in doc["cases"].values()) >= 8
    assert any(c.startswith("arch--defaults--") for c in FIELDS["0.33.0"]["cases"])


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_config_class_fields_match_the_release(version: str, cid: str) -> None:
    row = FIELDS[version]["cases"][cid]
    config = _config(version, row)
    if not row["ok"]:
        with pytest.raises(InputError):
            _stage(version, row, config, 0)
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    assert _figures(version, row, config) == stages


@pytest.mark.parametrize(("version", "cid"), [(v, c) for v, c in CASES if FIELDS[v]["cases"][c]["ok"]])
def test_without_the_fields_refused_as_vllm_refuses(version: str, cid: str) -> None:
    """The same config without the overlay's fields: vLLM's class has no attribute for the
    first the model class reads (recorded by the 0.33.0 sweep, and on 0.32.0 for LongCat)."""
    row = FIELDS[version]["cases"][cid]
    first = next(iter(FIELDS[version]["overlay"][_config(version, row)["architectures"][0]]))
    with pytest.raises(InputError, match=f"no attribute '{first}'"):
        _stage(version, row, _config(version, row, overlay=False), 0)


@pytest.mark.parametrize("version", RELEASES)
def test_config_class_switch_is_needed(version: str, flip_rules: Callable[..., VersionRules]) -> None:
    """With ``hf_config_class_architectures`` of the release emptied (vLLM's own classes and
    their defaults), some recorded case no longer matches."""
    flip_rules(version, hf_config_class_architectures=frozenset())
    broken = []
    for v, cid in CASES:
        row = FIELDS[v]["cases"][cid]
        if v != version or not row["ok"]:
            continue
        try:
            got = _figures(version, row, _config(version, row))
        except InputError:
            broken.append(cid)
            continue
        if got != (row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]):
            broken.append(cid)
    assert broken
