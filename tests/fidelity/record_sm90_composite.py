"""Record vLLM's answers for the SM 9.x composite cases (``sm90_composite_cases.py``).

    python3 tests/fidelity/record_sm90_composite.py ~/.cache/dryboot/boot-env/0.31.0/bin/python [GPU...]

Per GPU it runs ``tests/data/gpus/run_oracle_as.py GPU`` (the e2e oracle answering as that row of
``gpus.toml``) over that GPU's cases and writes ``data/sm90-composite/vllm-X.json`` (other GPUs'
answers kept, this GPU's rewritten): the frontier recorder's fields, the engine block (``final_block_size``) and the
attention backends vLLM logs choosing ("Using X attention backend out of potential backends", each
name once, in order). Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import record_frontier as RF
import sm90_composite_cases as S

_USING = re.compile(r"^Using (\S+) attention backend out of potential backends")


def backends(log: list[str]) -> list[str]:
    """The attention backends a log names as chosen, each once, in order."""
    out: list[str] = []
    for line in log:
        m = _USING.match(line)
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


def record(python: str, gpus: list[str]) -> None:
    for gpu in gpus:
        mine = S.cases(gpu)
        runner = H.OracleRunner(python, jobs=1, oracle_argv=[str(RF.RUN_AS), gpu])
        res = runner.run([{"id": c["id"], "model": S.materialize(c), "argv": S.argv(c)} for c in mine])
        version = next((m["vllm_version"] for m in runner.meta if m.get("vllm_version")), "?")
        path = S.DATA / f"vllm-{version}.json"
        doc = json.loads(path.read_text()) if path.exists() else {"vllm": version, "cases": {}}
        # this GPU's answers are all re-recorded (a case no longer listed goes)
        doc["cases"] = {k: v for k, v in doc["cases"].items() if not k.startswith(f"{gpu}|")}
        for c in mine:
            v: dict[str, Any] = res[c["id"]]
            kept = {k: v.get(k) for k in (*RF.KEPT, "final_block_size") if v.get(k) is not None}
            kept["backends"] = backends(v.get("log") or [])
            if "error" in kept:
                kept["error"] = str(kept["error"]).replace(str(H.default_workdir()), "<e2e-work>")[:500]
            doc["cases"][c["id"]] = {"argv": c["argv"], "vllm": kept}
        doc["cases"] = dict(sorted(doc["cases"].items()))
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        served = sum(1 for c in mine if res[c["id"]].get("ok"))
        print(f"{gpu:6} {len(mine)} cases recorded ({served} served by vLLM {version})", file=sys.stderr)


def main() -> int:
    python = sys.argv[1]
    gpus = sys.argv[2:] or [g for g, _ in S.RECORDED_ON]
    record(python, gpus)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
