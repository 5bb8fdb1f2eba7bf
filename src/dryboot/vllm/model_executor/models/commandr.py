"""Command-R (``commandr.py``, ``CohereForCausalLM``, also serving ``Cohere2ForCausalLM``): one
LayerNorm (weight only) per layer, the attention and the gated MLP in parallel on its output,
the head tied to the embedding (``CohereConfig``'s default); the sliding-window layers of
Cohere-2 change no weight and share the one rotary table. Its per-head q/k norms
(``use_qk_norm``) are refused by name."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

_COHERE = decoder(Layout(norms=1, tied=True, every_stage=True), refused=("use_qk_norm",))

FAMILIES: dict[str, Family] = {"CohereForCausalLM": _COHERE, "Cohere2ForCausalLM": _COHERE}
