"""FunASR (``funasr.py``, ``FunASRForConditionalGeneration``): the Qwen3 language model of the
config itself (``Qwen3Model`` and a ``ParallelLMHead``, tied by ``tie_word_embeddings``), then on
every TP rank the audio encoder and adaptor, built outside ``_mark_tower_model`` (kept under
``--language-model-only`` and audio limits), in the model dtype. No pipeline parallelism (vLLM
refuses it: no ``SupportsPP``).

* ``SenseVoiceEncoderSmall`` over ``audio_encoder_conf`` (its defaults: ``output_size`` D 256,
  ``linear_units`` L 2048, ``num_blocks`` 6, ``tp_blocks`` 0, ``kernel_size`` 11), input width
  560: ``encoders0`` (one SANM layer over 560), ``encoders`` (``num_blocks - 1`` over D),
  ``tp_encoders`` (``tp_blocks`` over D); each layer ``linear_q_k_v`` ``[3 D, in]`` + bias and
  ``out_proj`` ``[D, D]`` + bias (replicated), ``fsmn_block`` ``[D, 1, kernel_size]``, the
  feed-forward ``w_1`` ``[L / TP, D]`` + bias and ``w_2`` ``[D, L / TP]`` + bias, LayerNorms over
  ``in`` and D (weight, bias); ``after_norm`` and ``tp_norm``.
* The adaptor (``Transformer``, its sizes fixed in ``FunASREncoder``: encoder width 512, FFN 2048,
  LLM width 1024, two layers of 8 heads): ``linear1`` ``[2048 / TP, 512]`` + bias, ``linear2``
  ``[1024, 2048 / TP]`` + bias; per layer ``qkv`` ``[3 x 1024 / TP, 1024]`` + bias, ``out_proj``
  ``[1024, 1024 / TP]`` + bias, ``w_1`` ``[256 / TP, 1024]`` + bias, ``w_2`` ``[1024, 256 / TP]`` +
  bias, two LayerNorms.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, _text, config_only, merged
from dryboot.vllm.model_executor.models.towers import linear, tensors

#: ``SenseVoiceEncoderSmall``'s defaults of the sizes
ENCODER_DEFAULTS: dict[str, Any] = {"output_size": 256, "linear_units": 2048, "num_blocks": 6, "tp_blocks": 0}
KERNEL_DEFAULT = 11
#: the adaptor's sizes, fixed by ``FunASREncoder`` whatever the config: encoder width, FFN, LLM
#: width, layers, heads
ADAPTOR = {"encoder": 512, "ffn": 2048, "llm": 1024, "layers": 2, "heads": 8}


def _sanm_layer(d_in: int, d: int, units: int, kernel: int, tp: int) -> list[int]:
    u_r = W._divide(units, tp, "audio_encoder_conf.linear_units")
    return [
        *linear(d, d),
        *linear(3 * d, d_in),
        d * kernel,
        *linear(u_r, d),
        *linear(d, u_r),
        d_in,
        d_in,
        d,
        d,
    ]


def encoder_counts(conf: Mapping[str, Any], tp: int) -> list[int]:
    """The encoder's and adaptor's tensors (elements) on one rank (module docstring).

    :raises InputError: widths or heads TP does not divide (vLLM's parallel linears refuse them)."""
    c = {**ENCODER_DEFAULTS, **{k: v for k, v in conf.items() if v is not None}}
    d, units = W._int(c, "output_size"), W._int(c, "linear_units")
    kernel = W._int({"kernel_size": KERNEL_DEFAULT, **c}, "kernel_size")
    counts = _sanm_layer(560, d, units, kernel, tp)
    for _ in range(W._int(c, "num_blocks") - 1 + W._int(c, "tp_blocks")):
        counts += _sanm_layer(d, d, units, kernel, tp)
    counts += [d, d, d, d]
    enc, ffn, llm = ADAPTOR["encoder"], ADAPTOR["ffn"], ADAPTOR["llm"]
    ffn_r = W._divide(ffn, tp, "the FunASR adaptor's FFN width (2048)")
    llm_r = W._divide(llm, tp, "the FunASR adaptor's width (1024)")
    W._divide(ADAPTOR["heads"], tp, "the FunASR adaptor's attention heads (8)")
    quarter_r = W._divide(llm // 4, tp, "the FunASR adaptor's feed-forward width (256)")
    counts += linear(ffn_r, enc) + linear(llm, ffn_r)
    for _ in range(ADAPTOR["layers"]):
        counts += linear(3 * llm_r, llm) + linear(llm, llm_r)
        counts += linear(quarter_r, llm) + linear(llm, quarter_r)
        counts += [llm, llm, llm, llm]
    return counts


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """The Qwen3 language model, then the encoder and adaptor on every rank.

    :raises InputError: pipeline parallelism (vLLM refuses it), a quantized checkpoint, checkpoint
        headers, a ``model_type`` other than ``qwen3`` (another language model), what
        :func:`encoder_counts` refuses."""
    config_only(config, args)
    if par.pp > 1:
        raise InputError(
            "--pipeline-parallel-size", None, "FunASRForConditionalGeneration does not implement SupportsPP"
        )
    if W.quant_from_config(config, args.hf_quant).method is not None:
        raise InputError("quantization_config", "quant_method", "quantized FunASR layouts are not modelled")
    if config.get("model_type", "qwen3") != "qwen3":
        raise InputError("config.json", "model_type", f"a {config.get('model_type')} language model is not modelled")
    text = _text(config, "Qwen3ForCausalLM", par, args)
    ab = W.model_dtype_bytes(config, args.dtype)
    return merged(text, tensors("audio", encoder_counts(config.get("audio_encoder_conf") or {}, par.tp), ab))


FAMILIES: dict[str, Family] = {"FunASRForConditionalGeneration": Family(_walk, ("audio",))}
