"""HyperCLOVA X (``hyperclovax.py``, ``HyperCLOVAXForCausalLM``): Llama's layout with, under
``use_post_norm``, two more RMSNorms per layer (``post_norm1`` / ``post_norm2``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

_PLAIN = decoder(Layout(), refused=("mlp_bias", "attention_bias"))
_POST_NORM = decoder(Layout(norms=4), refused=("mlp_bias", "attention_bias"))


def _walk(config: Mapping[str, Any], par: Any, args: Any) -> Any:
    return (_POST_NORM if config.get("use_post_norm", True) else _PLAIN).walk(config, par, args)


FAMILIES: dict[str, Family] = {"HyperCLOVAXForCausalLM": Family(_walk)}
