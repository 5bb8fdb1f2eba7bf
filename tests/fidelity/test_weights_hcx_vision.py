"""HyperCLOVA X SEED vision V1's weights (``models/hyperclovax_vision.py``: ``HCXVisionForCausalLM``,
recorded on vLLM 0.27.1; 0.28.0 serves it too, unrecorded) against vLLM's own figures: parameter,
buffer and allocated bytes of each pipeline stage, and vLLM's refusals refused. Needs no vLLM.

``data/weights/hcx-vision/recorded-0.27.1.json``: recorded in the 0.27.1 multimodal boot environment
(``hyperclovax_vision.py`` imports timm) for the tiny config (``data/architectures/``, a linear
projector) and six derived stand-ins (``data/weights/hcx-vision/``, not published checkpoints):
``HCXVisionCAbs`` (C-Abstractor, anyres with 9 grids: ``image_newline``, a 72-wide tower),
``HCXVisionCAbsPrenorm`` (C-Abstractor with its prenorm and without ``pos_emb``, 224 / 14 patches,
``use_nth_layer`` -1), ``HCXVisionMlpClip`` / ``HCXVisionInvMlp`` (the MLP projectors, which vLLM
0.27.1 cannot build: refused by name), ``HCXVisionNoProj`` (another type) and ``HCXVisionNoType``
(no ``mm_projector_type``), at TP 1/2/4/8, three pipeline stages at TP 2 and ``--language-model-only``
at TP 1 and 2, with::

    RECORD_WEIGHTS_OUT=/tmp/hcx.json ~/.cache/dryboot/boot-env/0.27.1-mm/bin/python -c \\
      "import sys; from pathlib import Path; sys.path.insert(0, 'tests/fidelity'); import record_weights as R; \\
      R.ARCHS = Path('/tmp/hcx'); sys.argv = ['r', '--tiny']; sys.exit(R.main())"

with the seven configs in ``/tmp/hcx``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_weights import _parallel, _serve

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, modelled_architectures, rank_weights
from dryboot.vllm.model_executor.models import hyperclovax_vision as hcx

HERE = Path(__file__).resolve().parent
ARCH = "HCXVisionForCausalLM"
DATA = HERE / "data" / "weights" / "hcx-vision"
DOC = json.loads((DATA / "recorded-0.27.1.json").read_text())
CASES = sorted(DOC["cases"])


def _config(name: str) -> dict[str, Any]:
    path = HERE / "data" / "architectures" / f"{name}.json"
    config: dict[str, Any] = json.loads((path if path.exists() else DATA / f"{name}.json").read_text())
    return config


def _weights(row: dict[str, Any], stage: int = 0) -> Any:
    config = _config(row["config"][len("arch--") :])
    return rank_weights(config, replace(_parallel(row["argv"], stage), vllm_version="0.27.1"), **_serve(row))


def test_recorded() -> None:
    assert DOC["vllm"] == "0.27.1"
    assert ARCH in modelled_architectures()
    served = [row for row in DOC["cases"].values() if row["ok"]]
    assert len(served) == 18 and len(DOC["cases"]) == 49


@pytest.mark.parametrize("cid", CASES)
def test_matches_vllm(cid: str) -> None:
    """Every stage's bytes as vLLM 0.27.1 builds them (the tower on every stage), or its refusal refused."""
    row: dict[str, Any] = DOC["cases"][cid]
    if not row["ok"]:
        with pytest.raises(InputError):
            _weights(row)
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(len(stages)):
        w = _weights(row, stage)
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


def test_mlp_projector_refused_by_name() -> None:
    row = DOC["cases"]["arch--HCXVisionMlpClip --tensor-parallel-size 1 --language-model-only"]
    assert "text_config" in row["error"]
    with pytest.raises(InputError, match="HCXVisionMlp"):
        _weights(row)


def test_newline_kept_without_the_tower() -> None:
    """``image_newline`` is a parameter, not a module: ``--language-model-only`` keeps it (recorded)."""
    on = DOC["cases"]["arch--HCXVisionCAbs --tensor-parallel-size 1 --language-model-only"]
    off = DOC["cases"]["arch--HCXVisionForCausalLM --tensor-parallel-size 1 --language-model-only"]
    assert on["param_bytes"] - off["param_bytes"] == 512 * 2


def test_c_abstractor_counts() -> None:
    """Two RegStages of three bottlenecks (squeeze-excitation a quarter of the input), the readout's two
    linear layers; ``pos_emb`` over the patches, the prenorm when asked."""
    config = _config("HCXVisionCAbsPrenorm")
    counts = hcx.c_abstractor(config, 40, 512)
    block = 2 * 40 * 40 + 9 * 40 + 6 * 40 + 2 * 10 * 40 + 10 + 40
    assert sum(counts) == 2 * 40 + 6 * block + (512 * 40 + 512) + (512 * 512 + 512)
    with pytest.raises(InputError, match="square"):
        hcx.c_abstractor({**config, "num_queries_vis_abstractor_image": 80}, 40, 512)


def test_other_releases_refused() -> None:
    with pytest.raises(InputError, match=r"0\.27\.1 only"):
        rank_weights(_config(ARCH), Parallel(vllm_version="0.28.0"), max_num_batched_tokens=8192)
