"""The cases behind ``VersionRules.v2_runner_lacks_mamba_all`` and ``v1_runner_refuses`` (vLLM 0.30 / 0.31:
``--mamba-cache-mode all`` keeps the V1 model runner, which refuses a DFlash drafter mixing sliding and
full layers): a stand-in Zamba2 target and DFlash drafter (``data/v1-runner/SOURCE``), with and without
``--mamba-cache-mode all`` (and ``all`` without prefix caching), and the bundled Qwen3.5-27B and gpt-oss-20b
configs under ``all``, recorded on 0.29.0-0.32.0."""

from __future__ import annotations

import json
from pathlib import Path

import e2e_harness as H

DATA = Path(__file__).parent / "data" / "v1-runner"
EXAMPLES = Path(__file__).parents[2] / "examples" / "models"
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
    # without prefix caching the hybrid hook turns ``all`` into ``none`` before vLLM picks the runner
    flags["all-no-prefix"] = [*flags["all"], "--no-enable-prefix-caching"]
    out = [H.Case(id=f"mamba-{m}", family="zamba2", model=target, argv=a, source="zamba2") for m, a in flags.items()]
    # a Gated DeltaNet hybrid (no mamba prefix caching: ``all`` falls back to ``align``) and a model without
    # mamba state (``all`` kept: the V1 runner)
    for name, family in (("Qwen3.5-27B", "qwen3.5"), ("gpt-oss-20b", "gpt-oss")):
        model = H.materialize_file(workdir, EXAMPLES / f"{name}.config.json")
        out.append(H.Case(id=f"{family}-mamba-all", family=family, model=model, argv=flags["all"], source=name))
    return out
