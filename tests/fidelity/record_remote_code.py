"""Record one release's answers to ``test_remote_code.py``'s published configs.

    python3 tests/fidelity/record_remote_code.py ~/.cache/dryboot/boot-env/0.33.0/bin/python

Runs ``src/dryboot/boot/engine_start.py`` in that environment over every published ``*.config.json`` of
``data/remote-code/`` (beside its family's ``configuration_*.py``) under ``FLAG_SETS`` and writes the answers
into ``data/remote-code/recorded-<release>.json``. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T
import test_remote_code as R


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    cases = {name: R.cases(name) for name in R.published()}
    res = H.OracleRunner(python, jobs=1).run([c.oracle_input() for cs in cases.values() for c in cs])
    crashed = sorted(k for k, v in res.items() if "OracleCrash" in str(v.get("error")))
    if crashed:
        print("oracle crashed on " + ", ".join(crashed) + "; nothing recorded, run again", file=sys.stderr)
        return 1
    doc: dict[str, object] = {"vllm": version, "configs": {}}
    configs: dict[str, list[dict[str, object]]] = {}
    for name, cs in cases.items():
        rows = []
        for c in cs:
            kept = {k: res[c.id].get(k) for k in T.KEPT if res[c.id].get(k) is not None}
            if "error" in kept:
                kept["error"] = str(kept["error"])[:500]
            rows.append({"argv": c.argv, "vllm": kept})
        configs[name] = rows
        print(f"{name:40} {sum(1 for r in rows if r['vllm'].get('ok'))}/{len(rows)} served")
    doc["configs"] = configs
    R.record_path(version).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
