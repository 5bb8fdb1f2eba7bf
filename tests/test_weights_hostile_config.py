"""Hostile or malformed configs reach the weights walk as one clear refusal (``InputError``), never
another exception: every key of each modelled published config replaced by odd JSON values."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, modelled_architectures, rank_weights

CONFIGS = Path(__file__).resolve().parent / "fidelity" / "data" / "weights" / "configs"
MODELLED = sorted(
    p.name
    for p in CONFIGS.iterdir()
    if json.loads((p / "config.json").read_text())["architectures"][0] in modelled_architectures()
)
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.lists(st.integers(min_value=-1, max_value=2), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


def _mutate(config: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(config))
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def _paths(config: dict[str, Any]) -> list[list[str]]:
    paths = []
    for k, v in config.items():
        paths.append([k])
        if isinstance(v, dict):
            paths += [[k, k2] for k2 in v]
    return paths


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(MODELLED), st.data(), ODD, st.sampled_from([1, 2, 4]))
def test_odd_value_refused_in_one_line_or_served(name: str, data: Any, value: Any, tp: int) -> None:
    config = json.loads((CONFIGS / name / "config.json").read_text())
    path = data.draw(st.sampled_from(_paths(config)))
    with contextlib.suppress(InputError):
        rank_weights(_mutate(config, path, value), Parallel(tp=tp))
