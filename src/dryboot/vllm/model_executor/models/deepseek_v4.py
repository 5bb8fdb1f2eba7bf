"""DeepSeek-V4 (``vllm/models/deepseek_v4/``, ``DeepseekV4ForCausalLM``): refused by name. Its
routed experts are FP4 (``expert_dtype``) under the family's own quantization
(``deepseek_v4/quant_config.py``), whose layout is repacked after loading (outside the meta-device
oracle), and vLLM builds it only with an fp8 KV cache (``deepseek_v4/attention.py``: "fp8_ds_mla
layout only supports fp8 kv-cache"), which the weights API does not take."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family

FAMILIES: dict[str, Family] = {}
UNSIZED: dict[str, str] = {
    "DeepseekV4ForCausalLM": "its FP4 experts (vllm/models/deepseek_v4/quant_config.py, repacked after loading) "
    "are not sized",
}
