"""Record a release's engine start on the tiny GLM-5.3-Flash configs of ``glm5next_cases.py``.

    python3 tests/fidelity/record_glm5next.py ~/.cache/dryboot/boot-env/<release>/bin/python [CASE...]

Writes each config into a model directory, runs ``src/dryboot/boot/engine_start.py`` (as its
default H200, or as a case's GPU through ``tests/data/gpus/run_oracle_as.py``) over the release's
cases (``cases_for``) and writes ``data/glm5next/vllm-<release>.json`` (other cases' answers kept
when only some are named; ``RECORD_OUT`` writes elsewhere; ``RECORD_GLM5NEXT_DENSE=1``: the dense MLA cases
``DENSE_CASES`` of 0.30.0 / 0.31.0 into ``data/glm5next/dense-<release>.json``; ``RECORD_GLM5NEXT_KDAPP=1``:
``KDA_PP_CASES`` into ``data/glm5next/kdapp-<release>.json``). Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import glm5next_cases as C
import release_records as R


def main(argv: list[str]) -> int:
    """The release's cases (``RECORD_GLM5NEXT_KDAPP`` / ``RECORD_GLM5NEXT_DENSE``: those sets) recorded."""
    if os.environ.get("RECORD_GLM5NEXT_KDAPP"):
        kdapp = C.KDA_PP_CASES
        return R.record_gpu_cases(
            C, argv, releases=C.KDA_PP_RELEASES, cases=lambda _: kdapp, record_path=C.kdapp_record_path
        )
    if os.environ.get("RECORD_GLM5NEXT_DENSE"):
        dense = C.DENSE_CASES
        return R.record_gpu_cases(
            C, argv, releases=C.DENSE_RELEASES, cases=lambda _: dense, record_path=C.dense_record_path
        )
    return R.record_gpu_cases(C, argv, releases=(*C.EARLIER, C.VERSION), cases=C.cases_for)


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main(sys.argv[1:]))
