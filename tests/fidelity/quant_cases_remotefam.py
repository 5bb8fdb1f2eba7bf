"""FlashInfer's KV counter in the remote-code families Param2 MoE, Bailing (v1), Bailing-V2 and TeleChat2
(issue 33), built by vLLM 0.33.0 on B200 (SM 10.0: FlashInfer leads the attention priorities) and on H100
(FlashAttention: no counter), each started with ``--trust-remote-code`` and its checkpoints' own
``configuration_*.py`` beside the tiny config (``data/architectures/<Architecture>.json``, linked, and
``data/remote-code/``, copied beside it by :func:`checkpoint_dir`). ``built_allocated_bytes`` counts
every storage made while the model is built, the counter included.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=remotefam`` (``RECORD_GPUS=B200,H100``), and by ``test_weights_remote_families.py``; vLLM's
answers in ``data/weights/quant-recorded-remotefam-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-remotefam"
RECORDED_NAME = "quant-recorded-remotefam-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("B200", (10, 0), 148),)
TPS = (1, 2)
EXTRA_GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("H100", (9, 0), 132),)
#: a fixed scheduler budget (it sizes the counter); the config classes are the checkpoints' own
EXTRA_ARGV = ("--max-num-batched-tokens", "8192", "--trust-remote-code")


#: architecture -> its checkpoints' config class directory under ``data/remote-code/``
REMOTE_CODE = {
    "Param2MoEForCausalLM": "param2moe",
    "BailingMoeV2ForCausalLM": "bailing_moe_v2",
    "TeleChat2ForCausalLM": "telechat2",
    "BailingMoeForCausalLM": "bailing_moe",
}


def checkpoint_dir(cdir: Path, tmp: Path) -> Path:
    """The directory vLLM is given: the tiny config and the checkpoints' ``configuration_*.py``
    (:data:`REMOTE_CODE`; no tensors: the models are built from the config, unquantized)."""
    d = tmp / cdir.name
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_bytes((cdir / "config.json").read_bytes())
    for f in (HERE / "data" / "remote-code" / REMOTE_CODE[cdir.name]).glob("*.py"):
        (d / f.name).write_bytes(f.read_bytes())
    return d
