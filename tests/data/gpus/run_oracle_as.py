"""Run the e2e oracle (``src/dryboot/boot/engine_start.py``) as another GPU of ``gpus.toml``.

    /work/venvs/vllm-0.28.0/bin/python tests/data/gpus/run_oracle_as.py "RTX 3090" [ARM] < cases.jsonl

Same protocol as the oracle (JSON lines in, one JSON line per case out, a final ``meta`` line,
which here also names the GPU and arm). Before the oracle's own ``_install`` returns, the stand-in
platform is re-pointed at the GPU row (capability, NVML name and total memory, SM count; torch's
device queries likewise), FlashInfer's availability is pinned to the arm (``cubin`` by default;
``nvcc-offline`` or ``bare``, see ``record_backend_matrix.ARMS``), and CUTLASS MLA's import-time
CUDA workspace is allocated on the meta device. Nothing else of the oracle changes: this is the
runner issue 21's per-GPU fidelity harness can call until the oracle takes a GPU argument itself.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[2] / "src" / "dryboot" / "boot"))

import engine_start as oracle  # noqa: E402
import record_backend_matrix as matrix  # noqa: E402


def main() -> int:
    name = sys.argv[1]
    arm = sys.argv[2] if len(sys.argv) > 2 else matrix.ARMS[0]
    gpu = next((g for g in matrix._gpus() if g["name"] == name), None)
    if gpu is None or arm not in matrix.ARMS:
        print(f"unknown GPU {name!r} or arm {arm!r}", file=sys.stderr)
        return 2
    real_install = oracle._install

    def install() -> None:
        real_install()
        import vllm.platforms as platforms

        matrix._import_cutlass_mla()
        matrix._as_gpu(type(platforms._current_platform), gpu, arm)

    oracle._install = install  # type: ignore[assignment]
    real_stdout = sys.stdout

    class _Tagged:
        """Adds the GPU and arm to the oracle's final meta line."""

        def write(self, text: str) -> Any:
            if text.startswith('{"meta"'):
                doc = json.loads(text)
                doc["meta"].update(gpu=name, arm=arm)
                text = json.dumps(doc) + "\n"
            return real_stdout.write(text)

        def flush(self) -> None:
            real_stdout.flush()

    sys.stdout = _Tagged()  # type: ignore[assignment]
    try:
        return oracle.main([])
    finally:
        sys.stdout = real_stdout


if __name__ == "__main__":
    raise SystemExit(main())
