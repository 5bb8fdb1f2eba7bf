"""Issue 37: the multimodal wrappers whose config class only the checkpoint ships, planned through their
text model under ``--trust-remote-code`` (``remote_code_cases.py``): dryboot against vLLM 0.28.0's and
0.33.0's recorded engine start on a published config and tiny ones, with the checkpoints' own config
Python files beside them (``data/remote-code/``). Needs no vLLM."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import remote_code_cases as Q
import test_weights as T

from dryboot.vllm.model_executor.model_loader.weights import rank_weights

#: case id -> (what vLLM's recorded error says, what dryboot's refusal says), on every release
REFUSED: dict[str, tuple[str, str]] = {
    "internvl3-1b-untrusted": ("trust_remote_code=True", "Transformers does not recognize this architecture"),
    # TeleChat2 (a text model) without num_key_value_heads: its own Telechat2Config leaves them None
    "telechat2-nokv": ("total_num_kv_heads", "total_num_kv_heads: Input should be a valid integer"),
    "telechat2-notie": ("no attribute 'tie_word_embeddings'", "no attribute 'tie_word_embeddings'"),
    "bailing-v2-no-norm-topk": ("no attribute 'norm_topk_prob'", "no attribute 'norm_topk_prob'"),
    "bailing-v2-softmax-bias": ("AssertionError", "score_function and correction_bias should be in 2 combination"),
    "bailing-v1-sigmoid": ("AssertionError", "score_function and correction_bias should be in 2 combination"),
    "bailing-v1-default-bias": ("When not reduce the results", "When not reduce the results, adding bias"),
}


@pytest.mark.parametrize("version", Q.VERSIONS)
def test_every_case_is_recorded(version: str) -> None:
    rec = Q.recorded(version)
    assert set(rec) == set(Q.CASES)
    for cid, (path, _, argv) in Q.CASES.items():
        assert rec[cid]["config"] == path and rec[cid]["argv"] == argv, cid
        assert bool(rec[cid]["vllm"].get("ok")) == (cid not in REFUSED), (cid, rec[cid]["vllm"])


@pytest.mark.parametrize(("version", "cid"), [(v, c) for v in Q.VERSIONS for c in Q.CASES])
def test_dryboot_matches_the_release(version: str, cid: str, tmp_path: Path) -> None:
    v = Q.recorded(version)[cid]["vllm"]
    d = H.run_dryboot(H.Case(cid, "remote-code", Q.model_dir(tmp_path, cid), Q.CASES[cid][2]), version)
    if cid in REFUSED:
        said, refusal = REFUSED[cid]
        assert said in v["error"], v
        assert d.get("refused") and refusal in str(d["error"]), d
        return
    verdict = H.compare(v, d)
    assert verdict["agree"], (v, d, verdict)
    assert {"block_size", "groups", "num_blocks", "max_model_len"} <= set(v), v


#: vLLM's weights of the remote-code wrappers' tiny configs (``record_weights.py --tiny
#: InternVLChatModel`` with ``RECORD_WEIGHTS_OUT=data/weights/recorded-<release>-remote-mm.json``:
#: the checkpoint's config files beside the config, ``--trust-remote-code``)
WEIGHTS = {
    v: json.loads((T.DATA / f"recorded-{v}-remote-mm.json").read_text())["cases"]
    for v in Q.VERSIONS
    if (T.DATA / f"recorded-{v}-remote-mm.json").exists()
}


@pytest.mark.parametrize(("version", "cid"), [(v, c) for v, rows in WEIGHTS.items() for c in rows])
def test_weights_match_the_release(version: str, cid: str) -> None:
    row = WEIGHTS[version][cid]
    config, _ = T._config(row["config"])
    assert row["ok"], row
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(len(stages)):
        par = replace(T._parallel(row["argv"], stage), vllm_version=version)
        w = rank_weights(config, par, **T._serve(row))
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


#: vLLM's weights of InternLM2: the InternVL 2 / 2.5 cases (``internvl2-2b``, ``internvl-internlm2``: a
#: row's ``config`` is its case id) and InternLM2ForCausalLM's tiny config (``arch--InternLM2ForCausalLM``),
#: each beside the checkpoint's config files (``RECORD_WEIGHTS_CONFIGS=DIR record_weights.py`` over
#: such directories, ``RECORD_WEIGHTS_OUT=data/weights/recorded-<release>-remote-internlm2.json``); the tiny
#: config on every release 0.27.1-0.33.0 (``test_weights_sweep.OWN_RECORDS``), the InternVL cases on 0.28.0 and 0.33.0
INTERNLM2_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
INTERNLM2_WEIGHTS = {
    v: json.loads((T.DATA / f"recorded-{v}-remote-internlm2.json").read_text())["cases"] for v in INTERNLM2_RELEASES
}


def test_internlm2_weights_cover_every_release() -> None:
    for v, rows in INTERNLM2_WEIGHTS.items():
        assert {r["config"] for r in rows.values()} >= {"arch--InternLM2ForCausalLM"}, v


@pytest.mark.parametrize(("version", "cid"), [(v, c) for v, rows in INTERNLM2_WEIGHTS.items() for c in rows])
def test_internlm2_weights_match_the_release(version: str, cid: str) -> None:
    row = INTERNLM2_WEIGHTS[version][cid]
    name = row["config"]
    config = T._config(name)[0] if name.startswith("arch--") else Q.config(Q.CASES[name][0])
    assert row["ok"], row
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(len(stages)):
        par = replace(T._parallel(row["argv"], stage), vllm_version=version)
        w = rank_weights(config, par, **T._serve(row))
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages
