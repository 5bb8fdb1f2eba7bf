"""Record vLLM 0.33.0's engine start on the tiny Qwen4-Exp configs with PLE layers of
``qwen4_ple_cases.py``.

    python3 tests/fidelity/record_qwen4_ple.py ~/.cache/dryboot/boot-env/0.33.0/bin/python

Runs ``src/dryboot/boot/engine_start.py`` in that environment over the cases and writes
``data/qwen4-ple/vllm-0.33.0.json`` (``RECORD_OUT``: another file): served or refused (stage and
error), the KV cache groups and the layers in each, the capacity vLLM logs. Nothing recorded comes
from dryboot.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import qwen4_exp_step5_cases as Q
import qwen4_ple_cases as P


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    if version != P.VERSION:
        print(f"vLLM {version}: these cases are recorded on {P.VERSION} only", file=sys.stderr)
        return 1
    out = Path(os.environ.get("RECORD_OUT") or P.RECORD)
    return H.record_config_cases(python, version, P.CASES, P.config, out, 300, Q.KEPT_FIELDS)


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
