"""Record a release's engine start on the tiny Qwen4-Exp and Step5 configs of
``qwen4_exp_step5_cases.py`` (what backs their refusals).

    python3 tests/fidelity/record_qwen4_exp_step5.py ~/.cache/dryboot/boot-env/0.33.0/bin/python

Runs ``src/dryboot/boot/engine_start.py`` in that environment over the release's cases (every one
on 0.33.0, the Qwen4-Exp ones on 0.29.0-0.32.0, whose registries list Qwen4-Exp but not Step5) and
writes ``data/refused-0.33/vllm-<release>.json``: served or refused (stage and error), the KV cache
groups and the layers in each. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import qwen4_exp_step5_cases as Q


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    if version != Q.VERSION and version not in Q.EARLIER:
        print(f"vLLM {version}: these cases are recorded on {Q.VERSION} and {Q.EARLIER} only", file=sys.stderr)
        return 1
    return H.record_config_cases(
        python, version, Q.cases_for(version), Q.config, Q.record_path(version), 300, Q.KEPT_FIELDS
    )


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
