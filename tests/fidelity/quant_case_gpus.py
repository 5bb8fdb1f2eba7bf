"""The GPUs and TP sizes the second and later sets of quantized-weight cases are recorded on.

Imported by ``quant_cases_extra.py``, ``quant_cases_modelopt.py`` and ``quant_cases_moe.py``
(inside the boot environment too: this module imports nothing of dryboot).
"""

from __future__ import annotations

#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 8.6, 8.9, 9.0, 10.0 and 12.0
SM86_TO_120: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
    ("B200", (10, 0), 148),
    ("RTX 5090", (12, 0), 170),
)
#: the TP sizes of every case
TPS = (1, 2)
