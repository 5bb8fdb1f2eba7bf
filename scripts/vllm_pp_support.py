"""Write ``src/dryboot/data/vllm-0.28.0-no-pp.json``: the architectures of vLLM 0.28.0's registry
whose model class does not implement ``SupportsPP`` (vLLM refuses ``--pipeline-parallel-size``
above 1 for them: "Pipeline parallelism is not supported for this model").

Run with the fidelity venv's python (``scripts/fidelity-env.sh``); it asks vLLM's own registry
(``ModelRegistry._try_inspect_model_cls(...).supports_pp``) under the stand-ins of
``src/dryboot/boot/engine_start.py``::

    /work/venvs/vllm-0.28.0/bin/python scripts/vllm_pp_support.py

Architectures whose class cannot be inspected on CPU are listed under ``"unknown"``. Run it with
the environment of ``dryboot boot-env --vllm-version 0.28.0 --with-mm-extras`` (timm, not a vLLM
dependency, is installed there; torchaudio is the engine start's stand-in), so that the classes
importing them are inspected (HCXVision, KananaV, DeepSeek-VL2, OpenVLA, FunASR, MiDashengLM,
CohereAsr)::

    ~/.cache/dryboot/boot-env/0.28.0-mm/bin/python scripts/vllm_pp_support.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


#: classes the registry cannot inspect on CPU (their module imports GPU kernels) whose ``SupportsPP``
#: is read in vLLM's source and confirmed by the engine start's pipeline records: Inkling's
#: ``_TmlForCausalLMBase(nn.Module, SupportsPP, SupportsLoRA)`` (vllm/models/inkling/nvidia/model.py,
#: 0.27.1-0.33.0; tests/fidelity/data/pipeline/)
READ_FROM_SOURCE: dict[str, bool] = {"InklingForCausalLM": True, "InklingForConditionalGeneration": True}


def main() -> int:
    sys.path.insert(0, str(REPO / "src" / "dryboot" / "boot"))
    import engine_start as e2e_oracle

    e2e_oracle._install()
    from vllm.model_executor.models.registry import ModelRegistry

    archs = json.loads((REPO / "src/dryboot/data/vllm-0.28.0-architectures.json").read_text())
    no_pp, unknown = [], []
    for arch in sorted(archs):
        try:
            info = ModelRegistry._try_inspect_model_cls(arch)
        except Exception:
            info = None
        if info is None and arch in READ_FROM_SOURCE:
            if not READ_FROM_SOURCE[arch]:
                no_pp.append(arch)
        elif info is None:
            unknown.append(arch)
        elif not info.supports_pp:
            no_pp.append(arch)
    out = REPO / "src/dryboot/data/vllm-0.28.0-no-pp.json"
    out.write_text(json.dumps({"no_pp": no_pp, "unknown": unknown}, indent=1) + "\n")
    print(f"{out}: {len(no_pp)} without SupportsPP, {len(unknown)} not inspectable")
    return 0


if __name__ == "__main__":
    sys.exit(main())
