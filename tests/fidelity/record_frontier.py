"""Record vLLM's answers for the frontier cases (``frontier_cases.py``).

    python3 tests/fidelity/record_frontier.py ~/.cache/dryboot/boot-env/0.28.0/bin/python [GPU...]

Per GPU it runs ``tests/data/gpus/run_oracle_as.py GPU`` (the e2e oracle answering as that row of
``gpus.toml``, FlashInfer arm ``cubin``) over that GPU's cases and writes
``data/frontier/vllm-X.json`` (other cases' answers kept). Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import frontier_cases as F

RUN_AS = H.REPO / "tests" / "data" / "gpus" / "run_oracle_as.py"
KEPT = (
    "ok",
    "stage",
    "error",
    "block_size",
    "groups",
    "num_blocks",
    "tokens",
    "concurrency",
    "max_model_len",
    "kv_log",
)


def record(python: str, gpus: list[str], all_cases: list[dict[str, Any]], data: Path) -> None:
    """Record vLLM's answer for each of ``all_cases`` on its GPU into ``data/vllm-X.json``
    (answers of other cases kept)."""
    for gpu in gpus:
        mine = [c for c in all_cases if c["gpu"] == gpu]
        if not mine:
            continue
        runner = H.OracleRunner(python, jobs=1, oracle_argv=[str(RUN_AS), gpu])
        res = runner.run([{"id": c["id"], "model": F.materialize(c), "argv": F.argv(c)} for c in mine])
        version = next((m["vllm_version"] for m in runner.meta if m.get("vllm_version")), "?")
        path = data / f"vllm-{version}.json"
        doc = json.loads(path.read_text()) if path.exists() else {"vllm": version, "cases": {}}
        for c in mine:
            v = res[c["id"]]
            kept = {k: v.get(k) for k in KEPT if v.get(k) is not None}
            if "error" in kept:
                # the work directory's path is this machine's: recorded as the harness's token
                error = str(kept["error"]).replace(str(H.default_workdir()), "<e2e-work>")
                kept["error"] = error[:500]
            doc["cases"][c["id"]] = {"argv": c["argv"], "vllm": kept}
        doc["cases"] = dict(sorted(doc["cases"].items()))
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        served = sum(1 for c in mine if res[c["id"]].get("ok"))
        print(f"{gpu:12} {len(mine)} cases recorded ({served} served by vLLM {version})", file=sys.stderr)


def main() -> int:
    python, gpus = sys.argv[1], sys.argv[2:] or list(F.GPUS)
    record(python, gpus, F.cases(), F.DATA)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
