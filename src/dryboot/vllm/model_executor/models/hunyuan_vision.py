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
A nested ``text_config``, a MoE language model (``num_experts``), cross-layer attention (``use_cla``)
and the ``bias`` / ``mlp_bias`` keys are refused by name.

0.29+ serve it through the Transformers modeling backend (switch ``hunyuan_transformers_backend``:
``TransformersMultiModalForCausalLM``, ``transformers/multimodal.py``, over transformers'
``HunYuanVLForConditionalGeneration``, whose only TP plan is the LM head's, so what is split comes
from the backend's graph fusers; every other ``nn.Linear`` becomes a ``ReplicatedLinear``), sized by
:func:`_backend_text` / :func:`_backend_tower`, recorded on the meta device on 0.29.0-0.33.0
(``tests/fidelity/data/weights/recorded-0.29.0-hunyuan-vl.json``, ``recorded-<release>-wrappers.json``;
``tests/fidelity/test_weights_hunyuan_vl.py``):

* the language model: transformers' ``HunYuanVLTextConfig`` (its defaults; the head size from
  ``head_dim`` or its alias ``attention_head_dim``, required: transformers' attention fails
  without it) with the head always tied to the ``VocabParallelEmbedding`` (``[vocab padded / TP,
  H]``; the config class ties the text config whatever the file says, recorded), the embedding
  on the first and the last pipeline stage; per layer the two RMSNorms, ``query_layernorm`` /
  ``key_layernorm`` ``[head_dim]`` (always built), the fused ``gate_up_proj`` ``[2 I / TP, H]`` and
  ``down_proj`` ``[H, I / TP]``, and the attention: on 0.29 / 0.30 ``q_proj`` / ``k_proj`` /
  ``v_proj`` / ``o_proj`` whole on every rank (the QKV fuser matches the vision attention, not
  this one), on 0.31+ one ``QKVParallelLinear`` and a row-split ``o_proj`` (switch
  ``hunyuan_vl_whole_tower``); vLLM's ``Attention`` scale buffers on 0.30+ (switch
  ``transformers_backend_vllm_attention``); transformers' float32 ``inv_freq`` /
  ``original_inv_freq`` ``[head_dim / 2]`` on every stage;
* the vision tower (``HunYuanVLVisionTransformer``, on the stages ``towers_on_stage`` gives), whole
  on every rank but for its q/k/v on 0.29 / 0.30: one ``QKVParallelLinear`` of the vision heads
  (``[3 D / TP, D]`` + bias; TP must divide ``vision_config.num_attention_heads``), three whole
  ``q_proj`` / ``k_proj`` / ``v_proj`` ``[D, D]`` + bias on 0.31+; the merger's ``mlp`` and
  ``image_begin`` / ``image_end`` / ``image_sep`` / ``after_rms`` are the text model's width
  (``text_hidden_size``, set from the text config), not ``out_hidden_size``.

Refused by name on those releases too: ``attention_bias``, a ``partial_rotary_factor`` (neither
recorded).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, WalkArgs, _decoder_rank, vision_language
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


def _backend_text(config: Mapping[str, Any]) -> dict[str, Any]:
    """The text fields as transformers' ``HunYuanVLTextConfig`` reads them for the Transformers
    backend: its defaults, ``head_dim`` (or ``attention_head_dim``) required, the head tied.

    :raises InputError: no head size, ``attention_bias``, a ``partial_rotary_factor`` (named)."""
    hd = config.get("head_dim") or config.get("attention_head_dim")
    if type(hd) is not int:
        raise InputError(
            "config.json",
            "head_dim",
            "HunYuanVLForConditionalGeneration through the Transformers backend: transformers' attention reads the "
            "head size from head_dim (or attention_head_dim) alone and fails without it "
            "(TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and 'float')",
        )
    for key in ("attention_bias", "partial_rotary_factor"):
        if config.get(key) not in (None, False) and not (key == "partial_rotary_factor" and config[key] == 1):
            raise InputError("config.json", key, f"HunYuanVLForConditionalGeneration with {key} is not modelled")
    return {**TEXT_DEFAULTS, **config, "head_dim": hd, "tie_word_embeddings": True}


def _backend_language_model(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """transformers' HunYuan-VL text model as the release's Transformers backend builds it on the
    rank (see the module docstring): ``compose``'s decoder layout with per-head q/k norms,
    transformers' rotary buffers and the release's attention."""
    rules = rules_for(par.vllm_version)
    fused = rules.hunyuan_vl_whole_tower
    layout = Layout(
        qkv="fused" if fused else "separate",
        attention_replicated=not fused,
        qk_norm="head",
        rope="hf",
        attention_scales=rules.transformers_backend_vllm_attention,
        tied=True,
    )
    return _decoder_rank(layout, config, par, W.model_dtype_bytes(config, args.dtype))


def _backend_tower(split_qkv: bool) -> Callable[[Mapping[str, Any], Mapping[str, Any], int, int], W.RankWeights]:
    """transformers' ``HunYuanVLVisionTransformer`` as the backend builds it: whole per rank, but
    for the q/k/v fused into one ``QKVParallelLinear`` of the vision heads when ``split_qkv``."""

    def tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
        v = {**VISION_DEFAULTS, **v}
        d, inter, p = (W._int(v, k) for k in ("hidden_size", "intermediate_size", "patch_size"))
        nh, m, th = W._int(v, "num_attention_heads"), W._int(v, "spatial_merge_size"), W._int(text, "hidden_size")
        rows = nh * (d // nh)
        positions = (W._int(v, "max_image_size") // p) ** 2 + 1
        counts = [*linear(d, W._int(v, "num_channels") * p * p), positions * d]
        if split_qkv:
            heads(v, tp, "num_attention_heads")
            attention = linear(3 * (nh // tp) * (d // nh), d)
        else:
            attention = 3 * linear(rows, d)
        block = [d, d, *attention, *linear(d, rows), d, d, *linear(inter, d), *linear(d, inter)]
        counts += block * W._int(v, "num_hidden_layers")
        counts += [*linear(2 * d, d * m * m), *linear(4 * d, 2 * d), *linear(th, 4 * d), 4 * d, th, th, th, d, th]
        return tensors("vision", counts, ab)

    return tower


#: the Transformers backend's HunYuan-VL: the vision q/k/v split over TP (0.29 / 0.30) or whole (0.31+)
_BACKEND = {
    split: vision_language(Family(_backend_language_model), _backend_tower(split), ("image",), _backend_text)
    for split in (True, False)
}


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    rules = rules_for(par.vllm_version)
    if "HunYuanVLForConditionalGeneration" in rules.unverified_architectures:
        why = unverified_reason(rules.version, "HunYuanVLForConditionalGeneration")
        raise InputError("--vllm-version", rules.version, f"HunYuanVLForConditionalGeneration: {why}")
    for key, why in _REFUSED.items():
        if config.get(key):
            raise InputError("config.json", key, f"HunYuanVLForConditionalGeneration: {why}")
    experts = config.get("num_experts")
    if (isinstance(experts, int) and experts > 1) or (isinstance(experts, list) and experts):
        raise InputError("config.json", "num_experts", "HunYuan-VL with a MoE language model is not modelled")
    if rules.hunyuan_transformers_backend:
        return _BACKEND[not rules.hunyuan_vl_whole_tower].walk(config, par, args)
    config = {**TEXT_DEFAULTS, **config}
    text_arch = "HunYuanDenseV1ForCausalLM" if config.get("use_qk_norm") else "LlamaForCausalLM"
    return vision_language(text_arch, _tower, modalities=("image",)).walk(config, par, args)


FAMILIES: dict[str, Family] = {"HunYuanVLForConditionalGeneration": Family(_walk, ("image",))}
