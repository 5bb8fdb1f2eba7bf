"""HY V4's weights (``HYV4ForCausalLM``, vLLM 0.29.0-0.33.0:
``model_executor/models/hy_v4.py``) against vLLM's own figures: parameter, buffer and allocated
bytes of each pipeline stage's rank 0. Needs no vLLM. On 0.29.0 / 0.30.0 every layer is built dense
MLA whatever ``layer_types`` says (switch ``hy_v4_dense_layers``): no indexer, every sink bfloat16,
``indexer_types`` not read (``hyv4-indexers-short`` served). 0.31.0 builds 0.32.0's weights (its
indexer ``k_norm`` float32 too: vLLM's ``LayerNorm`` of that release keeps float32 parameters) and
refuses ``hyv4-indexed`` (transformers 5.17's ``validate_layer_type`` lacks ``indexed_attention``).

Recorded in each release's boot environment with ``RECORD_WEIGHTS_WORKSPACE=1`` (the worker's workspace
manager first: the sparse MLA backend reserves its workspace at construction):
``recorded-<release>-hy-v4.json`` by ``record_weights.py --tiny HYV4ForCausalLM`` (its TP 1 case
also in ``recorded-<release>-sweep.json``, 0.30.0+), and ``recorded-<release>-hy-v4-configs.json`` over the KV
tests' variants and two of the weights' own (``hyv4-dense-plain``: dense MLA only, no iHC,
headwise gates, no sink, dense MLPs on layers 0 and 2; ``hyv4-mixed-gateless``: dense MLA layers
between sparse ones, explicit ``indexer_types``, no gate, three iHC channels) (``data/hy-v4/configs/*.json``,
each copied as ``<name>/config.json`` into the directory named by ``RECORD_WEIGHTS_CONFIGS``). On
the stand-in H200 (SM 9.0) a sparse layer's learnable sink is float32, a dense layer's bfloat16. A
case vLLM builds matches; a case vLLM refuses is refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from weights_records import assert_in_sweep, assert_stages, stage_parallel

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights
from dryboot.vllm.versions import VersionRules

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
ARCH = "HYV4ForCausalLM"
TINY = HERE / "data" / "architectures" / f"{ARCH}.json"
VARIANTS = HERE / "data" / "hy-v4" / "configs"
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: the releases that build every layer dense MLA (``VersionRules.hy_v4_dense_layers``)
DENSE_RELEASES = ("0.29.0", "0.30.0")
FILES = tuple(f"recorded-{v}-hy-v4{part}.json" for v in RELEASES for part in ("", "-configs"))
DOCS = {name: json.loads((DATA / name).read_text()) for name in FILES}
RECORDED = {(name, cid): row for name, doc in DOCS.items() for cid, row in doc["cases"].items()}
#: the variants with dense (``full_attention``) MLA layers
DENSE = {"hyv4-dense", "hyv4-mixed", "hyv4-dense-plain", "hyv4-mixed-gateless"}


def _config(row: dict[str, Any]) -> dict[str, Any]:
    path = TINY if row["config"].startswith("arch--") else VARIANTS / f"{row['config']}.json"
    config: dict[str, Any] = json.loads(path.read_text())
    return config


def _rank(row: dict[str, Any], stage: int, version: str = "0.33.0", capability: tuple[int, int] | None = (9, 0)) -> Any:
    argv = row["argv"]
    par = stage_parallel(argv, stage, version, capability=capability)
    return rank_weights(_config(row), par, max_num_batched_tokens=row.get("max_num_batched_tokens", 8192))


def test_recorded() -> None:
    assert [doc["vllm"] for doc in DOCS.values()] == [v for v in RELEASES for _ in range(2)]
    served = {name: sum(1 for (n, _), row in RECORDED.items() if n == name and row["ok"]) for name in FILES}
    assert served == {
        name: 7 if "configs" not in name else sum(1 for row in DOCS[name]["cases"].values() if row["ok"])
        for name in FILES
    }
    for v in RELEASES[1:]:  # 0.29.0 has no sweep record
        assert_in_sweep(v, ARCH, DOCS[f"recorded-{v}-hy-v4.json"]["cases"])


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    row: dict[str, Any] = RECORDED[(name, cid)]
    version = DOCS[name]["vllm"]
    assert_stages(row, lambda stage: _rank(row, stage, version))


def test_dense_variants_recorded_on_every_release() -> None:
    """Every dense and mixed variant is recorded served on each release at TP 1 / 2 / 4 / 8, EP at
    TP 2 / 8 and TP 2 x PP 3 (28 cases a release); every variant is served on 0.29.0 / 0.30.0 (75
    cases), the short ``indexer_types`` refused (7 cases) on 0.31.0-0.33.0 only, ``indexed_attention``
    (7 cases) on 0.31.0 only."""
    for v in RELEASES:
        cases = DOCS[f"recorded-{v}-hy-v4-configs.json"]["cases"].values()
        rows = [r for r in cases if r["config"] in DENSE]
        assert len(rows) == 28 and all(r["ok"] for r in rows), v
        refused = {r["config"] for r in cases if not r["ok"]}
        want = (
            set() if v in DENSE_RELEASES else {"hyv4-indexers-short"} | ({"hyv4-indexed"} if v == "0.31.0" else set())
        )
        assert refused == want, v


@pytest.mark.parametrize("version", DENSE_RELEASES)
def test_dense_releases_build_every_layer_dense(version: str) -> None:
    """On 0.29.0 / 0.30.0 the all-sparse config is built as its every-layer-dense reading: vLLM's
    figure is the same config with ``layer_types`` left out (no indexer, the sinks bfloat16), sized
    without a GPU; 0.32.0 builds the indexers and float32 sinks (more bytes)."""
    doc = DOCS[f"recorded-{version}-hy-v4-configs.json"]["cases"]
    cid = "hyv4-sparse --tensor-parallel-size 1"
    sparse = _rank(doc[cid], 0, version, capability=None)
    assert sparse.param_bytes == doc[cid]["param_bytes"]
    dense = json.loads((VARIANTS / "hyv4-sparse.json").read_text())
    dense.pop("layer_types")
    par = Parallel(vllm_version=version)
    assert rank_weights(dense, par, max_num_batched_tokens=8192).param_bytes == sparse.param_bytes
    later = DOCS["recorded-0.32.0-hy-v4-configs.json"]["cases"][cid]["param_bytes"]
    assert later > sparse.param_bytes


def test_dense_only_needs_no_gpu() -> None:
    """A model without sparse layers keeps every sink in bfloat16 whatever the GPU (no dense MLA
    backend takes sinks): sized without one; a mixed model's sparse sinks still need it."""
    dense = next(r for r in DOCS[FILES[1]]["cases"].values() if r["config"] == "hyv4-dense")
    assert _rank(dense, 0, capability=None).param_bytes == dense["param_bytes"]
    mixed = next(r for r in DOCS[FILES[1]]["cases"].values() if r["config"] == "hyv4-mixed")
    with pytest.raises(InputError, match="name the GPU"):
        _rank(mixed, 0, capability=None)


def test_other_layer_types_refused_by_name() -> None:
    config = {**json.loads(TINY.read_text()), "layer_types": ["sliding_attention"] * 4, "num_hidden_layers": 4}
    with pytest.raises(InputError, match="other layer types are not modelled"):
        rank_weights(config, Parallel(capability=(9, 0), vllm_version="0.33.0"), max_num_batched_tokens=8192)


@pytest.mark.parametrize(
    ("capability", "version", "words"),
    [
        (None, "0.33.0", "name the GPU"),
        ((8, 0), "0.32.0", "not recorded"),
        ((9, 0), "0.28.0", "vLLM 0.28.0's registry has no HYV4ForCausalLM"),
    ],
)
def test_refused_by_name(capability: tuple[int, int] | None, version: str, words: str) -> None:
    par = Parallel(capability=capability, vllm_version=version)
    with pytest.raises(InputError, match=words):
        rank_weights(json.loads(TINY.read_text()), par, max_num_batched_tokens=8192)


@pytest.mark.parametrize(("version", "flipped"), [("0.30.0", False), ("0.32.0", True)])
def test_dense_layers_switch_is_needed(version: str, flipped: bool, flip_rules: Callable[..., VersionRules]) -> None:
    """Flipping ``hy_v4_dense_layers`` breaks the release's recorded all-sparse case."""
    flip_rules(version, hy_v4_dense_layers=flipped)
    row = DOCS[f"recorded-{version}-hy-v4-configs.json"]["cases"]["hyv4-sparse --tensor-parallel-size 1"]
    assert _rank(row, 0, version).param_bytes != row["param_bytes"]


def test_release_31_builds_release_32s_weights() -> None:
    """0.31.0's recorded figures are 0.32.0's case for case, but for ``hyv4-indexed``, which 0.31.0
    refuses (its transformers' layer-type validation) and 0.32.0 serves."""
    for part in ("", "-configs"):
        old = DOCS[f"recorded-0.31.0-hy-v4{part}.json"]["cases"]
        new = DOCS[f"recorded-0.32.0-hy-v4{part}.json"]["cases"]
        assert old.keys() == new.keys()
        differ = {cid for cid in old if _figures(old[cid]) != _figures(new[cid])}
        assert differ == ({cid for cid in old if old[cid]["config"] == "hyv4-indexed"} if part else set())


def _figures(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("seconds", "error")}


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.31.0", "0.32.0"])
def test_indexed_layer_type_refused_on_release_31_only(version: str) -> None:
    """``indexed_attention`` is refused, in vLLM's words, on 0.31.0 alone (``refuses_indexed``)."""
    row = DOCS[f"recorded-{version}-hy-v4-configs.json"]["cases"]["hyv4-indexed --tensor-parallel-size 1"]
    assert row["ok"] == (version != "0.31.0")
    if row["ok"]:
        assert _rank(row, 0, version).param_bytes == row["param_bytes"]
        return
    with pytest.raises(InputError, match=r"validate_layer_type.*indexed_attention"):
        _rank(row, 0, version)
