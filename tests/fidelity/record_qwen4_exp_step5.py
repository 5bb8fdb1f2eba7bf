"""Record a release's engine start on the tiny Qwen4-Exp and Step5 configs of
``qwen4_exp_step5_cases.py`` (what backs their refusals).

    python3 tests/fidelity/record_qwen4_exp_step5.py ~/.cache/dryboot/boot-env/0.33.0/bin/python

Runs ``src/dryboot/boot/engine_start.py`` in that environment over the release's cases (every one
on 0.33.0, the Qwen4-Exp ones on 0.29.0-0.32.0, whose registries list Qwen4-Exp but not Step5) and
writes ``data/refused-0.33/vllm-<release>.json``: served or refused (stage and error), the KV cache
groups and the layers in each. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import qwen4_exp_step5_cases as Q

KEPT = ("ok", "stage", "error", "block_size", "groups", "group_layers", "num_blocks")


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    if version != Q.VERSION and version not in Q.EARLIER:
        print(f"vLLM {version}: these cases are recorded on {Q.VERSION} and {Q.EARLIER} only", file=sys.stderr)
        return 1
    chosen = Q.cases_for(version)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs = [
            {"id": cid, "model": H._write_config(work, name, Q.config(name)), "argv": argv}
            for cid, (name, argv) in chosen.items()
        ]
        res = H.OracleRunner(python, jobs=1).run(inputs)
    crashed = sorted(k for k, v in res.items() if "OracleCrash" in str(v.get("error")))
    if crashed:
        print("oracle crashed on " + ", ".join(crashed) + "; nothing recorded, run again", file=sys.stderr)
        return 1
    cases = {}
    for cid in chosen:
        kept = {k: res[cid].get(k) for k in KEPT if res[cid].get(k) is not None}
        if "error" in kept:
            kept["error"] = str(kept["error"])[:300]
        cases[cid] = {"config": Q.CASES[cid][0], "argv": Q.CASES[cid][1], "vllm": kept}
        print(f"{cid:28} {'served' if kept.get('ok') else kept.get('error', '')[:90]}")
    Q.record_path(version).write_text(json.dumps({"vllm": version, "cases": cases}, indent=1) + "\n")
    print(f"vLLM {version}: {len(cases)} cases recorded into {Q.record_path(version)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
