"""The cases behind ``VersionRules.v2_runner_lacks_mamba_all`` and ``v1_runner_refuses`` (vLLM 0.30 / 0.31:
``--mamba-cache-mode all`` keeps the V1 model runner, which refuses a DFlash drafter mixing sliding and
full layers): a stand-in Zamba2 target and DFlash drafter (``data/v1-runner/SOURCE``), with and without
``--mamba-cache-mode all``, recorded on 0.29.0-0.32.0."""

from __future__ import annotations

import json
from pathlib import Path

import e2e_harness as H

DATA = Path(__file__).parent / "data" / "v1-runner"
RECORDS = DATA / "recorded.json"
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0")
KEPT = ("ok", "block_size", "groups", "num_blocks", "tokens", "concurrency", "max_model_len", "error", "stage")
BASE = ["--max-model-len", "8192", "--kv-cache-memory-bytes", "7475106883"]


def cases(workdir: Path) -> list[H.Case]:
    """The target with the drafter, under ``--mamba-cache-mode all`` and ``align`` (configs written under
    ``workdir`` as vLLM takes them)."""
    workdir.mkdir(parents=True, exist_ok=True)
    target = H.materialize_file(workdir, DATA / "zamba2.config.json")
    drafter = H.materialize_file(workdir, DATA / "dflash-mixed.config.json")
    spec = json.dumps({"method": "dflash", "num_speculative_tokens": 4, "model": drafter})
    flags = {mode: [*BASE, "--mamba-cache-mode", mode, "--speculative-config", spec] for mode in ("all", "align")}
    return [H.Case(id=f"mamba-{m}", family="zamba2", model=target, argv=a, source="zamba2") for m, a in flags.items()]
