"""Record a release's engine start on the KDA cases of ``kimi_kda_cases.py``.

    python3 tests/fidelity/record_kimi_kda.py ~/.cache/dryboot/boot-env/0.33.0/bin/python

Runs ``src/dryboot/boot/engine_start.py`` in that environment over the release's cases (Kimi-K3's on
0.33.0 only) and writes ``data/kimi-kda/vllm-<release>.json``: served or refused (stage and error),
the KV cache groups, blocks, tokens and concurrency. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import kimi_kda_cases as K


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    if version not in K.RELEASES:
        print(f"vLLM {version}: these cases are recorded on {K.RELEASES} only", file=sys.stderr)
        return 1
    return H.record_config_cases(
        python, version, K.cases_for(version), K.config, K.record_path(version), 300, K.KEPT_FIELDS
    )


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
