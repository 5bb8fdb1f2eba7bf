"""Published configs, exactly: dryboot against vLLM's own engine start on real Hugging Face configs.

``tests/data/configs/public/<org>--<repo>/`` holds published ``config.json`` files (and the
``hf_quant_config.json`` / ``generation_config.json`` published beside them), byte-for-byte as
taken, each with a ``SOURCE`` file naming where the copy came from; ``index.json`` there gives
each config's architecture, family and quantization. Every config runs under :func:`flag_sets`
(tensor parallelism 1/2/4/8, ``--kv-cache-dtype`` auto/fp8, ``--max-model-len``, prefix caching,
``--block-size``, a KV budget; MTP for targets with MTP layers; a draft-model config runs as the
``--speculative-config`` of its target, :data:`DRAFTERS`).

``data/corpus/vllm-<version>.json`` holds what vLLM answered for every case (written by
``record_corpus.py`` from ``e2e_oracle.py``; nothing in it comes from dryboot): every config on
0.28.0 and on 0.32.0 (another release's file is checked the same way, with its own table). The
default run checks dryboot (in-process, ``dryboot plan ... --json --vllm-version X``) against those
answers: block size, KV cache groups and page sizes, blocks, tokens, concurrency, max model length,
or the refusal (the end-to-end harness's ``compare``). Cases dryboot is known to answer differently are listed by kind
in :data:`KNOWN_BY_KIND` (0.28.0) and :data:`KNOWN_RELEASES_BY_KIND`; the check is strict both
ways: a case outside them must agree, and a listed case that agrees fails until its entry goes.
Answers that are the CPU oracle's environment gaps (``env_gap``) are recorded but not compared.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H

pytestmark = pytest.mark.fidelity

CORPUS = H.REPO / "tests" / "data" / "configs" / "public"
INDEX = CORPUS / "index.json"
RECORDED_DIR = Path(__file__).resolve().parent / "data" / "corpus"
#: the release whose answers the default run checks
VLLM_VERSION = "0.28.0"
#: the oracle fields a case records
KEPT = ("ok", "stage", "error", "block_size", "groups", "num_blocks", "tokens", "concurrency", "max_model_len")
#: files vLLM reads from a model directory besides config.json (copied verbatim from the corpus)
MODEL_FILES = ("config.json", "hf_quant_config.json", "generation_config.json")
#: stands for a corpus directory in recorded flag sets (a drafter's ``"model"``)
CORPUS_TOKEN = "<corpus>"
#: files the harness adds for a multimodal architecture (a processor config vLLM reads at start);
#: never overriding a published file
ARCH_FILES = H.HERE / "data" / "architectures" / "files"

#: draft-model config -> (its target's corpus directory, ``--speculative-config`` method). A
#: drafter whose own target is not in the corpus drafts for a published model of the same shapes
#: (named in the comment).
DRAFTERS: dict[str, tuple[str, str]] = {
    "specforge--llama3-8B-eagle3": ("meta-llama--Meta-Llama-3.1-8B", "eagle3"),
    "specforge--llama3-70B-eagle3": ("meta-llama--Meta-Llama-3.1-70B", "eagle3"),
    "specforge--gpt-oss-20B-eagle3": ("openai--gpt-oss-20b", "eagle3"),
    "specforge--gpt-oss-120B-eagle3": ("openai--gpt-oss-120b", "eagle3"),
    "specforge--qwen3-8b-eagle3": ("Qwen--Qwen3-8B", "eagle3"),
    "specforge--qwen3-32b-eagle3": ("Qwen--Qwen3-32B", "eagle3"),
    "specforge--qwen3-30B-A3B-eagle3": ("Qwen--Qwen3-30B-A3B", "eagle3"),
    "specforge--qwen3-235B-A22B-eagle3": ("Qwen--Qwen3-235B-A22B", "eagle3"),
    # no Qwen3-4B in the corpus: it runs on Qwen3-8B (the drafter's KV cache follows its own config;
    # the target's hidden size only shapes weights, which the oracle builds on the meta device)
    "specforge--qwen3-4b-eagle3": ("Qwen--Qwen3-8B", "eagle3"),
    "specforge--deepseek-v3-671b-eagle3": ("deepseek-ai--DeepSeek-V3", "eagle3"),
    "specforge--llama4-scout-17B-16E-eagle3": ("meta-llama--Llama-4-Scout-17B-16E-Instruct", "eagle3"),
    "specforge--qwen3-coder-480B-A35B-instruct-eagle3": ("Qwen--Qwen3-Coder-480B-A35B-Instruct", "eagle3"),
    "specforge--qwen3-next-80b-a3b-eagle3": ("Qwen--Qwen3-Next-80B-A3B-Thinking", "eagle3"),
    "specforge--qwen3.5-35b-a3b-eagle3": ("Qwen--Qwen3.5-35B-A3B", "eagle3"),
    "specforge--qwen2.5-7b-eagle3": ("Qwen--Qwen2.5-7B", "eagle3"),
    "specforge--kimi-k2-eagle3": ("moonshotai--Kimi-K2-Instruct", "eagle3"),
    "specforge--kimi-k25-eagle3": ("moonshotai--Kimi-K2.5", "eagle3"),
    # Qwen3-Coder-30B-A3B has Qwen3-30B-A3B's shapes
    "specforge--qwen3-coder-30B-A3B-instruct-eagle3": ("Qwen--Qwen3-30B-A3B", "eagle3"),
    # QwQ-32B has Qwen2.5-32B's shapes
    "specforge--qwq-32B-eagle3": ("Qwen--Qwen2.5-32B", "eagle3"),
    "specforge--qwen3-vl-8b-eagle3": ("Qwen--Qwen3-VL-8B-Instruct", "eagle3"),
    "specforge--qwen3-vl-30b-a3b-eagle3": ("Qwen--Qwen3-VL-30B-A3B-Instruct", "eagle3"),
    "specforge--qwen3-vl-235b-eagle3": ("Qwen--Qwen3-VL-235B-A22B-Instruct", "eagle3"),
    "specforge--qwen3-8b-dflash": ("Qwen--Qwen3-8B", "dflash"),
    "specforge--qwen3.5-27b-dflash": ("Qwen--Qwen3.5-27B", "dflash"),
    "specforge--qwen3.5-35b-a3b-dflash": ("Qwen--Qwen3.5-35B-A3B", "dflash"),
    "specforge--qwen3-vl-8b-dflash": ("Qwen--Qwen3-VL-8B-Instruct", "dflash"),
    "specforge--deepseek-r1-671b-eagle3": ("deepseek-ai--DeepSeek-R1", "eagle3"),
    "specforge--gemma4-26b-a4b-eagle3": ("google--gemma-4-26B-A4B", "eagle3"),
    "specforge--kimi-k2.7-code-dflash": ("nvidia--Kimi-K2.7-Code-NVFP4", "dflash"),
    "specforge--qwen3-vl-30b-a3b-dflash-vlm-8layer": ("Qwen--Qwen3-VL-30B-A3B-Instruct", "dflash"),
    "specforge--qwen3.5-35b-a3b-dflash-vlm-8layer": ("Qwen--Qwen3.5-35B-A3B", "dflash"),
    "specforge--qwen3-30B-A3B-eagle3.1": ("Qwen--Qwen3-30B-A3B", "eagle3"),
    "specforge--qwen3.5-122b-a10b-eagle3-moe": ("Qwen--Qwen3.5-122B-A10B", "eagle3"),
    # the EAGLE project's (SafeAILab/EAGLE) EAGLE-1 heads: a config saying LlamaForCausalLM, which
    # vLLM builds as EagleLlamaForCausalLM under "method": "eagle"
    "eagle--EAGLE-LLaMA3-Instruct-8B": ("meta-llama--Meta-Llama-3-8B-Instruct", "eagle"),
    # Llama-3-70B-Instruct has Llama-3.1-70B's shapes
    "eagle--EAGLE-LLaMA3-Instruct-70B": ("meta-llama--Meta-Llama-3.1-70B", "eagle"),
    # the Llama-2 chat models have their base models' shapes
    "eagle--EAGLE-llama2-chat-7B": ("meta-llama--Llama-2-7b-hf", "eagle"),
    "eagle--EAGLE-llama2-chat-13B": ("meta-llama--Llama-2-13b-hf", "eagle"),
    "eagle--EAGLE-llama2-chat-70B": ("meta-llama--Llama-2-70b-hf", "eagle"),
    # Vicuna-13B v1.3 has LLaMA-13B's (so Llama-2-13B's) layer shapes
    "eagle--EAGLE-Vicuna-13B-v1.3": ("meta-llama--Llama-2-13b-hf", "eagle"),
    # the speculators project's (vllm-project/speculators) EAGLE-3 head training configs, saying
    # LlamaForCausalLM (vLLM builds Eagle3LlamaForCausalLM under "method": "eagle3")
    "speculators--research-eagle3-qwen3-8B": ("Qwen--Qwen3-8B", "eagle3"),
    "speculators--research-eagle3-llama3.3-70B": ("meta-llama--Llama-3.3-70B-Instruct", "eagle3"),
    # a Llama-3.1-8B head (max_position_embeddings 131072, llama3 rope)
    "speculators--research-eagle3-llama3-8B": ("meta-llama--Meta-Llama-3.1-8B", "eagle3"),
}


# --------------------------------------------------------------------------- the corpus


def corpus_dirs() -> list[str]:
    """Every corpus directory (one published checkpoint's files each)."""
    return sorted(p.name for p in CORPUS.iterdir() if (p / "config.json").is_file())


def read_config(name: str) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads((CORPUS / name / "config.json").read_text())
    return cfg


def _text(cfg: dict[str, Any]) -> dict[str, Any]:
    text = cfg.get("text_config") or cfg.get("llm_config") or cfg
    return text if isinstance(text, dict) else cfg


def classify(name: str) -> dict[str, Any]:
    """``{"architecture", "model_type", "family", "traits", "quant"}`` of a corpus config, read
    from its fields (the index's row)."""
    cfg = read_config(name)
    text = _text(cfg)
    arch = (cfg.get("architectures") or ["?"])[0]
    traits = []
    if name in DRAFTERS or any(k in arch for k in ("Eagle", "DFlash", "MTP", "DSpark")):
        traits.append("drafter")
    layer_kinds = {str(x) for x in (text.get("layer_types") or [])} | {
        str(x) for x in (text.get("layers_block_type") or [])
    }
    if (
        text.get("hybrid_override_pattern")
        or text.get("layers_block_type")
        or layer_kinds & {"linear_attention", "mamba", "conv", "minimax"}
        or any(k.startswith("mamba") for k in text)
        or any(k in text for k in ("full_attention_interval", "linear_num_value_heads", "linear_attn_config"))
    ):
        traits.append("hybrid")
    if text.get("index_topk"):
        traits.append("sparse-mla")
    elif text.get("kv_lora_rank"):
        traits.append("mla")
    if "vision_config" in cfg or arch.endswith("ForConditionalGeneration"):
        traits.append("vl")
    if any(text.get(k) for k in ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")):
        traits.append("moe")
    family = next(
        (f for f in ("drafter", "hybrid", "sparse-mla", "mla", "vl", "moe") if f in traits),
        "dense",
    )
    quant = None
    qc = cfg.get("quantization_config") or text.get("quantization_config")
    hfq = CORPUS / name / "hf_quant_config.json"
    if hfq.is_file():
        q = json.loads(hfq.read_text()).get("quantization", {})
        quant = f"modelopt:{q.get('quant_algo')}" + (
            f"+kv:{q['kv_cache_quant_algo']}" if q.get("kv_cache_quant_algo") else ""
        )
    elif isinstance(qc, dict):
        method = str(qc.get("quant_method"))
        if method == "fp8" and qc.get("weight_block_size"):
            method = "fp8-block"
        quant = method
    return {
        "architecture": arch,
        "model_type": cfg.get("model_type"),
        "family": family,
        "traits": traits,
        "quant": quant,
    }


def has_mtp(cfg: dict[str, Any]) -> bool:
    """Whether the checkpoint carries multi-token-prediction layers vLLM serves as
    ``--speculative-config '{"method": "mtp"}'``."""
    text = _text(cfg)
    return bool(text.get("num_nextn_predict_layers") or text.get("mtp_num_hidden_layers"))


# --------------------------------------------------------------------------- the cases


def _length(cfg: dict[str, Any], n: int) -> str:
    # Whisper's decoder length is max_target_positions
    mpe = _text(cfg).get("max_position_embeddings") or _text(cfg).get("max_target_positions")
    return str(min(n, int(mpe)) if isinstance(mpe, int) and mpe > 0 else n)


def flag_sets(name: str) -> list[list[str]]:
    """The flag sets of corpus directory ``name`` (at least 10, deterministic). A drafter's run on
    its target, each ending with a ``--speculative-config`` naming the drafter's directory as
    ``<corpus>/<name>``."""
    target = DRAFTERS[name][0] if name in DRAFTERS else name
    cfg = read_config(target)

    def ln(n: int) -> str:
        return _length(cfg, n)

    sets = [
        ["--kv-cache-memory-bytes", "20000000000"],
        ["--kv-cache-memory-bytes", "40000000000", "-tp", "2", "--max-model-len", ln(32768)],
        ["--kv-cache-memory-bytes", "40000000000", "-tp", "4", "--kv-cache-dtype", "fp8", "--max-model-len", ln(8192)],
        ["--kv-cache-memory-bytes", "80000000000", "-tp", "8", "--max-model-len", ln(131072)],
        ["--kv-cache-memory-bytes", "10000000000", "--max-model-len", ln(4096), "--block-size", "32"],
        ["--kv-cache-memory-bytes", "20000000000", "-tp", "2", "--enable-prefix-caching", "--kv-cache-dtype", "fp8"],
        [
            *["--kv-cache-memory-bytes", "30000000000", "-tp", "4", "--no-enable-prefix-caching"],
            *["--max-model-len", ln(16384), "--max-num-seqs", "64"],
        ],
        [
            *["--kv-cache-memory-bytes", "5000000000", "-tp", "8", "--kv-cache-dtype", "fp8"],
            *["--block-size", "64", "--max-model-len", ln(8192)],
        ],
        ["--kv-cache-memory-bytes", "1000000000", "--max-model-len", "-1"],
        [
            *["--kv-cache-memory-bytes", "60000000000", "-tp", "2", "--max-model-len", ln(65536)],
            *["--block-size", "16", "--max-num-batched-tokens", "4096"],
        ],
    ]
    if name in DRAFTERS:
        method = DRAFTERS[name][1]
        for i, argv in enumerate(sets):
            spec = {"method": method, "model": f"{CORPUS_TOKEN}/{name}", "num_speculative_tokens": 1 + i % 5}
            argv += ["--speculative-config", json.dumps(spec)]
    elif has_mtp(cfg):
        sets += [
            [
                *["--kv-cache-memory-bytes", "20000000000", "-tp", "2", "--max-model-len", ln(8192)],
                *["--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 1})],
            ],
            [
                *["--kv-cache-memory-bytes", "40000000000", "-tp", "8", "--kv-cache-dtype", "fp8"],
                *["--max-model-len", ln(32768)],
                *["--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 3})],
            ],
        ]
    return sets


def materialize(name: str) -> str:
    """A model directory for corpus config ``name`` under the harness's work directory: its
    published files, verbatim, plus the harness's processor files for its architecture where vLLM
    reads one at engine start and the checkpoint's is not in the corpus."""
    work = H.default_workdir() / "corpus" / name
    work.mkdir(parents=True, exist_ok=True)
    wanted: dict[str, bytes] = {}
    for f in MODEL_FILES:
        if (CORPUS / name / f).is_file():
            wanted[f] = (CORPUS / name / f).read_bytes()
    extra = ARCH_FILES / str(classify(name)["architecture"])
    if extra.is_dir():
        for p in sorted(extra.iterdir()):
            wanted.setdefault(p.name, p.read_bytes())
    for f, data in wanted.items():
        target = work / f
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
    for stale in work.iterdir():
        if stale.name not in wanted:
            stale.unlink() if stale.is_file() else shutil.rmtree(stale)
    return str(work)


def local(argv: list[str]) -> list[str]:
    """``argv`` with :data:`CORPUS_TOKEN` as this clone's materialized corpus directory."""
    root = str(H.default_workdir() / "corpus")
    return [a.replace(CORPUS_TOKEN, root) for a in argv]


def make_case(name: str, index: int, argv: list[str]) -> H.Case:
    """Case ``name#index``: ``argv`` on corpus config ``name`` (a drafter's: on its target)."""
    if name in DRAFTERS:
        materialize(name)
        model = materialize(DRAFTERS[name][0])
    else:
        model = materialize(name)
    return H.Case(id=f"{name}#{index}", family=name, model=model, argv=local(argv), source=f"public/{name}")


def cases_for(name: str) -> list[H.Case]:
    return [make_case(name, i, argv) for i, argv in enumerate(flag_sets(name))]


# --------------------------------------------------------------------------- the record

#: an oracle answer that is the oracle environment's gap, not vLLM's answer (a module of vLLM's
#: own dependencies missing from the CPU venv (TileLang, the CuTe DSL), ``libcuda`` absent, a kernel
#: handle called): never compared
ENV_GAP_MARKERS = (
    "ModuleNotFoundError",
    "No module named",
    "libcuda",
    "cannot open shared object file",
    "tilelang is required",
    "is absent (CPU oracle)",
    "OracleCrash",
)


def env_gap(answer: dict[str, Any]) -> bool:
    return not answer.get("ok") and any(m in str(answer.get("error")) for m in ENV_GAP_MARKERS)


#: vLLM's refusal of a config whose class is remote code (offline, without --trust-remote-code):
#: transformers does not know its model_type, or the checkpoint's own code is asked for
REMOTE_CODE_MARKERS = ("Transformers does not recognize this architecture", "trust_remote_code", "custom code")


def remote_code(answer: dict[str, Any]) -> bool:
    return not answer.get("ok") and any(m in str(answer.get("error")) for m in REMOTE_CODE_MARKERS)


def mark(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its ``env_gap`` / ``remote_code`` flags set from its vLLM answer."""
    for flag, test in (("env_gap", env_gap), ("remote_code", remote_code)):
        if test(row["vllm"]):
            row[flag] = True
        else:
            row.pop(flag, None)
    return row


def recorded_path(version: str = VLLM_VERSION) -> Path:
    return RECORDED_DIR / f"vllm-{version}.json"


def load_recorded(version: str = VLLM_VERSION) -> dict[str, list[dict[str, Any]]]:
    path = recorded_path(version)
    if not path.exists():
        return {}
    data: dict[str, list[dict[str, Any]]] = json.loads(path.read_text())["cases"]
    return data


def dump_recorded(version: str, cases: dict[str, list[dict[str, Any]]]) -> str:
    """The record's text: deterministic (sorted), one case per line."""
    lines = [f'{{"vllm": {json.dumps(version)}, "cases": {{']
    names = sorted(cases)
    for n, name in enumerate(names):
        lines.append(f"{json.dumps(name)}: [")
        rows = cases[name]
        for i, row in enumerate(rows):
            sep = "," if i < len(rows) - 1 else ""
            lines.append(json.dumps(row, sort_keys=True, separators=(",", ":")) + sep)
        lines.append("]" + ("," if n < len(names) - 1 else ""))
    lines.append("}}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- comparing

#: The kinds of disagreement dryboot has with vLLM 0.28.0 (and, the ``-0.32`` ones, 0.32.0) on this
#: corpus (one line each: the issue's list of what to fix).
KINDS: dict[str, str] = {}
#: Recorded cases dryboot is known to answer differently, by kind: corpus directory -> flag-set
#: indices. Each must still disagree: an agreement means the kind is fixed there and the entry goes.
KNOWN_BY_KIND: dict[str, dict[str, list[int]]] = {}
#: case id -> the kind of its known disagreement
KNOWN: dict[str, str] = {
    f"{name}#{i}": KINDS[kind] for kind, dirs in KNOWN_BY_KIND.items() for name, ix in dirs.items() for i in ix
}


#: Other releases' known disagreements (a partial record: the directories it holds), by release:
#: case id -> kind, as :data:`KNOWN` is for 0.28.0.
KNOWN_RELEASES_BY_KIND: dict[str, dict[str, dict[str, list[int]]]] = {}
KNOWN_RELEASES: dict[str, dict[str, str]] = {
    version: {f"{name}#{i}": KINDS[kind] for kind, dirs in by_kind.items() for name, ix in dirs.items() for i in ix}
    for version, by_kind in KNOWN_RELEASES_BY_KIND.items()
}


def known_for(version: str) -> dict[str, str]:
    return KNOWN if version == VLLM_VERSION else KNOWN_RELEASES.get(version, {})


def verdict(case: H.Case, answer: dict[str, Any], version: str = VLLM_VERSION) -> tuple[dict[str, Any], dict[str, Any]]:
    """(dryboot's answer with ``--vllm-version version``, the comparison) for one recorded case."""
    d = H.run_dryboot(case, version)
    return d, H.compare(answer, d)


def problems_of(name: str, rows: list[dict[str, Any]], version: str = VLLM_VERSION) -> list[str]:
    """What is wrong with dryboot on ``name``'s recorded cases of ``version``: a disagreement not
    in the release's known table, or a known one that now agrees."""
    known = known_for(version)
    out = []
    for i, row in enumerate(rows):
        if row.get("env_gap"):
            continue
        c = make_case(name, i, row["argv"])
        d, v = verdict(c, row["vllm"], version)
        if c.id in known:
            if v["agree"]:
                out.append(f"{c.id} now agrees on {version}: remove it from the known table ({known[c.id]})")
            continue
        if not v["agree"]:
            out.append(
                f"{c.id}: {c.command(version)}\n    vLLM:    {H._answer(row['vllm'], vllm=True)}"
                f"\n    dryboot: {H._answer(d, vllm=False)}"
            )
    return out


def other_releases() -> list[str]:
    """The releases recorded beside 0.28.0."""
    names = (p.name.removeprefix("vllm-").removesuffix(".json") for p in RECORDED_DIR.glob("vllm-*.json"))
    return sorted(v for v in names if v != VLLM_VERSION)


RECORDED = load_recorded()


def test_corpus_is_large_and_sourced() -> None:
    dirs = corpus_dirs()
    assert len(dirs) >= 150, len(dirs)
    for name in dirs:
        source = (CORPUS / name / "SOURCE").read_text()
        assert source.startswith("HF repo id: "), name
        assert "copied from: " in source and "taken: " in source, name
        for f in (CORPUS / name).iterdir():
            assert f.name in (*MODEL_FILES, "SOURCE"), f


def test_index_is_todays() -> None:
    """``index.json`` says what :func:`classify` reads from each config, for every config."""
    index = json.loads(INDEX.read_text())
    assert index == {name: classify(name) for name in corpus_dirs()}


def test_every_config_is_recorded_with_its_flag_sets() -> None:
    assert sorted(RECORDED) == corpus_dirs()
    for name, rows in RECORDED.items():
        assert [r["argv"] for r in rows] == flag_sets(name), name
        assert len(rows) >= 10, name


def test_no_crash_recorded_as_an_answer() -> None:
    for name, rows in RECORDED.items():
        for i, r in enumerate(rows):
            assert "OracleCrash" not in str(r["vllm"].get("error")) or r.get("env_gap"), f"{name}#{i}"
            assert r == mark(dict(r)), f"{name}#{i}: flags are not today's"


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_dryboot_matches_recorded_vllm(name: str) -> None:
    problems = problems_of(name, RECORDED[name])
    assert not problems, f"{len(problems)}/{len(RECORDED[name])} disagree:\n" + "\n".join(problems)


def test_known_entries_are_recorded_cases() -> None:
    ids = {f"{n}#{i}" for n, rows in RECORDED.items() for i, r in enumerate(rows) if not r.get("env_gap")}
    assert not set(KNOWN) - ids, sorted(set(KNOWN) - ids)[:10]


OTHER = [(v, name) for v in other_releases() for name in sorted(load_recorded(v))]


@pytest.mark.parametrize(("version", "name"), OTHER, ids=[f"{v}:{n}" for v, n in OTHER])
def test_dryboot_matches_recorded_vllm_on_other_releases(version: str, name: str) -> None:
    rows = load_recorded(version)[name]
    assert [r["argv"] for r in rows] == flag_sets(name), name
    assert all(r == mark(dict(r)) for r in rows), name
    problems = problems_of(name, rows, version)
    assert not problems, f"{len(problems)}/{len(rows)} disagree on {version}:\n" + "\n".join(problems)


def test_other_releases_known_entries_are_recorded_cases() -> None:
    for version, known in KNOWN_RELEASES.items():
        rows = load_recorded(version)
        ids = {f"{n}#{i}" for n, rs in rows.items() for i, r in enumerate(rs) if not r.get("env_gap")}
        assert not set(known) - ids, (version, sorted(set(known) - ids)[:10])
