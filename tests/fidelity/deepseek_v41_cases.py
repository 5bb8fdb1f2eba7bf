"""DeepSeek-V4.1 (``DeepseekV41ForCausalLM``, vLLM 0.30.0+ ``vllm/models/deepseek_v41``): the tiny
stand-in configs (no published config exists) and the flags each is started with, recorded by
``record_deepseek_v41.py`` into ``data/deepseek_v41/vllm-<release>.json`` (and ``-gpus.json``) and
checked by ``test_deepseek_v41.py``.

Configs (``data/deepseek_v41/configs/``, and ``dsv41-tiny`` in ``data/architectures/``; tiny stand-ins,
the HF layout: ``text_config`` and ``vision_config`` nested, as ``DeepseekV41Config`` reads them):

* ``dsv41-tiny``: 8 layers, compress ratios 0/1/1/2/2/1/0/0 (and 0 for the MTP layer), KV and index
  sources on layers 1, 3 and 5 (layer 2 reads layer 1's caches, layer 4 layer 3's); the last KV
  source (5) is followed by two decoder-replay layers.
* ``dsv41-c2x2``: 10 layers, two ratio-2 KV sources (1 and 4) beside a ratio-1 one (6); layer 2 an
  index source that is not a KV source (it reads layer 1's index keys).
* ``dsv41-c1only``: 6 layers, ratio-1 sources only (0 and 3): no compressor state.
* ``dsv41-vision``: ``dsv41-tiny`` with a two-layer vision tower (``vision_config``; 256 image tokens).
* one change each to ``dsv41-tiny``, which vLLM refuses: ``dsv41-ratio4`` (ratio 4 on layers 3-4),
  ``dsv41-src0`` (a KV source of ratio 0), ``dsv41-lastc2`` (the last KV source of ratio 2, layers after
  it), ``dsv41-orphan`` (layer 4 an index source whose KV source, layer 3, is no index source),
  ``dsv41-engram`` (Engram on layer 1, its n-gram table's CPU offload off: the oracle's faked GPU has no
  UVA; its table of 1000 rows is smaller than its heads' prime-sized ranges, which
  ``ParallelEngramEmbedding`` asserts: a large enough table stops the CPU oracle itself, the embedding
  asking torch for the CUDA device index, so Engram is refused as not verified).

The standard flag sets are ``test_architectures.flag_sets`` (24, seeded by the architecture) on
``dsv41-tiny``; the others vary tensor / pipeline parallelism, blocks, dtypes and drafters.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "deepseek_v41"
ARCH = "DeepseekV41ForCausalLM"
#: the releases recorded
RELEASES = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")
BASE = ["--kv-cache-memory-bytes", "1000000000", "--max-model-len", "8192"]
MTP1 = json.dumps({"method": "mtp", "num_speculative_tokens": 1})
MTP3 = json.dumps({"method": "mtp", "num_speculative_tokens": 3})
NGRAM = json.dumps({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3})

#: case id -> (config name, flags), beside the standard sets (:func:`standard_cases`)
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "base": ("dsv41-tiny", BASE),
    "fp8": ("dsv41-tiny", [*BASE, "--kv-cache-dtype", "fp8"]),
    "bf16": ("dsv41-tiny", [*BASE, "--kv-cache-dtype", "bfloat16"]),
    "fp8-ds-mla": ("dsv41-tiny", [*BASE, "--kv-cache-dtype", "fp8_ds_mla"]),
    "tp2": ("dsv41-tiny", [*BASE, "-tp", "2"]),
    "tp4": ("dsv41-tiny", [*BASE, "-tp", "4"]),
    "tp8": ("dsv41-tiny", [*BASE, "-tp", "8"]),
    "pp2": ("dsv41-tiny", [*BASE, "-pp", "2"]),
    "pp4": ("dsv41-tiny", [*BASE, "-pp", "4"]),
    "tp2-pp2": ("dsv41-tiny", [*BASE, "-tp", "2", "-pp", "2"]),
    "block16": ("dsv41-tiny", [*BASE, "--block-size", "16"]),
    "block32": ("dsv41-tiny", [*BASE, "--block-size", "32"]),
    "block128": ("dsv41-tiny", [*BASE, "--block-size", "128"]),
    "block256": ("dsv41-tiny", [*BASE, "--block-size", "256"]),
    "len-auto": ("dsv41-tiny", ["--kv-cache-memory-bytes", "100000000", "--max-model-len", "-1"]),
    "len1000": ("dsv41-tiny", ["--kv-cache-memory-bytes", "1000000000", "--max-model-len", "1000"]),
    "len-default": ("dsv41-tiny", ["--kv-cache-memory-bytes", "1000000000"]),
    "batched2048": ("dsv41-tiny", [*BASE, "--max-num-batched-tokens", "2048"]),
    "seqs8": ("dsv41-tiny", [*BASE, "--max-num-seqs", "8"]),
    "prefix": ("dsv41-tiny", [*BASE, "--enable-prefix-caching"]),
    "no-replay": ("dsv41-tiny", [*BASE, "--no-swa-bounded-replay"]),
    "mtp1": ("dsv41-tiny", [*BASE, "--speculative-config", MTP1]),
    "mtp3": ("dsv41-tiny", [*BASE, "--speculative-config", MTP3]),
    "ngram": ("dsv41-tiny", [*BASE, "--speculative-config", NGRAM]),
    "override": ("dsv41-tiny", [*BASE, "--num-gpu-blocks-override", "2000"]),
    "lm-only": ("dsv41-tiny", [*BASE, "--language-model-only"]),
    "c2x2": ("dsv41-c2x2", BASE),
    "c2x2-tp2": ("dsv41-c2x2", [*BASE, "-tp", "2"]),
    "c2x2-pp2": ("dsv41-c2x2", [*BASE, "-pp", "2"]),
    "c2x2-mtp3": ("dsv41-c2x2", [*BASE, "--speculative-config", MTP3]),
    "c2x2-block128": ("dsv41-c2x2", [*BASE, "--block-size", "128"]),
    "c2x2-auto": ("dsv41-c2x2", ["--kv-cache-memory-bytes", "50000000", "--max-model-len", "-1"]),
    "c1only": ("dsv41-c1only", BASE),
    "c1only-pp2": ("dsv41-c1only", [*BASE, "-pp", "2"]),
    "c1only-block32": ("dsv41-c1only", [*BASE, "--block-size", "32"]),
    # what vLLM refuses of the layer topology (each config one change to dsv41-tiny)
    "ratio4": ("dsv41-ratio4", BASE),
    "src0": ("dsv41-src0", BASE),
    "lastc2": ("dsv41-lastc2", BASE),
    "orphan": ("dsv41-orphan", BASE),
    "engram": ("dsv41-engram", [*BASE, "--engram-config", '{"cpu_offload": false}']),
    # a two-layer vision tower: vLLM finds no multimodal processor for it and runs text-only, the same caches
    "vision": ("dsv41-vision", BASE),
    "vision-batched128": ("dsv41-vision", [*BASE, "--max-num-batched-tokens", "128"]),
    "vision-tp8": ("dsv41-vision", [*BASE, "-tp", "8"]),
}

#: other GPUs (``tests/data/gpus/run_oracle_as.py``; the cases above run as the oracle's default
#: H200): case id -> (config name, flags, GPU)
GPU_CASES: dict[str, tuple[str, list[str], str]] = {
    "h100": ("dsv41-tiny", BASE, "H100"),
    "h100-tp2": ("dsv41-tiny", [*BASE, "-tp", "2"], "H100"),
    "a100": ("dsv41-tiny", BASE, "A100-80GB"),
    "b200": ("dsv41-tiny", BASE, "B200"),
    "b200-tp2": ("dsv41-tiny", [*BASE, "-tp", "2"], "B200"),
    "b200-bf16": ("dsv41-tiny", [*BASE, "--kv-cache-dtype", "bfloat16"], "B200"),
    "b200-c2x2": ("dsv41-c2x2", BASE, "B200"),
    "rtx5090": ("dsv41-tiny", BASE, "RTX 5090"),
    "rtx-pro-6000": ("dsv41-tiny", BASE, "RTX PRO 6000 Blackwell"),
    "h100-block128": ("dsv41-tiny", [*BASE, "--block-size", "128"], "H100"),
    "h100-c2x2-auto": ("dsv41-c2x2", ["--kv-cache-memory-bytes", "50000000", "--max-model-len", "-1"], "H100"),
    "a100-block64": ("dsv41-tiny", [*BASE, "--block-size", "64"], "A100-80GB"),
    "a100-block256": ("dsv41-tiny", ["--kv-cache-memory-bytes", "4000000000", "--block-size", "256"], "A100-80GB"),
    "a100-c2x2-tp2": ("dsv41-c2x2", [*BASE, "-tp", "2"], "A100-80GB"),
    "a100-ngram": ("dsv41-tiny", [*BASE, "--speculative-config", NGRAM], "A100-80GB"),
    "rtx5090-block32": ("dsv41-tiny", [*BASE, "--block-size", "32"], "RTX 5090"),
    "rtx5090-c2x2": ("dsv41-c2x2", BASE, "RTX 5090"),
    "rtx5090-c1only-pp2": ("dsv41-c1only", [*BASE, "-pp", "2"], "RTX 5090"),
    "rtx5090-auto": ("dsv41-tiny", ["--kv-cache-memory-bytes", "100000000", "--max-model-len", "-1"], "RTX 5090"),
    "l40s": ("dsv41-tiny", BASE, "L40S"),
    "b300": ("dsv41-tiny", BASE, "B300"),
    # a 128-token window, which every release's SM120 decode table has (dsv41-tiny's 64 is not in 0.30.0's)
    "rtx5090-w128": ("dsv41-w128", BASE, "RTX 5090"),
    "rtx-pro-6000-w128-tp2": ("dsv41-w128", [*BASE, "-tp", "2"], "RTX PRO 6000 Blackwell"),
    # a named --attention-backend on SM 10.x (``_select_dsv4_attn_cls``): FlashMLA's names, FlashInfer's
    # DeepSeek-V4 names, the mega attention's, the generic sparse FlashInfer names vLLM refuses, and
    # names the selection passes over (the layers' own default); ``dsv41-o2`` (two output groups: 8 heads a
    # group) is the topology mega attention takes by default
    **{
        f"b200-{tag}": ("dsv41-tiny", [*BASE, "--attention-backend", name], "B200")
        for tag, name in (
            ("flashmla-dsv41", "FLASHMLA_SPARSE_DSV41"),
            ("flashmla-sparse", "FLASHMLA_SPARSE"),
            ("fi-dsv41", "FLASHINFER_MLA_SPARSE_DSV41"),
            ("fi-dsv4", "FLASHINFER_MLA_SPARSE_DSV4"),
            ("fi-sparse", "FLASHINFER_MLA_SPARSE"),
            ("fi-sm120", "FLASHINFER_MLA_SPARSE_SM120"),
            ("mega", "FLASHMLA_MEGA_ATTN_DSV41"),
            ("flash-attn", "FLASH_ATTN"),
            ("flashmla", "FLASHMLA"),
            ("triton-mla", "TRITON_MLA"),
        )
    },
    "b200-o2-flashmla-dsv41": ("dsv41-o2", [*BASE, "--attention-backend", "FLASHMLA_SPARSE_DSV41"], "B200"),
}
#: config name -> (the config it changes, the text config keys it sets)
DERIVED: dict[str, tuple[str, dict[str, Any]]] = {
    "dsv41-w128": ("dsv41-tiny", {"sliding_window": 128}),
    "dsv41-o2": ("dsv41-tiny", {"o_groups": 2}),
}


#: ``dsv41-tiny`` is the architecture's tiny config (``data/architectures/``, which
#: ``test_release_architectures.py`` also records under the standard flag sets)
TINY = HERE / "data" / "architectures" / f"{ARCH}.json"


def config_path(name: str) -> Path:
    """The file of the tiny config ``name``."""
    return TINY if name == "dsv41-tiny" else DATA / "configs" / f"{name}.json"


def config(name: str) -> dict[str, Any]:
    """The tiny config ``name`` (:func:`config_path`; one of :data:`DERIVED`: its base with its keys set in
    ``text_config``)."""
    base, keys = DERIVED.get(name, (name, {}))
    data: dict[str, Any] = json.loads(config_path(base).read_text())
    data.get("text_config", data).update(keys)
    return data


def standard_cases() -> dict[str, tuple[str, list[str]]]:
    """The 24 standard flag sets on ``dsv41-tiny`` (``test_architectures.flag_sets``), as ``std-<i>``."""
    import test_architectures as T

    sets = T.flag_sets(ARCH, TINY)
    return {f"std-{i}": ("dsv41-tiny", T.portable(argv)) for i, argv in enumerate(sets)}


def cases() -> dict[str, tuple[str, list[str]]]:
    """Every case recorded on each release: :data:`VARIANTS` then :func:`standard_cases`."""
    return {**VARIANTS, **standard_cases()}


def recorded(version: str, gpus: bool = False) -> dict[str, dict[str, Any]]:
    """What ``version`` answered, case id -> {config, argv, (gpu), vllm}."""
    path = DATA / f"vllm-{version}{'-gpus' if gpus else ''}.json"
    doc: dict[str, Any] = json.loads(path.read_text())
    assert doc["vllm"] == version
    out: dict[str, dict[str, Any]] = doc["cases"]
    return out
