"""VibeVoice-ASR (``VibeVoiceAsrForConditionalGeneration``): served through vLLM's Transformers
modeling backend (``TransformersMultiModalForCausalLM``, ``transformers/multimodal.py``) over
transformers' ``VibeVoiceAsrForConditionalGeneration``, recorded on the meta device
(``tests/fidelity/data/weights/recorded-<release>-vibevoice-asr.json``,
``tests/fidelity/test_weights_vibevoice_asr.py``).

One rank holds:

* the language model (``text_config``, a ``Qwen2Config``: its defaults where the file leaves a field
  out): Qwen2's decoder (biased q/k/v) as the release's backend builds it (:func:`text_layout`),
  transformers' float32 ``inv_freq`` / ``original_inv_freq``, the fused ``gate_up_proj``; split over
  the pipeline stages as the text model's layers;
* on every rank and every pipeline stage, under ``--language-model-only`` and
  ``--limit-mm-per-prompt`` audio 0 too (the backend builds them with the model; recorded), whole in
  the model dtype: the acoustic and the semantic tokenizer encoders
  (``VibeVoiceAcousticTokenizerEncoderModel`` over ``acoustic_tokenizer_encoder_config`` /
  ``semantic_tokenizer_encoder_config``; an absent semantic one is 128 wide, a given one without
  ``hidden_size`` 64, as transformers' ``VibeVoiceAsrConfig`` builds them), each a
  causal-convolution stem, one downsampling convolution per ``downsampling_ratios`` entry (kernel
  ``2 r``, widths ``num_filters x 2^i``), ``depths`` ConvNeXt-1D blocks per stage (RMSNorms ``norm`` /
  ``ffn_norm``, ``gamma`` / ``ffn_gamma``, a depthwise ``mixer`` ``[C, 1, kernel_size]``, ``ffn``
  ``[e C, C]`` / ``[C, e C]`` with biases) and a ``head`` convolution to ``hidden_size``; and the
  ``multi_modal_projector`` (per path ``linear_1`` ``[H, hidden_size]``, an RMSNorm ``[H]``,
  ``linear_2`` ``[H, H]``, with biases; ``H`` the text width).

Refused by name: a quantized checkpoint, checkpoint headers (not mapped), a ``depths`` list shorter
than ``downsampling_ratios`` + 1 (transformers' IndexError), an encoder ``model_type`` other than
``vibevoice_acoustic_tokenizer_encoder``, a text ``mlp_bias``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import (
    Family,
    Layout,
    WalkArgs,
    _decoder_rank,
    merged,
    unquantized_text_config,
)
from dryboot.vllm.model_executor.models.towers import linear, tensors
from dryboot.vllm.versions import rules_for

ARCH = "VibeVoiceAsrForConditionalGeneration"

#: ``Qwen2Config``'s defaults (transformers 5.10.4-5.24.0) for the fields the walk reads
TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 151936,
    "hidden_size": 4096,
    "intermediate_size": 22016,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": False,
}
#: ``VibeVoiceAcousticTokenizerEncoderConfig``'s defaults (transformers 5.10.4-5.24.0)
ENCODER_DEFAULTS: dict[str, Any] = {
    "channels": 1,
    "hidden_size": 64,
    "kernel_size": 7,
    "num_filters": 32,
    "downsampling_ratios": [2, 2, 4, 5, 5, 8],
    "depths": [3, 3, 3, 3, 3, 3, 8],
    "ffn_expansion": 4,
}
#: the encoders' config class (``AutoModel`` builds an encoder of it; another type, another model)
_ENCODER_TYPE = "vibevoice_acoustic_tokenizer_encoder"
#: ``VibeVoiceAsrConfig``'s defaults for its two encoders where absent: the semantic one 128 wide
ENCODERS: dict[str, dict[str, Any]] = {
    "acoustic_tokenizer_encoder_config": {},
    "semantic_tokenizer_encoder_config": {"hidden_size": 128},
}


def _conv(out: int, inp: int, kernel: int, groups: int = 1) -> list[int]:
    """A 1-D convolution's weight ``[out, inp / groups, kernel]`` and bias ``[out]``."""
    return [out * (inp // groups) * kernel, out]


def _ints(e: Mapping[str, Any], key: str, name: str) -> list[int]:
    v = e.get(key)
    if not isinstance(v, Sequence) or isinstance(v, str) or any(type(x) is not int or x <= 0 for x in v):
        raise InputError("config.json", f"{name}.{key}", f"{ARCH}: a list of positive integers")
    return list(v)


def encoder(e: Mapping[str, Any], name: str) -> list[int]:
    """The elements of each parameter of one ``VibeVoiceAcousticTokenizerEncoderModel`` (whole).

    :raises InputError: ``depths`` shorter than ``downsampling_ratios`` + 1."""
    e = {**ENCODER_DEFAULTS, **e}
    k, nf, x = W._int(e, "kernel_size"), W._int(e, "num_filters"), W._int(e, "ffn_expansion")
    ratios, depths = _ints(e, "downsampling_ratios", name), _ints(e, "depths", name)
    if len(depths) < len(ratios) + 1:
        raise InputError(
            "config.json", f"{name}.depths", f"{ARCH}: fewer depths than downsampling stages + 1 (transformers fails)"
        )

    def block(c: int) -> list[int]:
        return [c, c, c, c, *linear(x * c, c), *linear(c, x * c), *_conv(c, c, k, groups=c)]

    counts = [*_conv(nf, W._int(e, "channels"), k), *block(nf) * depths[0]]
    for i, r in enumerate(ratios):
        counts += [*_conv(nf * 2 ** (i + 1), nf * 2**i, 2 * r), *block(nf * 2 ** (i + 1)) * depths[i + 1]]
    return counts + _conv(W._int(e, "hidden_size"), nf * 2 ** len(ratios), k)


def text_layout(version: str) -> Layout:
    """The release's backend layout of the Qwen2 language model (biased q/k/v): Qwen2's TP plan splits
    the projections; one ``QKVParallelLinear`` where the backend's fuser takes the text attention
    (0.27.1, 0.31+: not ``backend_text_attention_whole``), else three split ``q_proj`` / ``k_proj`` /
    ``v_proj`` (0.28.0-0.30.0); vLLM's ``Attention`` scale buffers on 0.30+."""
    rules = rules_for(version)
    return Layout(
        qkv="separate" if rules.backend_text_attention_whole else "fused",
        qkv_bias=True,
        rope="hf",
        attention_scales=rules.transformers_backend_vllm_attention,
    )


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    text = unquantized_text_config(config, args, ARCH)
    outer = {k: config[k] for k in ("torch_dtype",) if k in config}
    text = {**TEXT_DEFAULTS, **outer, **text}
    if text.get("mlp_bias"):
        raise InputError("config.json", "text_config.mlp_bias", f"{ARCH} with mlp_bias is not modelled")
    ab = W.model_dtype_bytes(text, args.dtype)
    weights = _decoder_rank(text_layout(par.vllm_version), text, par, ab)
    h = W._int(text, "hidden_size")
    counts: list[int] = []
    for name, defaults in ENCODERS.items():
        given = config.get(name)
        if given is not None and not isinstance(given, Mapping):
            raise InputError("config.json", name, f"{ARCH} needs a {name} object")
        # the config class's own defaults apply to an absent sub-config only (a given one, even
        # empty, takes the encoder config class's)
        e = dict(defaults) if given is None else dict(given)
        if e.get("model_type", _ENCODER_TYPE) != _ENCODER_TYPE:
            raise InputError(
                "config.json", f"{name}.model_type", f"{ARCH}: a tokenizer other than {_ENCODER_TYPE} is not modelled"
            )
        counts += encoder(e, name)
        counts += [*linear(h, W._int({**ENCODER_DEFAULTS, **e}, "hidden_size")), h, *linear(h, h)]
    return merged(weights, tensors("audio", counts, ab))


FAMILIES: dict[str, Family] = {ARCH: Family(_walk, ("audio",))}
