"""Record a release's engine start (vLLM 0.28.0 or 0.33.0) on the tiny multimodal-wrapper configs of
``wrapper_cases.py`` (what backs their refusals).

    python3 tests/fidelity/record_wrappers.py ~/.cache/dryboot/boot-env/0.33.0/bin/python [CASE...]

Runs ``src/dryboot/boot/engine_start.py`` in that environment over every case and writes
``data/wrappers/vllm-<release>.json``: served or refused (stage and error), the KV cache groups
and the layers in each. Nothing recorded comes from dryboot. ``CASE...``: only those cases,
merged into the release's existing record.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import wrapper_cases as Q


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    if version not in Q.VERSIONS:
        print(f"vLLM {version}: these cases are recorded on {' / '.join(Q.VERSIONS)} only", file=sys.stderr)
        return 1
    named = sys.argv[2:]
    if not named:
        return H.record_config_cases(python, version, Q.CASES, Q.config, Q.record_path(version), 500, files=Q.files)
    import json
    import tempfile

    unknown = sorted(set(named) - set(Q.CASES))
    if unknown:
        print("no such case: " + ", ".join(unknown), file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / "part.json"
        rc = H.record_config_cases(python, version, {c: Q.CASES[c] for c in named}, Q.config, part, 500, files=Q.files)
        if rc:
            return rc
        doc = json.loads(Q.record_path(version).read_text())
        doc["cases"] = {**doc["cases"], **json.loads(part.read_text())["cases"]}
        Q.record_path(version).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
