"""Multimodal wrappers whose config class only the checkpoint ships (``auto_map``), served by vLLM
under ``--trust-remote-code`` (issue 37): the checkpoints' own config Python files
(``data/remote-code/<name>/``, verbatim, each directory's ``SOURCE`` says where from) beside a
published config (``published/``) or a tiny one in the published layout (``tiny/``).

``record_remote_code_mm.py`` records what each release's engine start does with every case
(``data/remote-code/vllm-<release>.json``); ``test_remote_code_mm.py`` checks dryboot against that
record. The per-architecture cases of the same wrappers (``remote_code_table.DIRS``)
are recorded with the other architectures. A remote-code text model's case that its tiny per-architecture config
cannot hold (``telechat2-nokv``, ``bailing-v2-*``: refusals and an all-dense Bailing-V2) is recorded here too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "remote-code"
#: the releases recorded (every boot environment)
VERSIONS = ("0.28.0", "0.33.0")

TRUST = ["--trust-remote-code"]
BASE = ["--kv-cache-memory-bytes", "4G"]
SHORT = [*BASE, "--max-model-len", "8192"]

#: case id -> (config path under ``data/remote-code/``, its config code directory there, flags)
CASES: dict[str, tuple[str, str, list[str]]] = {
    # OpenGVLab/InternVL3-1B (Qwen2.5-0.5B, dynamic RoPE factor 2: the derived length doubles)
    "internvl3-1b": ("internvl_chat/published/OpenGVLab--InternVL3-1B.json", "internvl_chat", [*BASE, *TRUST]),
    "internvl3-1b-tp2": (
        "internvl_chat/published/OpenGVLab--InternVL3-1B.json",
        "internvl_chat",
        [*SHORT, "--tensor-parallel-size", "2", *TRUST],
    ),
    "internvl3-1b-lmo": (
        "internvl_chat/published/OpenGVLab--InternVL3-1B.json",
        "internvl_chat",
        [*SHORT, "--language-model-only", *TRUST],
    ),
    # without the flag: vLLM asks for trust_remote_code, dryboot refuses the model_type
    "internvl3-1b-untrusted": ("internvl_chat/published/OpenGVLab--InternVL3-1B.json", "internvl_chat", BASE),
    # tiny configs of the other language models InternVLChatConfig builds
    "internvl-llama": ("internvl_chat/tiny/internvl-llama.json", "internvl_chat", [*SHORT, *TRUST]),
    "internvl-qwen3-moe": ("internvl_chat/tiny/internvl-qwen3-moe.json", "internvl_chat", [*SHORT, *TRUST]),
    "internvl-gpt-oss": ("internvl_chat/tiny/internvl-gpt-oss.json", "internvl_chat", [*SHORT, *TRUST]),
    # InternVL 2 / 2.5's InternLM2 language model, with those checkpoints' own (older) config class
    # (InternVL3.5's raises on InternLM2ForCausalLM)
    "internvl-internlm2": ("internvl_chat_v2/tiny/internvl-internlm2.json", "internvl_chat_v2", [*SHORT, *TRUST]),
    # a fine-tune of OpenGVLab/InternVL2-2B (internlm2-chat-1_8b, dynamic RoPE factor 2)
    "internvl2-2b": (
        "internvl_chat_v2/published/zylluan--ft-uav_internvl2-2B.json",
        "internvl_chat_v2",
        ["--kv-cache-memory-bytes", "8G", *TRUST],
    ),
    "internvl2-2b-tp2": (
        "internvl_chat_v2/published/zylluan--ft-uav_internvl2-2B.json",
        "internvl_chat_v2",
        [*SHORT, "--tensor-parallel-size", "2", *TRUST],
    ),
    "internvl2-2b-lmo": (
        "internvl_chat_v2/published/zylluan--ft-uav_internvl2-2B.json",
        "internvl_chat_v2",
        [*SHORT, "--language-model-only", *TRUST],
    ),
    # TeleChat2's own Telechat2Config without num_key_value_heads: vLLM's ModelConfig refuses None KV heads
    "telechat2-nokv": ("telechat2/tiny/telechat2-nokv.json", "telechat2", [*SHORT, *TRUST]),
    # ... and without tie_word_embeddings (Telechat2Config sets none, llama.py reads it)
    "telechat2-notie": ("telechat2/tiny/telechat2-notie.json", "telechat2", [*SHORT, *TRUST]),
    # Bailing-V2's own BailingMoeV2Config: no norm_topk_prob (BailingMoE reads it), a softmax router beside
    # the default expert bias (BailingMoE asserts), and every layer dense (no MoE layer reads either)
    "bailing-v2-no-norm-topk": ("bailing_moe_v2/tiny/bailing-v2-no-norm-topk.json", "bailing_moe_v2", [*SHORT, *TRUST]),
    "bailing-v2-softmax-bias": ("bailing_moe_v2/tiny/bailing-v2-softmax-bias.json", "bailing_moe_v2", [*SHORT, *TRUST]),
    # Bailing (V1)'s BailingMoeConfig has no expert bias: a sigmoid router fails BailingMoE's assertion
    "bailing-v1-sigmoid": ("bailing_moe/tiny/bailing-v1-sigmoid.json", "bailing_moe", [*SHORT, *TRUST]),
    # ... and use_bias true by default: its shared experts' RowParallelLinear (reduce_results=False) refuses a bias
    "bailing-v1-default-bias": ("bailing_moe/tiny/bailing-v1-default-bias.json", "bailing_moe", [*SHORT, *TRUST]),
    "bailing-v2-dense": ("bailing_moe_v2/tiny/bailing-v2-dense.json", "bailing_moe_v2", [*SHORT, *TRUST]),
}


def record_path(version: str) -> Path:
    """Where release ``version``'s answers are recorded."""
    return DATA / f"vllm-{version}.json"


def config(path: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / path).read_text())
    return data


def model_dir(work: Path, cid: str) -> str:
    """A model directory for case ``cid`` under ``work``: its config as ``config.json`` beside the
    checkpoint's config Python files."""
    path, code, _ = CASES[cid]
    d = work / cid
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text((DATA / path).read_text())
    for f in sorted((DATA / code).glob("*.py")):
        (d / f.name).write_bytes(f.read_bytes())
    return str(d)


def recorded(version: str) -> dict[str, dict[str, Any]]:
    doc: dict[str, Any] = json.loads(record_path(version).read_text())
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases
