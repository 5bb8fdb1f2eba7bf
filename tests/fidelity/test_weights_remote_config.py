"""Architectures whose ``model_type`` the transformers a release pins does not know (EXAONE,
InternLM3, IQuest-Coder, Sarvam-M MLA on 0.31.0-0.33.0): vLLM reads their config only with the
checkpoint's own config class (``auto_map``, ``--trust-remote-code``), then builds its own model
class. Their weights against each release's model class on the meta device.

``data/weights/recorded-<release>-remote.json``: ``record_weights.py --tiny ARCH...`` in the
release's boot environment with ``RECORD_WEIGHTS_CONFIG_CLASSES=<transformers 5.24 models
dir>:exaone,internlm3,iquestcoder,sarvam_mla`` (the 0.30.0 boot environment's transformers): what is
faked is the checkpoint's config class, stood in for by transformers 5.24's class of the same
``model_type`` (registered with ``AutoConfig``); the model class, the parallel layout and the
allocation are the release's own. Nothing recorded comes from dryboot. Needs no vLLM.
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
RELEASES = ("0.31.0", "0.32.0", "0.33.0")
REMOTE = {v: json.loads((DATA / f"recorded-{v}-remote.json").read_text()) for v in RELEASES}
#: what a published checkpoint of these names in its config.json (its own config class)
AUTO_MAP = {"AutoConfig": "configuration.Config", "AutoModelForCausalLM": "modeling.ForCausalLM"}
ARCHS = ("ExaoneForCausalLM", "InternLM3ForCausalLM", "IQuestCoderForCausalLM", "SarvamMLAForCausalLM")
CASES = sorted((v, cid) for v, doc in REMOTE.items() for cid in doc["cases"])


def _remote_config(row: dict[str, Any]) -> dict[str, Any]:
    config, _ = T._config(row["config"])
    return {**config, "auto_map": AUTO_MAP}


def _stage(version: str, row: dict[str, Any], config: dict[str, Any], stage: int) -> RankWeights:
    par = replace(T._parallel(row["argv"], stage), vllm_version=version)
    return rank_weights(config, par, **T._serve(row))


def test_records_are_the_release_and_every_architecture() -> None:
    for v, doc in REMOTE.items():
        assert doc["vllm"] == v
        assert {row["config"][len("arch--") :] for row in doc["cases"].values()} == set(ARCHS)
        assert sum(row["ok"] for row in doc["cases"].values()) >= 20


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_remote_config_matches_the_release(version: str, cid: str) -> None:
    row = REMOTE[version]["cases"][cid]
    config = _remote_config(row)
    if not row["ok"]:
        with pytest.raises(InputError):
            _stage(version, row, config, 0)
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(len(stages)):
        w = _stage(version, row, config, stage)
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("arch", ARCHS)
def test_without_its_own_config_class_refused_as_vllm_refuses(version: str, arch: str) -> None:
    """The tiny config without ``auto_map``: the release's transformers has no class for its
    ``model_type``, and vLLM refuses it (the 0.33.0 sweep's record of the same config)."""
    row = REMOTE[version]["cases"][f"arch--{arch} --tensor-parallel-size 1"]
    config, _ = T._config(row["config"])
    with pytest.raises(InputError, match="Transformers does not recognize"):
        _stage(version, row, config, 0)


def test_sarvam_gate_switch_is_needed(flip_rules: Callable[..., VersionRules]) -> None:
    """``VersionRules.moe_gate_model_dtype`` off (the float32 ``nn.Linear`` gate of 0.30.0): no
    Sarvam case of 0.31.0-0.33.0 matches."""
    for v in RELEASES:
        flip_rules(v, moe_gate_model_dtype=frozenset())
    for v, cid in CASES:
        row = REMOTE[v]["cases"][cid]
        if not cid.startswith("arch--SarvamMLA") or not row["ok"]:
            continue
        w = _stage(v, row, _remote_config(row), 0)
        first = (row.get("stages") or [[row["param_bytes"]]])[0][0]
        assert w.param_bytes != first, cid
