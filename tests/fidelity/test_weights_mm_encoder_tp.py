"""``--mm-encoder-tp-mode data`` (issue 37): dryboot's per-rank weights and geometry against what
vLLM builds on the meta device, for towered wrappers at TP 2 and 4.

A class with ``supports_encoder_tp_data`` builds its tower unsharded on every TP rank (sized so for
:data:`~dryboot.vllm.config.mm_encoder_tp.SIZED_DATA_TOWERS`: Qwen2-VL, Qwen2.5-VL, Qwen3-VL (MoE),
Qwen3.5, GLM-4.1V, Kimi-VL, Step3-VL, and (``recorded-<release>-mmtp-more.json``) Isaac and
Llama-4 (their projectors stay split), Kimi-K2.5, HunYuan-VL (0.28.0), Cosmos3 (Edge),
Alpamayo2-Super, Cohere Compass, EXAONE 4.5, GLM-OCR, MiniCPM-V 4.6 / 4.7, Qianfan-OCR, and
(``recorded-0.33.0-mmtp-issue33.json``) Step5's wrapper; others refused by name); a class without
it falls back to ``weights`` (Gemma-3, LLaVA: the ``weights`` figures, with vLLM's warning as a
note). ``recorded-<release>-mmtp-heads.json``: towers whose heads TP 4 does not
divide (the file's ``overlay``): vLLM refuses them in ``weights`` mode and builds them in ``data``
mode, and so does dryboot's geometry.

Recorded in each release's boot environment (tiny configs of ``data/architectures/``)::

    RECORD_WEIGHTS_MM_ENCODER_TP=1 RECORD_WEIGHTS_FLAGS="--mm-encoder-tp-mode data" \\
        RECORD_WEIGHTS_OUT=tests/fidelity/data/weights/recorded-0.28.0-mmtp.json \\
        nice -n 10 ~/.cache/dryboot/boot-env/0.28.0/bin/python tests/fidelity/record_weights.py --tiny \\
        Qwen2_5_VLForConditionalGeneration Qwen2VLForConditionalGeneration Qwen3VLForConditionalGeneration \\
        Qwen3VLMoeForConditionalGeneration Qwen3_5ForConditionalGeneration Qwen3_5MoeForConditionalGeneration \\
        Glm4vForConditionalGeneration Glm4vMoeForConditionalGeneration KimiVLForConditionalGeneration \\
        Step3VLForConditionalGeneration IsaacForConditionalGeneration Gemma3ForConditionalGeneration \\
        LlavaForConditionalGeneration
    RECORD_WEIGHTS_MM_ENCODER_TP=1 RECORD_WEIGHTS_FLAGS="--tensor-parallel-size 4" \\
        RECORD_WEIGHTS_OUT=tests/fidelity/data/weights/recorded-0.28.0-mmtp-heads.json \\
        RECORD_WEIGHTS_OVERLAY='{"Qwen2_5_VLForConditionalGeneration": {"vision_config": {... "num_heads": 2}}}' \\
        nice -n 10 ~/.cache/dryboot/boot-env/0.28.0/bin/python tests/fidelity/record_weights.py --tiny \\
        Qwen2_5_VLForConditionalGeneration

(the same on 0.33.0; Step3-VL's heads overlay likewise.) ``recorded-<release>-mmtp-more.json``: the
same flags over ``Llama4ForConditionalGeneration KimiK25ForConditionalGeneration
HunYuanVLForConditionalGeneration Alpamayo2Super CohereCompassForConditionalGeneration
Cosmos3ForConditionalGeneration Cosmos3EdgeForConditionalGeneration Exaone4_5_ForConditionalGeneration
GlmOcrForConditionalGeneration MiniCPMV4_6ForConditionalGeneration MiniCPMV4_7ForConditionalGeneration
QianfanOCRForConditionalGeneration`` (0.33.0: and Qwen4ExpForConditionalGeneration at TP 2);
``recorded-<release>-mmtp-internvl.json``: the same flags over ``InternVLChatModel`` (its config files
beside it, ``--trust-remote-code``: ``remote_code_table.WEIGHTS_TRUSTED``).
``recorded-<release>-mmtp-kimi-k3.json``: the same flags over ``KimiK3ForConditionalGeneration`` with
``RECORD_WEIGHTS_GPU_CAST=1`` (its tower cast as on a GPU: ``test_weights_kimi_k3.py``), the
cases of classes a release does not register (or serves
through the Transformers backend: HunYuan-VL on 0.33.0) left out.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_weights import _attr_bytes, _parallel, _serve

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/ with the walk)
from dryboot.cli import cli
from dryboot.errors import InputError
from dryboot.vllm.config.mm_encoder_tp import FALLBACK_WARNING, SIZED_DATA_TOWERS, support
from dryboot.vllm.model_executor.model_loader.weights import rank_weights

HERE = Path(__file__).resolve().parent
ARCHS = HERE / "data" / "architectures"
DATA = HERE / "data" / "weights"
RECORDED = {p.stem[len("recorded-") :]: json.loads(p.read_text()) for p in sorted(DATA.glob("recorded-*-mmtp*.json"))}
CASES = sorted((name, cid) for name, doc in RECORDED.items() for cid in doc["cases"])


def _config(doc: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    arch = row["config"][len("arch--") :]
    config: dict[str, Any] = json.loads((ARCHS / f"{arch}.json").read_text())
    return {**config, **doc.get("overlay", {}).get(arch, {})}


def _mode(argv: list[str]) -> str:
    return argv[argv.index("--mm-encoder-tp-mode") + 1] if "--mm-encoder-tp-mode" in argv else "weights"


def _length(config: dict[str, Any]) -> int:
    """The recorder's ``--max-model-len``: 4096, or the model's own where shorter (Kimi-K2.5's
    tiny text model: 2048)."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    return min(4096, int(text.get("max_position_embeddings") or 4096))


def _plan(tmp_path: Path, config: dict[str, Any], argv: list[str]) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    res = CliRunner().invoke(
        cli, ["plan", "--json", "--model", str(path), "--max-model-len", str(_length(config)), *argv]
    )
    doc: dict[str, Any] = json.loads(res.stdout[res.stdout.find("{") :]) if "{" in res.stdout else {}
    return res.exit_code, doc


def test_records_cover_both_releases() -> None:
    assert {doc["vllm"] for doc in RECORDED.values()} == {"0.28.0", "0.33.0"}
    archs = {row["config"][len("arch--") :] for doc in RECORDED.values() for row in doc["cases"].values()}
    assert archs >= SIZED_DATA_TOWERS
    assert "Gemma3ForConditionalGeneration" in archs


@pytest.mark.parametrize(("name", "cid"), CASES)
def test_weights_match_vllm(name: str, cid: str) -> None:
    """[param, buffer, allocated] bytes of rank 0: the sized towers whole, the fallback classes as
    ``weights`` splits them; vLLM's refusals refused; a supporting class not sized (Isaac) refused
    by the plan, by name."""
    doc = RECORDED[name]
    row, release = doc["cases"][cid], doc["vllm"]
    config, argv = _config(doc, row), row["argv"]
    arch = config["architectures"][0]
    par = replace(_parallel(argv), vllm_version=release, mm_encoder_tp_mode=_mode(argv))
    if not row["ok"]:
        with pytest.raises(InputError):
            rank_weights(config, par, **_serve(row))
        return
    kind = support(arch, release)
    assert kind in ("data", "fallback")
    if kind == "data" and arch not in SIZED_DATA_TOWERS:
        return  # refused by the plan: test_plan_refuses_the_towers_not_sized
    w = rank_weights(config, par, max_model_len=_length(config), **_serve(row))
    got = [w.param_bytes, w.buffer_bytes - _attr_bytes(config, row), w.allocated_bytes]
    assert got == [row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]


@pytest.mark.parametrize(("name", "cid"), CASES)
def test_plan_geometry_and_weights(tmp_path: Path, name: str, cid: str) -> None:
    """The plan of each recorded case: vLLM's build refused where vLLM fails (a tower's heads
    that TP does not divide, ``weights`` mode); served where it builds (``data`` mode: the
    tower-head check skipped), with the recorded allocation, the fallback's warning, or the
    weights refused by name (a supporting class dryboot does not size whole)."""
    doc = RECORDED[name]
    row, release = doc["cases"][cid], doc["vllm"]
    config, argv = _config(doc, row), row["argv"]
    arch = config["architectures"][0]
    rc, plan = _plan(tmp_path, config, ["--vllm-version", release, *argv])
    if not row["ok"]:
        assert rc != 0
        return
    assert rc == 0, plan.get("errors")
    weights = plan["weights"]
    if arch in SIZED_DATA_TOWERS or support(arch, release) == "fallback":
        assert weights["refused"] is None
        assert weights["stages"][0]["allocated_bytes"] == row["allocated_bytes"]
        fallback = any(FALLBACK_WARNING in n for n in weights["notes"])
        assert fallback == (support(arch, release) == "fallback")
    else:
        assert "--mm-encoder-tp-mode data" in weights["refused"] and arch in weights["refused"]
        assert "not modelled" in weights["refused"]
