"""The cases whose layer names ``data/drafter_layer_names.json`` records (one per speculative
method with a KV cache, and a draft head given as the target): shared by the recorder and the test."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_corpus as T

DATA = Path(__file__).resolve().parent / "data" / "drafter_layer_names.json"

#: recorded corpus cases (directory#index), by the method they exercise
CORPUS_CASES = (
    "specforge--llama3-8B-eagle3#1",  # eagle3, LlamaForCausalLMEagle3 on Llama-3.1-8B
    "specforge--qwen3-8b-dflash#1",  # dflash
    "specforge--qwen3-vl-8b-eagle3#1",  # eagle3 on a vision-language target
    "deepseek-ai--DeepSeek-V3#10",  # mtp, deepseek_mtp.py
    "zai-org--GLM-5#10",  # mtp with a sparse-attention indexer
    "Qwen--Qwen3.5-27B#10",  # mtp, qwen3_5_mtp.py
    "zai-org--GLM-4.5#10",  # mtp, glm4_moe_mtp.py
    "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8#10",  # mtp, nemotron_h_mtp.py (a hybrid target)
)
#: drafter stand-ins' cases (``test_drafter_cases.py``)
STANDIN_CASES = (
    "eagle-mixtral-8x7b-standin#1",  # eagle, EagleLlamaForCausalLM from a MixtralConfig
    "speculators-llama3.1-8b-eagle3-standin#1",  # eagle3 in the speculators format
    "mtp@ernie4.5-moe-mtp-target-standin#1",  # mtp, ernie_mtp.py
    "mtp@longcat-flash-mtp-target-standin#0",  # mtp, longcat_flash_mtp.py
)
#: cases outside the corpus's flag sets: id -> (corpus directory of the model, argv)
OTHER_CASES: dict[str, tuple[str, list[str]]] = {
    "draft_model#0": (
        "Qwen--Qwen3-8B",
        [
            *["--kv-cache-memory-bytes", "20000000000", "--max-model-len", "8192", "--speculative-config"],
            json.dumps(
                {"method": "draft_model", "model": f"{T.CORPUS_TOKEN}/Qwen--Qwen3-0.6B", "num_speculative_tokens": 2}
            ),
        ],
    ),
    "eagle-as-target#0": ("specforge--llama3-8B-eagle3", ["--kv-cache-memory-bytes", "20000000000"]),
}


def case(case_id: str) -> H.Case:
    if case_id in STANDIN_CASES:
        import test_drafter_cases as D  # at call: it imports this module's neighbours only when asked

        name, index = case_id.split("#")
        return D.make_case(name, int(index), D.recorded()[name][int(index)]["argv"])
    if case_id in OTHER_CASES:
        name, argv = OTHER_CASES[case_id]
        for n in T.corpus_dirs():
            if f"{T.CORPUS_TOKEN}/{n}" in " ".join(argv):
                T.materialize(n)
        return H.Case(id=case_id, family=name, model=T.materialize(name), argv=T.local(argv), source=f"public/{name}")
    name, index = case_id.split("#")
    return T.make_case(name, int(index), T.load_recorded()[name][int(index)]["argv"])


def all_ids() -> list[str]:
    return [*CORPUS_CASES, *STANDIN_CASES, *OTHER_CASES]


def recorded() -> dict[str, Any]:
    cases: dict[str, Any] = json.loads(DATA.read_text())["cases"]
    return cases
