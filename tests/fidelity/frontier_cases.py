"""The frontier cases of issue 37: published configs on the GPUs of ``test_gpus.py`` and
release-specific lines, as vLLM's own engine start answers them (``record_frontier.py``) and
as ``test_frontier.py`` checks dryboot against them.

A case names its model as ``corpus:<dir>`` (``tests/data/configs/public/<dir>/``, published
files verbatim), ``frontier:<dir>`` (``data/frontier/configs/<dir>/``, likewise), ``newest:<dir>``
(``data/newest/configs/<dir>/``, likewise) or
``arch:<Architecture>`` (the tiny config of ``data/architectures/``), the
files added to the model directory (``files``: ``data/frontier/files/<name>/``), the flags and
the GPU. ``gemma4-mm`` is a stand-in tokenizer (five tokens, written here, no published text):
with no tokenizer vLLM cannot build Gemma-4's processing info and starts the multimodal model
text-only (``supports_multimodal_inputs`` false), which no real checkpoint directory does.
``qwen2-vl-mm`` is the same tokenizer with an image-processor file (``Qwen2VLImageProcessor``,
written here), for a Qwen2.5-VL config whose processor vLLM 0.28.0 loads at engine start;
``deepseek-ocr-mm`` is that tokenizer with an ``<image>`` token, which vLLM's DeepSeek-OCR
processor looks up (without a tokenizer vLLM stops at loading one; without the token, at a
``KeyError: '<image>'``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import e2e_harness as H

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "frontier"
FILES = DATA / "files"
#: EAGLE-3 head stand-ins of config classes other than the five dryboot read with its own
#: defaults (``phi3``: issue 37's phi-4 head, whose published file is not stored)
DRAFTERS = DATA / "drafters"
#: published EAGLE-3 heads of MLA layers (``deepseek_eagle3.py``; verbatim, ``SOURCE`` beside
#: each) on their targets: (target, head directory relative to the repository)
_HEADS = "tests/fidelity/data/weights/drafters/configs/"
MLA_HEADS = (
    ("corpus:moonshotai--Kimi-K2-Instruct", _HEADS + "torchspec--kimi-k25-eagle3-mla"),
    ("corpus:moonshotai--Kimi-K2-Instruct", _HEADS + "torchspec--kimi-k3-eagle3-mla"),
    ("corpus:deepseek-ai--DeepSeek-V3", _HEADS + "torchspec--kimi-k25-eagle3-mla"),
    ("corpus:moonshotai--Kimi-K2-Instruct", _HEADS + "torchspec--qwen3-8b-eagle3-mla"),
)
#: stands for a drafter's directory in a case's argv
DRAFTER_TOKEN = "<drafter>"
CORPUS = H.REPO / "tests" / "data" / "configs" / "public"
TINY = HERE / "data" / "architectures"
#: published configs kept with the frontier cases (``frontier:<dir>``, each with its ``SOURCE``)
CONFIGS = DATA / "configs"
#: the newest published configs (``newest:<dir>``, each with its ``SOURCE``; ``newest_cases.py``)
NEWEST = HERE / "data" / "newest" / "configs"
#: the releases recorded (0.28.0 and 0.33.0 first; 0.27.1, 0.29.0, 0.30.0, 0.31.0 and 0.32.0 added so
#: that Gemma-4 is checked on the six compute capabilities on every release)
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
VERSIONS = tuple(v for v in RELEASES if (DATA / f"vllm-{v}.json").exists())
#: SM 8.6 twice, 8.0, 8.9 twice, 9.0 twice, 10.0, 12.0 (``test_gpus.GPUS``)
GPUS = ("RTX 3090", "A10G", "A100-80GB", "RTX 4090", "L40S", "H100", "H200", "B200", "RTX 5090")
#: a budget that does not hold Gemma-4 26B's 65,536 tokens at every concurrency (bytes)
BUDGET = "3348327976"

#: (model, files, flag sets) of Gemma-4 on every GPU
_GEMMA4: tuple[tuple[str, str | None, tuple[tuple[str, ...], ...]], ...] = (
    (
        "corpus:google--gemma-4-26B-A4B",
        "gemma4-mm",
        (
            ("--max-model-len", "65536"),
            ("--max-model-len", "65536", "--language-model-only"),
            ("--max-model-len", "65536", "--kv-cache-dtype", "fp8"),
            ("--max-model-len", "-1"),
        ),
    ),
    (
        "corpus:nvidia--Gemma-4-31B-IT-NVFP4",
        "gemma4-mm",
        (("--max-model-len", "32768"), ("--max-model-len", "32768", "--kv-cache-dtype", "fp8")),
    ),
    ("arch:Gemma4ForCausalLM", None, (("--max-model-len", "65536"), ("--max-model-len", "8192", "--block-size", "32"))),
)


def cases() -> list[dict[str, Any]]:
    """Every frontier case: ``{id, model, files, argv, gpu}``."""
    out = []
    for gpu in GPUS:
        for model, files, flag_sets in _GEMMA4:
            for i, flags in enumerate(flag_sets):
                name = model.split(":", 1)[1]
                out.append(
                    {
                        "id": f"{gpu}|{name}#{i}",
                        "model": model,
                        "files": files,
                        "argv": [*flags, "--kv-cache-memory-bytes", BUDGET],
                        "gpu": gpu,
                    }
                )
    for drafter in sorted(p.name for p in DRAFTERS.iterdir() if p.is_dir()):
        for i, flags in enumerate((("--max-model-len", "8192"), ("--max-model-len", "65536"))):
            spec = json.dumps({"model": DRAFTER_TOKEN, "method": "eagle3", "num_speculative_tokens": 3})
            out.append(
                {
                    "id": f"H200|{drafter}#{i}",
                    "model": "corpus:meta-llama--Meta-Llama-3.1-8B",
                    "files": None,
                    "drafter": drafter,
                    "argv": [*flags, "--speculative-config", spec, "--kv-cache-memory-bytes", "4000000000"],
                    "gpu": "H200",
                }
            )
    # EAGLE-3 heads of MLA layers (deepseek_eagle3.py) on the MLA targets they were trained for,
    # TP 8 (Kimi-K2's FP8 weights fit an H200 per rank); the Qwen3-8B head's model_type
    # deepseek_v3 makes vLLM look it up as Eagle3DeepSeekMTPModel (refused)
    for target, head in MLA_HEADS:
        for i, flags in enumerate((("--max-model-len", "8192"), ("--max-model-len", "65536", "--block-size", "64"))):
            spec = json.dumps({"model": DRAFTER_TOKEN, "method": "eagle3", "num_speculative_tokens": 3})
            out.append(
                {
                    "id": f"H200|{target.split(':', 1)[1]}+{head.rsplit('/', 1)[1]}#{i}",
                    "model": target,
                    "files": None,
                    "drafter": head,
                    "argv": [*flags, "-tp", "8", "--speculative-config", spec, "--kv-cache-memory-bytes", "4000000000"],
                    "gpu": "H200",
                }
            )
    # a multimodal wrapper of a text model dryboot plans (MiniCPM-V-4.6: Qwen3.5's Gated DeltaNet hybrid)
    for i, flags in enumerate(
        (
            ("--max-model-len", "32768"),
            ("--max-model-len", "32768", "--kv-cache-dtype", "fp8"),
            ("--max-model-len", "32768", "--no-enable-prefix-caching"),
            ("--max-model-len", "65536", "-tp", "2", "--mamba-ssm-cache-dtype", "float16"),
        )
    ):
        out.append(
            {
                "id": f"H200|openbmb--MiniCPM-V-4.6#{i}",
                "model": "frontier:openbmb--MiniCPM-V-4.6",
                "files": None,
                "argv": [*flags, "--kv-cache-memory-bytes", "20000000000"],
                "gpu": "H200",
            }
        )
    # 0.32+'s auto-fit line names the budget less the null block (one pool block of 80 layers)
    out.append(
        {
            "id": "H200|meta-llama--Meta-Llama-3.1-70B#autofit",
            "model": "corpus:meta-llama--Meta-Llama-3.1-70B",
            "files": None,
            "argv": ["--max-model-len", "-1", "--kv-cache-memory-bytes", "3183859256", "--max-num-seqs", "16"],
            "gpu": "H200",
        }
    )
    return out


def argv(case: dict[str, Any]) -> list[str]:
    """The case's flags, its drafter's directory in place of :data:`DRAFTER_TOKEN` (a name of
    :data:`DRAFTERS`, or a directory relative to the repository)."""
    drafter = case.get("drafter")
    if not drafter:
        return list(case["argv"])
    where = H.REPO / drafter if "/" in drafter else DRAFTERS / drafter
    return [a.replace(DRAFTER_TOKEN, str(where)) for a in case["argv"]]


def materialize(case: dict[str, Any]) -> str:
    """The case's model directory under the harness's work directory."""
    kind, name = case["model"].split(":", 1)
    files = case.get("files")
    target = H.default_workdir() / "frontier" / f"{name}+{files or 'none'}"
    target.mkdir(parents=True, exist_ok=True)
    if kind in ("corpus", "frontier", "newest"):
        root = {"corpus": CORPUS, "frontier": CONFIGS, "newest": NEWEST}[kind]
        sources = [p for p in sorted((root / name).iterdir()) if p.suffix == ".json"]
    else:
        sources = [TINY / f"{name}.json"]
    for src in sources:
        dst = target / ("config.json" if kind == "arch" else src.name)
        if not dst.exists() or dst.read_bytes() != src.read_bytes():
            shutil.copyfile(src, dst)
    if files:
        for src in sorted((FILES / files).iterdir()):
            shutil.copyfile(src, target / src.name)
    return str(target)


def recorded(version: str) -> dict[str, dict[str, Any]]:
    """case id -> vLLM's answer, of ``data/frontier/vllm-<version>.json`` (empty if absent)."""
    path = DATA / f"vllm-{version}.json"
    if not path.exists():
        return {}
    data: dict[str, dict[str, Any]] = json.loads(path.read_text())["cases"]
    return data
