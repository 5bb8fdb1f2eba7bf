"""Drafter stand-ins against vLLM's own engine start: draft-model configs whose published file is
not stored (``data/drafters/README.md`` says what each stands for), each run as the
``--speculative-config`` of a published target of the corpus under that target's corpus flag
sets. ``data/drafters/vllm-<release>.json`` holds that release's answers (``record_drafter_cases.py``
run with its boot environment); nothing in them comes from dryboot. The check is the corpus's:
every case agrees, on every recorded release.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_corpus as T

pytestmark = pytest.mark.fidelity

DATA = Path(__file__).resolve().parent / "data" / "drafters"
RECORDED = DATA / "vllm-0.28.0.json"
#: stands for ``data/drafters`` in recorded flag sets
TOKEN = "<drafters>"

#: case set -> (its target's corpus directory, ``--speculative-config`` method); a set whose
#: name is a directory of ``data/drafters`` runs that stand-in as the drafter, the others
#: (``<method>@<target>``) are methods without a draft model
STANDINS: dict[str, tuple[str, str]] = {
    # EAGLE-1 head with model_type mixtral and architectures LlamaForCausalLM (vLLM builds
    # EagleLlamaForCausalLM from a MixtralConfig)
    "eagle-mixtral-8x7b-standin": ("mistralai--Mixtral-8x7B-v0.1", "eagle"),
    # an old-format Medusa checkpoint (no model_type: vLLM reads it as medusa): no KV cache
    "medusa-vicuna-7b-standin": ("meta-llama--Llama-2-7b-hf", "medusa"),
    # the speculators format (speculators_config, transformer_layer_config): EAGLE-3 heads
    "speculators-llama3.1-8b-eagle3-standin": ("meta-llama--Meta-Llama-3.1-8B", "eagle3"),
    "speculators-gpt-oss-20b-eagle3-standin": ("openai--gpt-oss-20b", "eagle3"),
    # an MTP module on a stand-in target (data/drafters): Ernie-4.5 MoE with one MTP layer
    "mtp@ernie4.5-moe-mtp-target-standin": ("ernie4.5-moe-mtp-target-standin", "mtp"),
    # LongCat-Flash with its MTP layer (longcat_flash_mtp.py)
    "mtp@longcat-flash-mtp-target-standin": ("longcat-flash-mtp-target-standin", "mtp"),
    # methods without a draft model: no drafter layers
    "ngram@meta-llama--Meta-Llama-3.1-8B": ("meta-llama--Meta-Llama-3.1-8B", "ngram"),
    "ngram@Qwen--Qwen3.5-27B": ("Qwen--Qwen3.5-27B", "ngram"),
    # (suffix: vLLM 0.28.0 needs arctic-inference, which the oracle's environment lacks, so its
    # answers are environment gaps: not recorded)
}


def flag_sets(name: str) -> list[list[str]]:
    """The target's first ten corpus flag sets, each ending with the speculative config."""
    target, method = STANDINS[name]
    out = []
    for i, argv in enumerate(STANDIN_TARGET_SETS if (DATA / target).is_dir() else T.flag_sets(target)[:10]):
        spec: dict[str, Any] = {"method": method, "num_speculative_tokens": 1 + i % 5}
        if (DATA / name).is_dir():
            spec["model"] = f"{TOKEN}/{name}"
        out.append([*argv, "--speculative-config", json.dumps(spec)])
    return out


#: the flag sets of a stand-in target (a directory of ``data/drafters``)
STANDIN_TARGET_SETS: list[list[str]] = [
    ["--kv-cache-memory-bytes", "2000000000"],
    ["--kv-cache-memory-bytes", "2000000000", "-tp", "2", "--max-model-len", "8192"],
    ["--kv-cache-memory-bytes", "4000000000", "-tp", "2", "--kv-cache-dtype", "fp8", "--max-model-len", "4096"],
    ["--kv-cache-memory-bytes", "1000000000", "--max-model-len", "2048", "--block-size", "32"],
    ["--kv-cache-memory-bytes", "3000000000", "--enable-prefix-caching", "--max-num-seqs", "64"],
    ["--kv-cache-memory-bytes", "500000000", "--max-model-len", "16384", "--block-size", "64"],
]


def make_case(name: str, index: int, argv: list[str]) -> H.Case:
    target = STANDINS[name][0]
    model = str(DATA / target) if (DATA / target).is_dir() else T.materialize(target)
    local = [a.replace(TOKEN, str(DATA)) for a in argv]
    return H.Case(id=f"{name}#{index}", family=name, model=model, argv=local, source=f"drafters/{name}")


def recorded(version: str = "0.28.0") -> dict[str, list[dict[str, Any]]]:
    cases: dict[str, list[dict[str, Any]]] = json.loads((DATA / f"vllm-{version}.json").read_text())["cases"]
    return cases


#: the releases recorded here besides 0.28.0
OTHER_RELEASES = sorted(
    p.name.removeprefix("vllm-").removesuffix(".json") for p in DATA.glob("vllm-*.json") if p != RECORDED
)


def test_every_standin_is_recorded_with_its_flag_sets() -> None:
    rec = recorded()
    assert sorted(rec) == sorted(STANDINS)
    for name, rows in rec.items():
        assert [r["argv"] for r in rows] == flag_sets(name), name
        assert all(r == T.mark(dict(r)) for r in rows), f"{name}: flags are not today's"
        assert sum(1 for r in rows if not r.get("env_gap")) >= 5, f"{name}: too few cases compared"


@pytest.mark.parametrize(("version", "name"), [(v, n) for v in ["0.28.0", *OTHER_RELEASES] for n in sorted(STANDINS)])
def test_dryboot_matches_recorded_vllm(version: str, name: str) -> None:
    problems = []
    for i, row in enumerate(recorded(version)[name]):
        if row.get("env_gap"):
            continue
        c = make_case(name, i, row["argv"])
        d, v = T.verdict(c, row["vllm"], version)
        if not v["agree"]:
            problems.append(
                f"{c.id}: {c.command(version)}\n    vLLM:    {H._answer(row['vllm'], vllm=True)}"
                f"\n    dryboot: {H._answer(d, vllm=False)}"
            )
    assert not problems, "\n".join(problems)
