"""Whisper (``WhisperForConditionalGeneration``): an encoder-decoder whose decoder keeps two caches
per layer.

Mirrors ``vllm/model_executor/models/whisper.py`` (0.27.1-0.33.0, the same layer structure in
each) fed by transformers' ``WhisperConfig``:

* decoder layer ``i`` (``WhisperDecoderLayer``) holds a self-attention cache at
  ``model.decoder.layers.i.self_attn.attn`` (``Attention``, decoder type: a
  ``FullAttentionSpec``) and a cross-attention cache at ``model.decoder.layers.i.encoder_attn.attn``
  (``CrossAttention``: a ``CrossAttentionSpec``, whose one request holds
  ``cdiv(scheduler_config.max_num_encoder_input_tokens, block)`` blocks whatever its length);
  ``decoder_layers`` layers, so ``2 x decoder_layers`` caches;
* both are multi-head (``decoder_attention_heads`` KV heads of ``d_model / heads``); the encoder's
  layers (``MMEncoderAttention``) keep no cache;
* ``WhisperConfig`` maps ``num_attention_heads`` to ``encoder_attention_heads`` (ModelConfig's
  tensor-parallel check reads the encoder's); ``WhisperAttention`` asserts that TP divides each
  stack's heads, and refuses a ``d_model`` its heads do not tile;
* the length is ``max_target_positions`` (448 by default);
* no ``SupportsPP``: pipeline parallelism is refused as vLLM refuses it;
* the profile run (:func:`forward_config`): vLLM profiles the encoder (``WhisperEncoder`` over
  its dummy audio) before the decoder; dryboot does not bound that forward, so the budget's
  activation term is refused by name unless ``--skip-mm-profiling`` skips it;
* the engine turns chunked prefill and prefix caching off for an encoder-decoder model
  (``SchedulerConfig.__post_init__``, ``ModelConfig.is_prefix_caching_supported``), whatever the
  flags say: :func:`engine_args`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError, not_positive_integer
from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry
from dryboot.vllm.distributed import NOT_SUPPORTS_PP
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.models.common import MAX_LAYERS, geometry

#: ``WhisperConfig`` class defaults (transformers), for the keys read here
_DEFAULTS: dict[str, Any] = {
    "d_model": 384,
    "encoder_layers": 4,
    "encoder_attention_heads": 6,
    "decoder_layers": 4,
    "decoder_attention_heads": 6,
    "max_source_positions": 1500,
    "max_target_positions": 448,
}


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def _tiled(f: ConfigFields, heads_key: str, d_model: int) -> int:
    """``heads_key``'s head count, checked as ``WhisperAttention.__init__`` checks it.

    :raises InputError: ``d_model`` not a multiple of the heads (vLLM's ValueError)."""
    heads = f.integer(heads_key)
    if d_model % heads:
        raise InputError(
            f.source,
            f.where(heads_key),
            f"embed_dim must be divisible by num_heads (got `embed_dim`: {d_model} and `num_heads`: {heads}). "
            "(vLLM's WhisperAttention)",
        )
    return heads


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """The decoder's caches: ``(FULL, CROSS)`` per decoder layer, in module order.

    :raises InputError: a field the config class or model class refuses."""
    d_model = f.integer("d_model")
    encoder_heads = _tiled(f, "encoder_attention_heads", d_model)
    decoder_heads = _tiled(f, "decoder_attention_heads", d_model)
    n = f.integer("decoder_layers")
    if 2 * n > MAX_LAYERS:
        raise InputError(f.source, f.where("decoder_layers"), f"{2 * n} attention layers: more than {MAX_LAYERS}")
    names = tuple(f"model.decoder.layers.{i}.{part}.attn" for i in range(n) for part in ("self_attn", "encoder_attn"))
    kinds = (LayerKind.FULL, LayerKind.CROSS) * n
    model = geometry(
        f,
        architecture,
        "whisper",
        kinds,
        heads=(decoder_heads, decoder_heads, d_model // decoder_heads),
        pp_refusal=NOT_SUPPORTS_PP,
        layer_names=names,
        decoder_layers=tuple(i for i in range(n) for _ in range(2)),
    )
    # WhisperConfig.attribute_map: num_attention_heads and hidden_size read the encoder's / d_model
    return model.evolve(num_attention_heads=encoder_heads, hidden_size=d_model)


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """``WhisperAttention.__init__``: ``assert total_num_heads % tp_size == 0`` for the encoder's
    and the decoder's attention (the encoder's heads are also ModelConfig's, checked before).

    :raises InputError: naming ``decoder_attention_heads`` and vLLM's AssertionError."""
    stacks = (("encoder_attention_heads", model.num_attention_heads), ("decoder_attention_heads", model.num_kv_heads))
    for key, heads in stacks:
        if heads and heads % tensor_parallel_size:
            raise InputError(
                model.source,
                key,
                f"{heads} heads on {tensor_parallel_size} tensor-parallel ranks: WhisperAttention asserts that TP "
                "divides them (AssertionError while vLLM builds the model)",
            )


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """Prefix caching off, as vLLM turns it off for an encoder-decoder model
    (``ModelConfig.is_prefix_caching_supported`` by default; ``SchedulerConfig.__post_init__``
    disables both it and chunked prefill whatever the flags say: "Encoder-decoder models do not
    support chunked prefill nor prefix caching; disabling both.").

    :raises InputError: ``--decode-context-parallel-size`` above 1 (how a cross-attention cache
        splits over decode-context ranks is not modelled; not recorded)."""
    if args.decode_context_parallel_size > 1:
        raise InputError(
            "--decode-context-parallel-size",
            str(args.decode_context_parallel_size),
            f"{model.source}: {model.architecture}'s cross-attention caches under decode context parallelism are "
            "not modelled",
        )
    return args if args.enable_prefix_caching is False else args.evolve(enable_prefix_caching=False)


#: ``WhisperConfig`` class defaults for the decoder's widths the profile run reads
_FORWARD_DEFAULTS: dict[str, Any] = {"d_model": 384, "decoder_ffn_dim": 1536, "decoder_attention_heads": 6}


def forward_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``forward_config`` hook (``registry.Family``): the profile run's widths are the
    decoder's (``hidden_size`` = ``d_model``, ``intermediate_size`` = ``decoder_ffn_dim``,
    ``num_attention_heads`` = ``decoder_attention_heads``), and the encoder is an audio encoder
    vLLM profiles first (``SupportsMultiModal``: ``profile_run`` runs ``embed_multimodal`` on its
    dummy audio), named as ``audio_config`` (model type ``whisper encoder``), whose forward
    dryboot does not bound: the activation term is refused by name unless
    ``--skip-mm-profiling`` skips it.

    :raises InputError: one of those widths not a positive integer (named)."""
    c = {**_FORWARD_DEFAULTS, **config}
    widths: dict[str, int] = {}
    for name, key in (
        ("hidden_size", "d_model"),
        ("intermediate_size", "decoder_ffn_dim"),
        ("num_attention_heads", "decoder_attention_heads"),
    ):
        value = c[key]
        if type(value) is not int or value <= 0:
            raise InputError("config.json", key, not_positive_integer(value))
        widths[name] = value
    # WhisperConfig's is_encoder_decoder (a default of its class): the decoder reads the encoder's outputs
    return {**config, **widths, "audio_config": {"model_type": "whisper encoder"}, "is_encoder_decoder": True}
