"""Record one release's answers to the per-architecture cases of ``test_release_architectures.py``.

    python3 tests/fidelity/record_release_architectures.py ~/.cache/dryboot/boot-env/0.33.0/bin/python [ARCH...]

Runs ``src/dryboot/boot/engine_start.py`` in that environment over the tiny config of each architecture
that release's list in ``test_release_architectures.ARCHITECTURES`` names (or only the named ones),
under the flag sets ``test_architectures`` records on 0.28.0, and over its ``defaults/`` config
(where there is one) under ``DEFAULTS_FLAG_SETS``; writes the answers into
``data/release-architectures/vllm-<release>.json`` (other architectures' records are kept, in their
order; a new one goes last). Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T
import test_release_architectures as R


def main() -> int:
    python, only = sys.argv[1], set(sys.argv[2:])
    version = H.vllm_version(python)
    runner = H.OracleRunner(python, jobs=1)
    archs = [a for a in R.ARCHITECTURES.get(version, ()) if not only or a in only]
    cases = {a: R.cases(a, version) for a in archs}
    res = runner.run([c.oracle_input() for cs in cases.values() for c in cs])
    crashed = sorted(k for k, v in res.items() if "OracleCrash" in str(v.get("error")))
    if crashed:
        print("oracle crashed on " + ", ".join(crashed) + "; nothing recorded, run again", file=sys.stderr)
        return 1
    path = R.record_path(version)
    doc = json.loads(path.read_text()) if path.exists() else {"vllm": version, "architectures": {}}
    for arch, cs in cases.items():
        rows = []
        for c in cs:
            v = res[c.id]
            kept = {k: v.get(k) for k in T.KEPT if v.get(k) is not None}
            if "error" in kept:
                kept["error"] = str(kept["error"])[:500]
            rows.append({"id": c.id, "argv": T.portable(c.argv), "vllm": kept})
        doc["architectures"][arch] = rows
        print(f"{arch:48} {sum(1 for r in rows if r['vllm'].get('ok'))}/{len(rows)} served")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"vLLM {version}: {sum(len(c) for c in cases.values())} cases recorded into {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
