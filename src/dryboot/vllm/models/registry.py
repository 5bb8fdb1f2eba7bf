"""Architecture name -> model family, as ``vllm/model_executor/models/registry.py`` maps
architectures to model files. An architecture not listed here is refused by name (exit 2):
dryboot never plans a model whose layer structure it has not been taught.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from dryboot.errors import InputError

if TYPE_CHECKING:
    from dryboot.vllm.config.hf import ConfigFields, ModelGeometry


@dataclass(frozen=True)
class Family:
    """A model family: the dryboot module that reads its configs and the vLLM file it mirrors.

    :param name: module under :mod:`dryboot.vllm.models`.
    :param vllm_files: the ``vllm/model_executor/models/`` files whose layer structure it follows.
    :param architectures: the ``architectures`` names it serves.
    """

    name: str
    vllm_files: tuple[str, ...]
    architectures: tuple[str, ...]

    def module(self) -> ModuleType:
        return importlib.import_module(f"dryboot.vllm.models.{self.name}")

    def defaults(self, f: ConfigFields) -> dict[str, Any]:
        """The HF config class defaults for ``f``'s ``model_type``."""
        result: dict[str, Any] = self.module().defaults(f)
        return result

    def read(self, f: ConfigFields, architecture: str) -> ModelGeometry:
        """The model's geometry.

        :raises InputError: a field is missing or malformed, or vLLM refuses the config.
        """
        model: ModelGeometry = self.module().read(f, architecture)
        return model

    def verify(self, model: ModelGeometry, tensor_parallel_size: int) -> None:
        """Refusals vLLM makes while building the model on ``tensor_parallel_size`` ranks.

        :raises InputError: naming the field and vLLM's reason.
        """
        check = getattr(self.module(), "verify", None)
        if check is not None:
            check(model, tensor_parallel_size)


FAMILIES: tuple[Family, ...] = (
    Family(
        "llama",
        ("llama.py", "mistral.py", "qwen2.py", "qwen3.py", "qwen3_dflash.py"),
        ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "DFlashDraftModel"),
    ),
    Family(
        "gemma",
        ("gemma2.py", "gemma3.py", "gemma4.py"),
        (
            "Gemma2ForCausalLM",
            "Gemma3ForCausalLM",
            "Gemma3ForConditionalGeneration",
            "Gemma4ForCausalLM",
            "Gemma4ForConditionalGeneration",
        ),
    ),
    Family("gpt_oss", ("gpt_oss.py",), ("GptOssForCausalLM",)),
    Family(
        "qwen3_next",
        ("qwen3_next.py", "qwen3_5.py", "qwen3_next_mtp.py", "qwen3_5_mtp.py"),
        (
            "Qwen3NextForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForConditionalGeneration",
        ),
    ),
    Family("nemotron_h", ("nemotron_h.py",), ("NemotronHForCausalLM",)),
    Family("deepseek", ("deepseek_v2.py", "deepseek_mtp.py"), ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")),
    Family("mamba", ("mamba.py",), ("MambaForCausalLM", "FalconMambaForCausalLM")),
    Family("jamba", ("jamba.py",), ("JambaForCausalLM",)),
)

from dryboot.vllm.models.dense import DECODERS, LLAMA4, WRAPPERS  # noqa: E402  (the dense tables name their files)

FAMILIES += (
    Family(
        "dense",
        tuple(
            sorted(
                {d.vllm_file for d in DECODERS.values()}
                | {w[0] for w in WRAPPERS.values()}
                | {w[0] for w in LLAMA4.values()}
            )
        ),
        (*DECODERS, *WRAPPERS, *LLAMA4),
    ),
)

ARCHITECTURES: dict[str, Family] = {arch: fam for fam in FAMILIES for arch in fam.architectures}


def family_for(architecture: str, source: str) -> Family:
    """The family serving ``architecture``.

    :raises InputError: no ``architectures`` entry, or one dryboot does not model.
    """
    if not architecture:
        raise InputError(source, "architectures", "missing: dryboot needs the architecture to know the layers")
    family = ARCHITECTURES.get(architecture)
    if family is None:
        from dryboot.vllm.models.refusals import reason

        raise InputError(
            source,
            "architectures",
            f"{architecture} is not modelled by dryboot, so its KV cache cannot be planned exactly: "
            f"{reason(architecture)} (see dryboot plan --list-architectures)",
        )
    return family


#: where the tiny config that verifies a planned architecture lives (in the source tree)
TINY_CONFIGS = "tests/fidelity/data/architectures"


@dataclass(frozen=True)
class ArchitectureRow:
    """One row of ``dryboot plan --list-architectures``.

    :param architecture: the registry name; :param kind: vLLM's table (text-generation,
        multimodal, speculative-decoding); :param vllm_file: its model file in vLLM 0.28.0;
    :param status: ``verified`` (a family plans it, checked end to end against vLLM's engine start
        on its tiny config) or ``refused``; :param family: the dryboot family, or ``""``;
    :param reason: why it is refused (``""`` when verified); :param tiny_config: the source-tree
        path of the config that verifies it (``""`` when refused).
    """

    architecture: str
    kind: str
    vllm_file: str
    status: str
    family: str
    reason: str = ""
    tiny_config: str = ""


def architecture_table() -> list[ArchitectureRow]:
    """Every architecture of vLLM 0.28.0's registry (text generation, multimodal wrappers,
    speculative decoding), with what dryboot does with it."""
    import json
    from importlib.resources import files

    from dryboot.vllm.models.refusals import reason

    data = json.loads(files("dryboot").joinpath("data/vllm-0.28.0-architectures.json").read_text(encoding="utf-8"))
    rows = []
    for arch, entry in data.items():
        family = ARCHITECTURES.get(arch)
        rows.append(
            ArchitectureRow(
                arch,
                entry["kind"],
                entry["file"],
                "verified" if family else "refused",
                family.name if family else "",
                "" if family else reason(arch),
                f"{TINY_CONFIGS}/{arch}.json" if family else "",
            )
        )
    return rows


def drafter_architecture(method: str, architecture: str, source: str) -> str:
    """The architecture vLLM builds a draft model as: ``Eagle<arch>`` (``eagle``),
    ``Eagle3<arch>`` (``eagle3``), ``DFlash<arch>`` (``dflash``) unless the name already says so
    (``transformers_utils/configs/eagle.py``); other methods keep the name.

    :raises InputError: vLLM 0.28.0's registry has no such architecture ("Model architectures
        [...] are not supported for now").
    """
    if method == "eagle" and not architecture.startswith("Eagle"):
        resolved = f"Eagle{architecture}"
    elif method == "eagle3" and not (architecture.startswith("Eagle3") or architecture.endswith("Eagle3")):
        resolved = f"Eagle3{architecture}"
    elif method == "dflash" and not (architecture.startswith("DFlash") or architecture.endswith("DFlash")):
        resolved = f"DFlash{architecture}"
    else:
        resolved = architecture
    if method in ("eagle", "eagle3", "dflash") and resolved not in {r.architecture for r in architecture_table()}:
        raise InputError(
            source,
            "architectures",
            f"Model architectures ['{resolved}'] are not supported for now (vLLM 0.28.0 builds a {method} "
            f"drafter of {architecture} as {resolved})",
        )
    return resolved
