"""DeepSeek-V4 (``vllm/models/deepseek_v4/``, ``DeepseekV4ForCausalLM``): refused by name.

What vLLM 0.33.0 holds after loading, read on the meta device (``RECORD_SET=dsv4
record_quant_weights.py``, A100, TP 1 and 2): fp8 128x128 block linear layers with e8m0 scales
(``deepseek_v4_fp8``: 26 ``Fp8LinearMethod`` layers on the tiny config), the ``expert_dtype: fp4``
experts through ``Mxfp4MoEMethod`` in the Marlin layout of gpt-oss, and besides them modules no
other family has: the hyper-connection mixers (``hc_*_fn`` / ``base`` / ``scale``, fp32), each
compressed layer's compressor (``ape`` fp32, ``fused_wkv_wgate`` in the model dtype) and, at
compress ratio 4, its indexer (with a compressor of its own), a ``topk_indices_buffer`` shared by
the model, and one fp32 rope cache per rope kind (plain and YaRN). Those are not sized yet; vLLM
also builds the model only with an fp8 KV cache (``deepseek_v4/attention.py``), which the weights
API does not take."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family

FAMILIES: dict[str, Family] = {}
UNSIZED: dict[str, str] = {
    "DeepseekV4ForCausalLM": "its hyper-connection, compressor and indexer modules and shared top-k "
    "buffer (vllm/models/deepseek_v4/) are not sized",
}
