"""What both vLLM oracles need before importing vLLM in the CPU fidelity venv.

PyPI's torchvision (a dependency of vLLM's multimodal model classes, through transformers'
image processors) is a CUDA build whose op library cannot load next to CPU torch: its import
registers fake kernels for ``torchvision::nms`` / ``qnms`` and fails unless those op schemas
exist. Declaring the two schemas first lets it import; no torchvision kernel is ever called.
"""

from __future__ import annotations

import contextlib
from typing import Any


def declare_torchvision_ops() -> Any:
    """Declare the two torchvision op schemas; returns the registration (keep it alive).

    With a CUDA torch (0.33.0's torch 2.14.0 is PyPI's CUDA build) torchvision's own op library
    loads and registers them: declaring them first would abort the process, so nothing is done.
    """
    import torch

    if torch.version.cuda is not None:
        return None
    with contextlib.suppress(Exception):
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        return lib
    return None
