"""Record vLLM's answers for ``test_deepseek_v4_vl.py``: DeepSeek-V4's multimodal wrapper
(vLLM 0.30.0+).

    python3 tests/fidelity/record_deepseek_v4_vl.py ~/.cache/dryboot/boot-env/0.30.0/bin/python

Runs ``src/dryboot/boot/engine_start.py`` in that environment over ``test_deepseek_v4_vl.CASES``
and writes its answers into ``data/deepseek_v4/vl-<release>.json``. Nothing recorded comes from
dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T
import test_deepseek_v4_vl as V


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    if version not in V.RELEASES:
        print(f"vLLM {version}: the wrapper is recorded on {' / '.join(V.RELEASES)} only", file=sys.stderr)
        return 1
    cases = [V.make_case(i, config, argv) for i, (config, argv) in enumerate(V.CASES)]
    runner = H.OracleRunner(python, jobs=1)
    res = runner.run([c.oracle_input() for c in cases])
    crashed = sorted(k for k, v in res.items() if "OracleCrash" in str(v.get("error")))
    if crashed:
        print("oracle crashed on " + ", ".join(crashed) + "; nothing recorded, run again", file=sys.stderr)
        return 1
    rows = []
    for c, (config, argv) in zip(cases, V.CASES, strict=True):
        v = res[c.id]
        kept = {k: v.get(k) for k in T.KEPT if v.get(k) is not None}
        if "error" in kept:
            kept["error"] = str(kept["error"])[:500]
        rows.append({"config": config, "argv": T.portable(argv), "vllm": kept})
    V.record_path(version).write_text(json.dumps({"vllm": version, "cases": rows}, indent=1) + "\n")
    served = sum(1 for r in rows if r["vllm"].get("ok"))
    print(f"vLLM {version}: {len(rows)} cases recorded, {served} served")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
