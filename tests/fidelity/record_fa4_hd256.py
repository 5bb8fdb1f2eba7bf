"""Record a release's engine start on the head-256 cases of ``fa4_hd256_cases.py``.

    python3 tests/fidelity/record_fa4_hd256.py ~/.cache/dryboot/boot-env/<release>/bin/python [CASE ...]

Runs ``src/dryboot/boot/engine_start.py`` as each case's GPU and FlashInfer arm (through
``tests/data/gpus/run_oracle_as.py``) and writes ``data/fa4-hd256/vllm-<release>.json`` (the cases
named replace theirs; the others recorded are kept; ``RECORD_OUT`` writes elsewhere). Nothing recorded
comes from dryboot.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import fa4_hd256_cases as C
import release_records as R


def entry(case: R.GpuCase, answer: dict[str, Any], work: Path) -> dict[str, Any]:
    """A case's record entry: every field of :data:`e2e_harness.LOGGED_KEPT` (``None`` kept), the
    error with the work directory written ``<work>`` and cut to 600 characters."""
    kept = {k: answer.get(k) for k in H.LOGGED_KEPT}
    if kept.get("error"):
        kept["error"] = str(kept["error"]).replace(str(work), "<work>")[:600]
    return kept


if __name__ == "__main__":
    sys.exit(
        R.record_gpu_cases(
            C,
            sys.argv[1:],
            releases=(*C.EARLIER, *C.RELEASES),
            model_dir=lambda work, _, name: H.materialize_file(work, C.MODELS[name]),
            entry=entry,
            case_argv=lambda work, flags: C.drafter_argv(
                flags, {name: H.materialize_file(work, path) for name, path in C.MODELS.items()}
            ),
        )
    )
