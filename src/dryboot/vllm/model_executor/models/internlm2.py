"""InternLM2 (``internlm2.py``, ``InternLM2ForCausalLM``; the checkpoint's own ``InternLM2Config``,
``--trust-remote-code``): Llama's parameters under other names (``wqkv`` one ``QKVParallelLinear``,
``wo``, ``feed_forward`` a gated MLP, ``attention_norm`` / ``ffn_norm``), every projection built
without a bias whatever the config's ``bias`` says, and the embedding ``tok_embeddings``, the final
norm and the head ``output`` built on every pipeline stage (no ``PPMissingLayer``); the head tied to
the embedding under ``tie_word_embeddings`` (``InternLM2Config``'s default false)."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

FAMILIES: dict[str, Family] = {"InternLM2ForCausalLM": decoder(Layout(every_stage=True))}
