"""FireRedASR2 (``fireredasr2.py``, ``FireRedASR2ForConditionalGeneration``, vLLM 0.27.1-0.33.0):
the Qwen2 language model of the file's top-level config (a ``Qwen2Config``), then on every TP rank
the Conformer audio encoder of ``audio_encoder_conf`` (``conformer_encoder.py``) and the adapter,
every linear replicated (``ReplicatedLinear``, ``nn.Conv*``, ``nn.LayerNorm``), in the model dtype.
No pipeline parallelism (no ``SupportsPP``). ``--language-model-only`` or ``--limit-mm-per-prompt``
audio 0 drops the encoder and adapter (``_mark_composite_model``'s audio tower).

With D = ``d_model``, k = ``kernel_size`` (33), H the text ``hidden_size``:

* ``input_preprocessor`` (``Conv2dSubsampling``, 32 channels): two ``Conv2d`` of 3x3 (``[32, 1, 3,
  3]`` and ``[32, 32, 3, 3]``, each with a bias), ``out`` ``[D, 32 x s]`` + bias, s =
  ``((idim - 1) // 2 - 1) // 2``;
* ``positional_encoding.pe`` ``[1, 2 pe_maxlen - 1, D]``: a non-persistent buffer from 0.29.0, a
  plain tensor attribute in 0.27.1-0.28.0 (on the GPU either way, with the model);
* ``n_layers_enc`` blocks: two feed-forwards (LayerNorm, ``[4D, D]`` + bias, ``[D, 4D]`` + bias),
  the relative-position attention (``w_qs`` / ``w_ks`` / ``w_vs`` / ``fc`` / ``linear_pos``
  ``[D, D]`` without bias, three LayerNorms, ``pos_bias_u`` / ``pos_bias_v`` ``[n_head, D /
  n_head]``), the convolution (LayerNorm, ``[4D, D, 1]``, depthwise ``[2D, 1, k]``, LayerNorm(2D),
  ``[D, 2D, 1]``, no biases) and a final LayerNorm;
* the adapter: ``linear1`` ``[H, D x encoder_downsample_rate]`` + bias, ``linear2`` ``[H, H]`` + bias.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors

#: ``ConformerEncoder``'s defaults
CONFORMER_DEFAULTS: dict[str, int] = {"kernel_size": 33, "pe_maxlen": 5000}
#: ``Conv2dSubsampling``'s channels
SUBSAMPLING_CHANNELS = 32


def _layer_norm(d: int) -> list[int]:
    return [d, d]


def _feed_forward(d: int) -> list[int]:
    return [*_layer_norm(d), *linear(4 * d, d), *linear(d, 4 * d)]


def conformer_block(d: int, n_head: int, kernel: int) -> list[int]:
    """One ``RelPosEmbConformerBlock``'s tensors (elements), in module order."""
    attention = [d * d] * 3 + _layer_norm(d) * 3 + [d * d, d * d, n_head * (d // n_head), n_head * (d // n_head)]
    convolution = [*_layer_norm(d), 4 * d * d, 2 * d * kernel, *_layer_norm(2 * d), d * 2 * d]
    return [*_feed_forward(d), *attention, *convolution, *_feed_forward(d), *_layer_norm(d)]


def pe_bytes(conf: Mapping[str, Any], ab: int) -> int:
    """``RelPositionalEncoding.pe``'s bytes: ``[1, 2 pe_maxlen - 1, D]`` in the model dtype."""
    c = {**CONFORMER_DEFAULTS, **conf}
    return (2 * W._int(c, "pe_maxlen") - 1) * W._int(c, "d_model") * ab


def encoder_counts(conf: Mapping[str, Any], llm_dim: int, downsample: int) -> list[int]:
    """The encoder's parameters and the adapter's (elements), replicated on every rank.
    ``conf`` is checked by the geometry's reading (``wrappers._conformer_checked``)."""
    c = {**CONFORMER_DEFAULTS, **conf}
    d, n_head, kernel = W._int(c, "d_model"), W._int(c, "n_head"), W._int(c, "kernel_size")
    sub = ((W._int(c, "idim") - 1) // 2 - 1) // 2
    ch = SUBSAMPLING_CHANNELS
    counts = [ch * 9, ch, ch * ch * 9, ch, *linear(d, ch * sub)]
    for _ in range(W._int(c, "n_layers_enc")):
        counts += conformer_block(d, n_head, kernel)
    return counts + linear(llm_dim, d * downsample) + linear(llm_dim, llm_dim)


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """The encoder and adapter of ``config`` on one rank; ``pe`` counted as a buffer (module
    docstring: a plain attribute before 0.29.0, the same bytes on the GPU)."""
    conf = config.get("audio_encoder_conf") or {}
    counts = encoder_counts(conf, W._int(text, "hidden_size"), W._int(config, "encoder_downsample_rate"))
    return tensors("audio", counts, ab, buffers=[pe_bytes(conf, ab)])


FAMILIES: dict[str, Family] = {
    "FireRedASR2ForConditionalGeneration": vision_language(
        "Qwen2ForCausalLM",
        _tower,
        ("audio",),
        pp_refused="does not implement SupportsPP",
        text_of=lambda c: c,
        tower_of=lambda c: c,
    ),
}
