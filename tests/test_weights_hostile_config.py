"""Hostile or malformed configs reach the weights walk as one clear refusal (``InputError``), never
another exception: every key of each modelled published config replaced by odd JSON values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, modelled_architectures, rank_weights

CONFIGS = Path(__file__).resolve().parent / "fidelity" / "data" / "weights" / "configs"
#: every planned architecture's tiny config (the families no published config reaches)
#: the published DeepSeek-V4-Flash config of the DeepSeek-V4 weights cases
DSV4_FLASH = Path(__file__).resolve().parent / "fidelity/data/weights/quant-configs-dsv4/deepseek-ai--DeepSeek-V4-Flash"
TINY = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures"
TINY_MODELLED = sorted(p.stem for p in TINY.glob("*.json") if p.stem in modelled_architectures())
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


#: the value drawn to leave the config as published
KEEP = object()


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


def _served_or_one_line(config: dict[str, Any], tp: int) -> int | None:
    """The rank's parameter bytes, or ``None`` after a one-line refusal (anything else propagates)."""
    try:
        w = rank_weights(config, Parallel(tp=tp))
    except InputError as e:
        assert "\n" not in e.line() and e.reason, e.line()
        return None
    assert w.param_bytes > 0 and w.allocated_bytes >= w.total_bytes, (w.param_bytes, w.allocated_bytes)
    assert sum(w.by_kind.values()) == w.param_bytes
    return w.param_bytes


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(MODELLED), st.data(), st.one_of(ODD, st.just(KEEP)), st.sampled_from([1, 2, 4]))
def test_odd_value_refused_in_one_line_or_served(name: str, data: Any, value: Any, tp: int) -> None:
    """One key of a published config replaced by an odd value (or kept: the valid path): a one-line
    refusal, or weights that add up; the unchanged config gives the published config's figure."""
    config = json.loads((CONFIGS / name / "config.json").read_text())
    path = data.draw(st.sampled_from(_paths(config)))
    kept = value is KEEP
    got = _served_or_one_line(config if kept else _mutate(config, path, value), tp)
    event("kept, " + ("served" if got is not None else "refused") if kept else "odd, served" if got else "odd, refused")
    if kept:
        assert got == _served_or_one_line(config, tp)  # deterministic: the same config, the same answer


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TINY_MODELLED), st.data(), ODD, st.sampled_from([1, 2, 4]))
def test_odd_value_in_a_tiny_config_refused_in_one_line_or_served(name: str, data: Any, value: Any, tp: int) -> None:
    """The same for the planned architectures' tiny configs: every family's walk (those of
    ``models/`` included) answers an odd value with a one-line refusal or weights that add up."""
    config = json.loads((TINY / f"{name}.json").read_text())
    path = data.draw(st.sampled_from(_paths(config)))
    got = _served_or_one_line(_mutate(config, path, value), tp)
    event("odd, served" if got else "odd, refused")


@settings(max_examples=200, deadline=None)
@given(st.data(), ODD, st.sampled_from([1, 2, 8]))
def test_odd_value_in_deepseek_v4_on_a_modelled_gpu(data: Any, value: Any, tp: int) -> None:
    """DeepSeek-V4-Flash is refused without a GPU (its experts' layout is the GPU's): the same on
    SM 8.0 and vLLM 0.33.0, where its walk runs (``models/deepseek_v4.py``)."""
    config = json.loads((DSV4_FLASH / "config.json").read_text())
    path = data.draw(st.sampled_from(_paths(config)))
    try:
        w = rank_weights(
            _mutate(config, path, value),
            Parallel(tp=tp, capability=(8, 0), vllm_version="0.33.0"),
            max_num_batched_tokens=2048,
        )
    except InputError as e:
        assert "\n" not in e.line() and e.reason, e.line()
        return
    assert w.param_bytes > 0 and w.allocated_bytes >= w.total_bytes
    assert sum(w.by_kind.values()) == w.param_bytes


def test_a_huge_layer_count_is_refused_not_built() -> None:
    """A tower ``depth`` or ``num_hidden_layers`` in the billions (found by
    ``test_numeric_config_fields``: the walk listed one entry per layer and ran out of memory) is
    refused in one line naming the field."""
    config = json.loads((TINY / "Qwen3VLForConditionalGeneration.json").read_text())
    config["vision_config"] = {**config["vision_config"], "depth": 2_686_576_898}
    try:
        rank_weights(config, Parallel())
    except InputError as exc:
        assert exc.where == "depth" and "more layers than dryboot plans" in exc.reason
    else:
        raise AssertionError("planned a tower of 2,686,576,898 layers")
