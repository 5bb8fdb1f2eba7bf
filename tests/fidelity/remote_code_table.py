"""The one table of planned architectures whose config class only the checkpoint ships (``auto_map``):
architecture -> the directory of the checkpoints' own config Python files under ``data/remote-code/``
(verbatim, each directory's ``SOURCE`` says where from).

vLLM reads such a config only under ``--trust-remote-code``, with those files beside ``config.json``.
Every suite that starts such a config takes the files from here:

- ``test_architectures.py``: the per-architecture tiny configs (and ``pp_cases.py``'s pipeline cases);
- ``wrapper_cases.py``: a wrapper config whose ``architectures[0]`` is listed (dots.ocr's configs);
- ``record_weights.py --tiny``: the weights cases of :data:`WEIGHTS_TRUSTED`.

``remote_code_cases.py`` names its own directory per case (a published config may need another
release of the same class, e.g. ``internvl_chat_v2``).
"""

from __future__ import annotations

from pathlib import Path

#: where the checkpoints' config Python files live
DATA = Path(__file__).resolve().parent / "data" / "remote-code"

#: planned architecture -> its config code directory under :data:`DATA`
DIRS: dict[str, str] = {
    "DotsOCRForCausalLM": "dots.ocr",
    "InternLM2ForCausalLM": "internlm2",
    "MiniCPMForCausalLM": "minicpm",
    "MiMoForCausalLM": "mimo",
    "BailingMoeForCausalLM": "bailing_moe",
    "Param2MoEForCausalLM": "param2moe",
    "BailingMoeV2ForCausalLM": "bailing_moe_v2",
    "TeleChat2ForCausalLM": "telechat2",
    # the InternVL chat class (its published and tiny cases: remote_code_cases.py)
    "InternVLChatModel": "internvl_chat",
}

#: of :data:`DIRS`, the architectures whose tiny-config weights cases (``record_weights.py --tiny``)
#: are recorded with the files beside and ``--trust-remote-code``
WEIGHTS_TRUSTED = frozenset({"InternVLChatModel"})


def directory(architecture: str | None) -> Path | None:
    """The directory of ``architecture``'s checkpoint config Python files, or ``None`` (vLLM or
    Transformers ships its config class)."""
    name = DIRS.get(architecture) if architecture is not None else None
    return DATA / name if name is not None else None
