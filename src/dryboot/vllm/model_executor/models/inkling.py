"""Inkling's weights (``InklingForCausalLM``, vLLM 0.33.0's ``vllm/models/inkling/nvidia/model.py``,
config class ``InklingModelConfig``, ``vllm/models/inkling/configs.py``).

Every pipeline stage holds the whole model's ends (the class has no ``PPMissingLayer``): the
replicated full-vocabulary embedding (``InklingReplicatedEmbedding`` ``[padded_vocab_size, H]``
on every TP rank), ``embed_norm`` ``[H]`` (``use_embed_norm``), the final norm and the LM head
(``ParallelLMHead`` over ``padded_vocab_size``: padded to 64, split over TP). Per layer, with the
``swa_*`` heads and head size on the layers of ``local_layer_ids``:

* ``attn_norm`` and ``mlp_norm`` ``[H]``;
* the attention (``attention.py`` ``InklingAttention``): ``qkvr`` ``[(d nh + 2 d max(nkv, TP) +
  d_rel nh) / TP, H]`` (q, k, v and the relative branch; bias under ``q_bias``), ``wo_ud``
  ``[H, d nh / TP]`` (``o_bias`` refused, as vLLM refuses it), ``rel_logits_proj.proj`` ``[d_rel, extent]``
  (``sliding_window_size`` on a local layer, else ``rel_extent``), ``q_norm`` / ``k_norm``
  ``[d]``, the K and V short convolutions ``[max(1, nkv / TP) d, 1, K]``, and two float32 scalar
  buffers (``k_scale``, ``v_scale``: no ``Attention`` scale set);
* the residual short convolutions ``attn_sconv`` / ``mlp_sconv`` ``[H / TP, 1, K]``;
* before ``dense_mlp_idx`` a dense MLP (``gate_up_proj`` ``[2 I_dense / TP, H]``, ``down_proj``,
  a ``global_scale`` ``[1]`` under ``use_global_scale``), else the MoE block (``moe.py``): the
  gate ``[E + S padded to 8, H]`` (float32 ``global_scale`` ``[1]`` and ``bias`` ``[E]`` where
  configured), ``FusedMoE`` over the routed experts (their count padded to the EP size; under
  expert parallelism the int32 expert map), and the sink experts replicated over EP and split
  over TP: ``w13_weight`` ``[S, 2 I / TP, H]``, ``w2_weight`` ``[H, S I / TP]``.

All in the model dtype but the float32 scalars named. Sized as vLLM 0.33.0 builds the model:
``initialize_lamport_rs_conv``'s symmetric buffers at TP 2 / 4 / 8 (``ops/lamport.py``:
``torch.distributed._symmetric_memory``, not the model's tensors) are outside the figure, as the
oracle's; ``--enable-lora`` (``InklingSinkExpertsLinear``), quantized checkpoints and checkpoint
headers are refused by name, as are other releases.

The multimodal wrapper (``InklingForConditionalGeneration``, config class ``InklingMMConfig``) is
this language model over ``text_config`` (the wrapper's dtype) plus its towers
(``vllm/models/inkling/common/towers.py``), each built when its config sets ``decoder_dmodel``
(``inkling_vision_enabled`` / ``inkling_audio_enabled``; an enabled tower missing a field is
refused with vLLM's words), replicated on every TP rank and built on every pipeline stage, in
the model dtype. The class marks no tower (no ``_mark_tower_model``), so ``--language-model-only``
and ``--limit-mm-per-prompt`` keep them:

* the vision tower (``InklingVision`` / ``HMLPPatchEncoder``, ``vision_encoder_type`` ``hmlp``
  only, as vLLM asserts): per step of :func:`hmlp_scales` a bias-free ``nn.Linear``
  ``[out, c_in x fold]`` (``fold`` the step's t x h x w growth; ``out`` the next scale's channels,
  or ``decoder_dmodel`` on the last) and, but on the last, an RMSNorm ``[out]``; a final RMSNorm
  ``[decoder_dmodel]`` under ``use_vision_norm``;
* the audio tower (``InklingAudio``, ``audio_mode`` ``dmel``): the ``nn.Embedding``
  ``[n_mel_bins x mel_vocab_size, decoder_dmodel]`` and an RMSNorm ``[decoder_dmodel]`` under
  ``use_audio_norm``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import combinations, pairwise
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, merged, unquantized

#: ``InklingModelConfig``'s defaults of the keys the walk reads
DEFAULTS: dict[str, Any] = {
    "vocab_size": 201024,
    "hidden_size": 1536,
    "intermediate_size": 768,
    "num_hidden_layers": 16,
    "num_attention_heads": 12,
    "num_key_value_heads": 4,
    "d_rel": 16,
    "rel_extent": 1024,
    "sliding_window_size": 512,
    "dense_mlp_idx": 0,
    "n_routed_experts": 0,
    "n_shared_experts": 0,
}
RELEASE = "0.33.0"


def read_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``InklingModelConfig``'s reading: ``head_dim`` ``H / heads``; the ``swa_*`` keys their
    full-attention twins; ``moe_intermediate_size`` (the HF name) moving ``intermediate_size`` to
    the dense width; the dense width ``intermediate_size`` unless given; the kernel
    ``sconv_kernel_size``, else ``conv_kernel_size``, else 4; ``padded_vocab_size`` the vocabulary
    unless given."""
    c = {**DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
    c.setdefault("head_dim", W._int(c, "hidden_size") // max(1, W._int(c, "num_attention_heads")))
    for key in ("num_attention_heads", "num_key_value_heads", "head_dim"):
        c.setdefault(f"swa_{key}", c[key])
    if config.get("moe_intermediate_size") is not None and config.get("dense_intermediate_size") is None:
        c["dense_intermediate_size"] = c["intermediate_size"]
        c["intermediate_size"] = config["moe_intermediate_size"]
    c.setdefault("dense_intermediate_size", c["intermediate_size"])
    kernel = config.get("sconv_kernel_size", config.get("conv_kernel_size"))
    c["sconv_kernel_size"] = 4 if kernel is None else kernel
    c.setdefault("padded_vocab_size", c["vocab_size"])
    return c


def _attention(w: W._Walk, c: Mapping[str, Any], local: bool, tp: int, ab: int) -> None:
    pre = "swa_" if local else ""
    nh, nkv, d = (W._int(c, pre + k) for k in ("num_attention_heads", "num_key_value_heads", "head_dim"))
    h, d_rel, k = W._int(c, "hidden_size"), W._int(c, "d_rel"), W._int(c, "sconv_kernel_size")
    if c.get("o_bias"):
        raise InputError(
            "config.json",
            "o_bias",
            "ValueError: When not reduce the results, adding bias to the results can lead to incorrect results "
            "(vLLM's wo_ud is a RowParallelLinear without its all-reduce)",
        )
    if nkv < tp:
        raise InputError(
            "--tensor-parallel-size",
            None,
            f"{nkv} KV heads at tensor parallel size {tp}: AssertionError: sconv SWA cache supports tp_size <= "
            f"num_kv_heads ({nkv}), got {tp}",
        )
    q_r = W._divide(d * nh, tp, "the query heads")
    kv_r = W._divide(d * nkv, tp, "the KV heads")
    rel_r = W._divide(d_rel * nh, tp, "the relative branch")
    rows = q_r + 2 * kv_r + rel_r
    extent = W._int(c, "sliding_window_size" if local else "rel_extent")
    sizes = [rows * h, h * q_r, d_rel * extent, d, d, kv_r * k, kv_r * k]
    sizes += [rows] if c.get("q_bias") else []
    for size in sizes:
        w.own("attention", size * ab)
    w.own("attention scales", 4, buffer=True)  # k_scale
    w.own("attention scales", 4, buffer=True)  # v_scale


def _moe(w: W._Walk, c: Mapping[str, Any], par: W.Parallel, ab: int) -> None:
    h, i = W._int(c, "hidden_size"), W._int(c, "intermediate_size")
    e, s = W._int(c, "n_routed_experts"), W._int(c, "n_shared_experts")
    if s == 0 or not c.get("shared_expert_sink"):
        raise InputError("config.json", "shared_expert_sink", "vLLM's InklingMoE asserts sink shared experts")
    w.own("router", (e + s + (-(e + s)) % 8) * h * ab)
    if c.get("use_global_scale"):
        w.own("router", 4)
    if c.get("use_gate_bias"):
        w.own("router", 4 * e)
    ep = par.tp * par.dp if par.expert_parallel else 1
    # the experts padded to a multiple of the EP ranks, which then split them evenly
    w.experts(e + (-e) % ep, h, i, par, ab, "intermediate_size")
    sink_r = W._divide(i, par.tp, "intermediate_size")
    w.own("shared experts", s * 2 * sink_r * h * ab)
    w.own("shared experts", h * s * sink_r * ab)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: another release, a quantization method, checkpoint headers, TP above the
        KV heads (vLLM's assertion), sizes TP does not divide, no sink experts on a MoE layer."""
    if par.vllm_version != RELEASE:
        raise InputError("--vllm", None, f"Inkling's weights are recorded on vLLM {RELEASE} only")
    raw, ab = unquantized(config, args)
    c = read_config(raw)
    tp, h = par.tp, W._int(c, "hidden_size")
    k = W._int(c, "sconv_kernel_size")
    local = {int(x) for x in c.get("local_layer_ids") or []}
    w = W._Walk(None, par.vllm_version)
    w.own("embedding", W._int(c, "padded_vocab_size") * h * ab)  # replicated, every stage
    if c.get("use_embed_norm"):
        w.own("norm", h * ab)
    w.own("norm", h * ab)
    w.own("lm_head", W.padded_vocab_per_rank(W._int(c, "padded_vocab_size"), tp) * h * ab)
    sconv = W._divide(h, tp, "hidden_size")
    for li in W.pp_layers(W._int(c, "num_hidden_layers"), par):
        w.own("norm", h * ab)
        w.own("norm", h * ab)
        _attention(w, c, li in local, tp, ab)
        w.own("short convolution", 2 * sconv * k * ab)  # attn_sconv, mlp_sconv
        if li < W._int(c, "dense_mlp_idx"):
            i_r = W._divide(W._int(c, "dense_intermediate_size"), tp, "dense_intermediate_size")
            w.own("mlp", 2 * i_r * h * ab)
            w.own("mlp", h * i_r * ab)
            if c.get("use_global_scale"):
                w.own("mlp", ab)
        else:
            _moe(w, c, par, ab)
    return w.result()


def _primes(n: int) -> list[int]:
    """``n``'s prime factors, smallest first, with repeats (12: ``[2, 2, 3]``)."""
    out, p = [], 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return [*out, n] if n > 1 else out


def hmlp_scales(patch: int, temporal: int, layers: int, channels: int) -> list[tuple[int, int, int, int]]:
    """The ``(t, h, w, c)`` scales ``HMLPPatchEncoder`` steps through (``plan_out_scales``): the
    candidates grow the patch's height and width by its prime factors (largest first), then its
    time by the temporal size's, each with ``c`` the pixels it spans x ``channels`` rounded up to
    64, after ``(1, 1, 1, channels)``; of them ``layers + 1`` are taken whose log sizes lie
    nearest to ``layers + 1`` even steps from 0 to log(patch^2 x temporal x channels) (with
    ``layers`` below the candidates, the increasing choice of least total distance, the first
    such in lexicographic order; else each step's nearest), the first and the last forced.

    :raises InputError: a patch size of 1 or less (vLLM's ``ValueError``)."""
    if patch <= 1:
        raise InputError(
            "config.json", "vision_config.patch_size", f"{patch}: ValueError: patch_size must be greater than 1"
        )
    cands, hw, t = [(1, 1, 1, channels)], 1, 1
    for f in reversed(_primes(patch)):
        hw *= f
        cands.append((1, hw, hw, -(-hw * hw * channels // 64) * 64))
    for f in reversed(_primes(temporal)):
        t *= f
        cands.append((t, hw, hw, -(-hw * hw * channels * t // 64) * 64))
    logs = [math.log(a * b * c) for a, b, c, _ in cands]
    top = math.log(patch * patch * temporal * channels)
    # numpy's linspace: start + i x step, the last exactly the stop
    ideal = [i * (top / layers) for i in range(layers)] + [top]
    cost = [[abs(x - y) for y in logs] for x in ideal]
    if layers >= len(cands):
        picks = [row.index(min(row)) for row in cost]
    else:
        best = min(
            combinations(range(len(cands)), layers + 1), key=lambda cols: sum(cost[r][c] for r, c in enumerate(cols))
        )
        picks = list(best)
    picks[0], picks[-1] = 0, len(cands) - 1
    return [cands[i] for i in picks]


def _required(cfg: Mapping[str, Any], keys: tuple[str, ...], tower: str) -> None:
    if missing := [k for k in keys if cfg.get(k) is None]:
        raise InputError(
            "config.json",
            f"{tower}_config",
            f"ValueError: Enabled Inkling {tower} tower is missing config fields: {', '.join(missing)}",
        )


def vision_tower(v: Mapping[str, Any], ab: int) -> W.RankWeights:
    """``InklingVision`` on one rank (module docstring), or nothing when ``decoder_dmodel`` is unset.

    :raises InputError: a missing field, a ``vision_encoder_type`` other than ``hmlp``, a patch
        size vLLM refuses."""
    w = W.RankWeights()
    if v.get("decoder_dmodel") is None:
        return w
    keys = ("vision_encoder_type", "patch_size", "temporal_patch_size", "n_channels", "n_layers", "use_vision_norm")
    _required(v, keys, "vision")
    if v["vision_encoder_type"] != "hmlp":
        raise InputError(
            "config.json",
            "vision_config.vision_encoder_type",
            f"{v['vision_encoder_type']!r}: AssertionError (vLLM's InklingVision builds the hmlp encoder only)",
        )
    d, n = W._int(v, "decoder_dmodel"), W._int(v, "n_layers")
    scales = hmlp_scales(W._int(v, "patch_size"), W._int(v, "temporal_patch_size"), n, W._int(v, "n_channels"))
    for i, (a, b) in enumerate(pairwise(scales)):
        fold = (b[0] // a[0]) * (b[1] // a[1]) * (b[2] // a[2])
        last = i == n - 1
        w.add("vision", (d if last else b[3]) * a[3] * fold * ab)
        if not last:
            w.add("vision", b[3] * ab)
    if v["use_vision_norm"]:
        w.add("vision", d * ab)
    return w


def audio_tower(a: Mapping[str, Any], ab: int) -> W.RankWeights:
    """``InklingAudio`` on one rank (module docstring), or nothing when ``decoder_dmodel`` is unset.

    :raises InputError: a missing field, an ``audio_mode`` other than ``dmel`` (vLLM asserts it)."""
    w = W.RankWeights()
    if a.get("decoder_dmodel") is None:
        return w
    keys = ("n_mel_bins", "mel_vocab_size", "dmel_min_value", "dmel_max_value", "use_audio_norm", "audio_mode")
    _required(a, keys, "audio")
    if a["audio_mode"] != "dmel":
        raise InputError(
            "config.json",
            "audio_config.audio_mode",
            f"{a['audio_mode']!r}: AssertionError (vLLM's InklingAudio takes dmel only)",
        )
    d = W._int(a, "decoder_dmodel")
    w.add("audio", W._int(a, "n_mel_bins") * W._int(a, "mel_vocab_size") * d * ab)
    if a["use_audio_norm"]:
        w.add("audio", d * ab)
    return w


def wrapper_walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """``InklingForConditionalGeneration`` on one rank of one stage: the towers (built first, on
    every stage and with every flag), then the language model of ``text_config`` in the
    wrapper's dtype (module docstring).

    :raises InputError: as :func:`walk`; a tower vLLM refuses (named); no ``text_config`` object."""
    text = config.get("text_config")
    if not isinstance(text, Mapping):
        raise InputError("config.json", "text_config", "InklingForConditionalGeneration needs a text_config object")
    outer = {k: config[k] for k in ("torch_dtype", "dtype", "quantization_config") if k in config}
    ab = W.model_dtype_bytes({**text, **outer}, args.dtype)
    # the towers first, as vLLM builds (and refuses) them before the language model
    towers = [vision_tower(config.get("vision_config") or {}, ab), audio_tower(config.get("audio_config") or {}, ab)]
    w = walk({**outer, **text}, par, args)
    for part in towers:
        merged(w, part)
    return w


FAMILIES: dict[str, Family] = {
    "InklingForCausalLM": Family(walk),
    "InklingForConditionalGeneration": Family(wrapper_walk),
}
