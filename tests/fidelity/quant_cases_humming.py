"""The Humming set of quantized-weight cases: weight-only integer checkpoints whose group size
Machete declines, so that vLLM 0.32.0 / 0.33.0 serve them with ``HummingLinearKernel`` on SM 9.0
(and Marlin elsewhere): zero points (AWQ), a bias (Qwen2.5's QKV), padded shapes (Qwen2.5-72B's
intermediate size per rank at TP 2 and 4 on H100; 0.32.0 at TP 1 and on the RTX 4090 too), 8-bit
weights, and a group size (256) that vLLM's GPTQ method refuses (it checks Marlin's group sizes
first).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=humming``, and by ``test_quant_humming.py``. Its configs live in
``data/weights/quant-configs-humming/`` (each with its ``SOURCE``), vLLM's answers in
``data/weights/quant-recorded-humming-<version>.json``, recorded with the unpacked
``humming-kernels`` wheel the release pins (0.33.0: 0.1.19, 0.32.0: 0.1.17) on ``DRYBOOT_HUMMING_PATH``
(``quant_fakes.py``).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-humming"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-humming-{version}.json"

#: H100 (SM 9.0: Humming ahead of Marlin on 0.33) and RTX 4090 (SM 8.9: Marlin first)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("RTX 4090", (8, 9), 128), ("H100", (9, 0), 132))
TPS = (1, 2)
