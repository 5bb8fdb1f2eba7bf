"""Record a release's engine start on the Bailing-V2.5 cases of ``bailing_linear_cases.py``.

    python3 tests/fidelity/record_bailing_linear.py ~/.cache/dryboot/boot-env/0.33.0/bin/python

Runs ``src/dryboot/boot/engine_start.py`` in that environment over the cases and writes
``data/bailing-linear/vllm-<release>.json``: served or refused (stage and error), the KV cache groups,
blocks, tokens and concurrency. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bailing_linear_cases as B
import e2e_harness as H


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    if version not in B.RELEASES:
        print(f"vLLM {version}: these cases are recorded on {B.RELEASES} only", file=sys.stderr)
        return 1
    return H.record_config_cases(python, version, B.CASES, B.config, B.record_path(version), 300, B.KEPT_FIELDS)


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
