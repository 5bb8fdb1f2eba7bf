"""ERNIE 4.5 dense (``ernie45.py``, ``Ernie4_5ForCausalLM``): Llama's layout, the head tied to
the embedding unless the config unties it (``Ernie4_5Config``'s default); ``use_bias`` (biases on
every linear layer) is refused by name."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

FAMILIES: dict[str, Family] = {
    "Ernie4_5ForCausalLM": decoder(Layout(tied=True), refused=("use_bias",)),
}
