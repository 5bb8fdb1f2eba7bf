"""Record a release's engine start (vLLM 0.28.0 or 0.33.0) on Isaac's two-config cases
(``isaac_cases.py``), each with the stand-in tokenizer beside its config.json.

    python3 tests/fidelity/record_isaac.py ~/.cache/dryboot/boot-env/0.33.0/bin/python

Writes ``data/wrappers/isaac/vllm-<release>.json``: served (block count, tokens, KV cache groups)
or refused (stage and error). Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import isaac_cases as Q


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    if version not in Q.VERSIONS:
        print(f"vLLM {version}: these cases are recorded on {' / '.join(Q.VERSIONS)} only", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        inputs = []
        for cid in Q.CASES:
            d = Path(tmp) / cid
            d.mkdir()
            (d / "config.json").write_text(json.dumps(Q.config(cid), indent=1))
            for f in sorted(Q.FILES.iterdir()):
                shutil.copy(f, d / f.name)
            inputs.append({"id": cid, "model": str(d), "argv": Q.ARGV})
        res = H.OracleRunner(python, jobs=1).run(inputs)
    if any("OracleCrash" in str(v.get("error")) for v in res.values()):
        print("the oracle crashed; nothing recorded, run again", file=sys.stderr)
        return 1
    out = {}
    for cid in Q.CASES:
        kept = {k: res[cid].get(k) for k in H.RECORD_KEPT if res[cid].get(k) is not None}
        if "error" in kept:
            kept["error"] = str(kept["error"])[:500]
        out[cid] = {"argv": Q.ARGV, "vllm": kept}
        print(f"{cid:28} {'served' if kept.get('ok') else kept.get('error', '')[:90]}")
    path = Q.record_path(version)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"vllm": version, "cases": out}, indent=1) + "\n")
    print(f"vLLM {version}: {len(out)} cases recorded into {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
