"""HunYuan-VL (``hunyuan_vision.py``, ``HunYuanVLForConditionalGeneration``: HunyuanOCR): the
language model of the file's own top-level fields (HunYuanVLConfig builds its text config from
them, over ``HunYuanVLTextConfig``'s defaults), built as ``HunYuanDenseV1ForCausalLM``: Qwen3's
layout under ``use_qk_norm``, Llama's without (no q/k norms; ``attention_bias`` on the QKV and
output projections alike). Then on every TP rank and pipeline stage the ``HunYuanVisionTransformer``
(``visual``), in the model dtype:

* ``embeddings``: the Conv2d ``patch_embedding`` ``[D, C, P, P]`` + bias and the learned
  ``position_embedding`` ``[(max_image_size / P)^2 + 1, D]``;
* per layer a ViT block (:func:`.towers.vit_block`: two LayerNorms with biases, ``qkv``
  ``[3 D / TP, D]`` + bias, ``o_proj`` ``[D, D / TP]`` + bias, ``dense_h_to_4h`` ``[I / TP, D]`` +
  bias, ``dense_4h_to_h`` ``[D, I / TP]`` + bias; TP must divide the heads);
* the ``perceive`` patch merger (whole): ``proj.0`` Conv2d ``[2 D, D, m, m]`` + bias, ``proj.2``
  ``[4 D, 2 D, 1, 1]`` + bias, ``mlp`` ``[out, 4 D]`` + bias, ``image_newline`` ``[4 D]``,
  ``image_begin`` / ``image_end`` / ``image_sep`` ``[out]``, the ``before_rms`` ``[D]`` and
  ``after_rms`` ``[out]`` RMSNorms (``m = spatial_merge_size``, ``out = out_hidden_size``).

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops the tower. 0.27.1 fails to
inspect this class: refused as the planner refuses it (``VersionRules.unverified_architectures``).
0.29+ serve it through the Transformers modeling backend (``TransformersMultiModalForCausalLM``,
``transformers/multimodal.py``, over transformers' ``HunYuanVLForConditionalGeneration``; switch
``hunyuan_transformers_backend``): its KV cache is the language model's (planned through the same
text model), its weights are refused by name (:data:`BACKEND_UNSIZED`). A nested
``text_config``, a MoE language model (``num_experts``), cross-layer attention (``use_cla``) and
the ``bias`` / ``mlp_bias`` keys are refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, vision_language
from dryboot.vllm.model_executor.models.towers import heads, linear, tensors, vit_block
from dryboot.vllm.versions import rules_for, unverified_reason

#: ``HunYuanVLTextConfig``'s (vLLM's) defaults for the text fields the file leaves out
TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 290943,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
}
#: ``HunYuanVLVisionConfig``'s (vLLM's) defaults
VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_attention_heads": 16,
    "num_channels": 3,
    "num_hidden_layers": 27,
    "out_hidden_size": 4096,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "max_image_size": 2048,
}
_REFUSED = {
    "text_config": "a nested text_config (vLLM reads its keys through the wrapper) is not verified",
    "use_cla": "cross-layer attention (use_cla) is not modelled",
    "bias": "the bias key is not modelled",
    "mlp_bias": "mlp_bias is not modelled",
}


def _tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    v = {**VISION_DEFAULTS, **v}
    d, inter, p = (W._int(v, k) for k in ("hidden_size", "intermediate_size", "patch_size"))
    heads(v, tp, "num_attention_heads")
    m, out = W._int(v, "spatial_merge_size"), W._int(v, "out_hidden_size")
    positions = (W._int(v, "max_image_size") // p) ** 2 + 1
    counts = [*linear(d, W._int(v, "num_channels") * p * p), positions * d]
    counts += vit_block(d, inter, tp, whose="the vision tower's") * W._int(v, "num_hidden_layers")
    counts += [*linear(2 * d, d * m * m), *linear(4 * d, 2 * d), *linear(out, 4 * d), 4 * d, out, out, out, d, out]
    return tensors("vision", counts, ab)


#: why the weights of HunYuan-VL are refused on the releases that serve it through the
#: Transformers modeling backend (0.29+)
BACKEND_UNSIZED = (
    "weights of HunYuanVLForConditionalGeneration are not modelled on vLLM {version}: its registry serves it "
    "through the Transformers modeling backend (TransformersMultiModalForCausalLM, transformers/multimodal.py), "
    "whose modules over transformers' HunYuanVL model (query/key RMSNorms on every layer, the vision tower as "
    "the backend builds it) are not sized"
)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    rules = rules_for(par.vllm_version)
    if "HunYuanVLForConditionalGeneration" in rules.unverified_architectures:
        why = unverified_reason(rules.version, "HunYuanVLForConditionalGeneration")
        raise InputError("--vllm-version", rules.version, f"HunYuanVLForConditionalGeneration: {why}")
    if rules.hunyuan_transformers_backend:
        raise InputError("config.json", "architectures", BACKEND_UNSIZED.format(version=rules.version))
    for key, why in _REFUSED.items():
        if config.get(key):
            raise InputError("config.json", key, f"HunYuanVLForConditionalGeneration: {why}")
    experts = config.get("num_experts")
    if (isinstance(experts, int) and experts > 1) or (isinstance(experts, list) and experts):
        raise InputError("config.json", "num_experts", "HunYuan-VL with a MoE language model is not modelled")
    config = {**TEXT_DEFAULTS, **config}
    text_arch = "HunYuanDenseV1ForCausalLM" if config.get("use_qk_norm") else "LlamaForCausalLM"
    return vision_language(text_arch, _tower, modalities=("image",)).walk(config, par, args)


FAMILIES: dict[str, Family] = {"HunYuanVLForConditionalGeneration": Family(_walk, ("image",))}
