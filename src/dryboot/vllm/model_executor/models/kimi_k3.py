"""Kimi-K3 (``KimiK3ForConditionalGeneration``, vLLM 0.27.1-0.33.0: ``vllm/models/kimi_k3/nvidia/model.py``):
its language model is ``KimiLinearForCausalLM`` with Kimi-K3's options (:mod:`.kimi_linear`: q-LoRA
MLA with the output gate, the full-rank KDA gate, attention residuals, latent MoE), sized on every
stage, and Kimi-K2.5's MoonViT-3D tower (``kimi_k25_vit.py`` ``MoonViT3dPretrainedModel``) with its
``mm_projector`` (``KimiK25MultiModalProjector``) over ``KimiK3VisionConfig``, in the model dtype:

* the patch embedding ``Conv2d`` ``[D, 3, P, P]`` (+ bias under ``patch_embed_proj_bias``), the
  learned positions ``[init_pos_emb_height, init_pos_emb_width, D]`` and the temporal table buffer
  ``[init_pos_emb_time, 1, D]`` (built in float32 and cast with the tower: vLLM moves the tower
  with ``.to(device, dtype)`` on a GPU; 0.30+ skip that on the meta device, ``is_meta_module``, so
  the oracle's records are taken with the GPU's branch, ``RECORD_WEIGHTS_GPU_CAST``);
* per block (``MoonViTEncoderLayer``): ``norm0`` / ``norm1`` (``norm_type`` ``rmsnorm``: ``[D]``;
  ``layernorm``: weight and bias), ``wqkv`` ``[3 Q / TP, D]``, ``wo`` ``[D, Q / TP]`` (biases
  under ``attn_bias``: ``[3 Q / TP]``, ``[D]``), ``mlp.fc0`` ``[I / TP, D]``, ``mlp.fc1`` ``[D, I /
  TP]`` (biases under ``linear_bias``), ``Q`` = ``qkv_hidden_size``; where TP does not divide the
  heads every block is whole (``is_vit_use_data_parallel``); the final norm;
* the projector, replicated (``M = D x kh x kw``): ``patchmergerv2`` ``linear_1`` ``[M, M]``,
  ``linear_2`` ``[H_text, M]``, ``post_norm`` ``[H_text]``; any other type Kimi-K2.5's
  ``pre_norm`` LayerNorm ``[D]`` and both linears with biases, ``linear_2`` ending at ``H_text`` on
  0.32+ (``out_hidden_size``) and at ``mm_hidden_size`` (the tower's width unless given) before;
* on 0.32+ the device-side input normalization (``build_mm_input_norm``) where the checkpoint's
  processor config normalizes (:class:`~W.WalkArgs` ``image_norm_channels``): weight and bias
  ``[channels]``, cast with the tower (the figure assumes ``--mm-device-do-normalize``'s default).

The published checkpoint's compressed-tensors ``mxfp4-pack-quantized`` experts: vLLM's config hook
rewrites them to ``quant_method`` ``mxfp4`` (:mod:`.kimi_linear`: the routed experts after the
post-load step of the MoE backend vLLM picks per GPU); the wrapper then keeps ``Mxfp4Config`` for
the tower (``_maybe_ignore_quant_config`` drops compressed-tensors' only), which it moves to the GPU
without the dtype cast: the temporal table stays float32 (``[init_pos_emb_time, 1, D]``, 4 bytes).

``--language-model-only`` (or ``--limit-mm-per-prompt`` ``{"image": 0}``) drops tower and
projector; on 0.33 pipeline stages after the first build none. ``--mm-encoder-tp-mode data`` builds
the tower's blocks whole on every TP rank (``compose.vision_language``). Refused by name: the
what vLLM refuses (``pos_emb_type``, ``video_attn_type``, ``norm_type``,
``mlp_type``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import (
    Family,
    WalkArgs,
    text_config,
    towers_on_stage,
    vision_language,
)
from dryboot.vllm.model_executor.models.kimi_linear import FAMILIES as LINEAR
from dryboot.vllm.model_executor.models.towers import linear, tensors

ARCH = "KimiK3ForConditionalGeneration"
#: ``KimiK3VisionConfig``'s defaults of the keys the tower reads
DEFAULTS: dict[str, Any] = {
    "patch_size": 14,
    "init_pos_emb_height": 64,
    "init_pos_emb_width": 64,
    "init_pos_emb_time": 4,
    "pos_emb_type": "divided_fixed",
    "vt_num_attention_heads": 12,
    "vt_num_hidden_layers": 27,
    "vt_hidden_size": 1024,
    "vt_intermediate_size": 4096,
    "merge_kernel_size": [2, 2],
    "video_attn_type": "spatial_temporal",
    "mm_projector_type": "patchmergerv2",
    "qkv_hidden_size": 1536,
    "norm_type": "rmsnorm",
    "attn_bias": False,
    "patch_embed_proj_bias": False,
    "mlp_type": "mlp2",
    "linear_bias": False,
}
#: the releases whose wrapper builds the tower's device-side input normalization
INPUT_NORM_RELEASES = ("0.32.0", "0.33.0")
#: the releases whose projector ends at the text width whatever its type (``out_hidden_size``);
#: before them only ``patchmergerv2`` does (``text_hidden_size``, which ``KimiK3Config`` sets to it)
OUT_HIDDEN_RELEASES = ("0.32.0", "0.33.0")


def _refusals(v: Mapping[str, Any]) -> None:
    for key, only in (("pos_emb_type", "divided_fixed"), ("video_attn_type", "spatial_temporal"), ("mlp_type", "mlp2")):
        if v[key] != only:
            raise InputError("config.json", f"vision_config.{key}", f"{v[key]!r}: vLLM's MoonViT builds {only!r} only")
    if v["norm_type"] not in ("layernorm", "rmsnorm"):
        raise InputError(
            "config.json", "vision_config.norm_type", f"{v['norm_type']!r}: NotImplementedError (vLLM's MoonViT)"
        )


def moonvit3d(
    v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int, version: str = "0.33.0"
) -> W.RankWeights:
    """The tower and projector on one rank of release ``version`` (module docstring), without the
    input normalization.

    :raises InputError: what vLLM refuses (named); sizes TP does not divide."""
    c = {**DEFAULTS, **v}
    _refusals(c)
    d, inter, q = W._int(c, "vt_hidden_size"), W._int(c, "vt_intermediate_size"), W._int(c, "qkv_hidden_size")
    heads, p = W._int(c, "vt_num_attention_heads"), W._int(c, "patch_size")
    t = 1 if heads % tp else tp  # the blocks whole where TP does not divide the heads
    qr, ir = W._divide(q, t, "the tower's qkv_hidden_size"), W._divide(inter, t, "vt_intermediate_size")
    norm = [d, d] if c["norm_type"] == "layernorm" else [d]
    attn_bias, lin_bias = bool(c["attn_bias"]), bool(c["linear_bias"])
    block = [*norm, *norm, *linear(3 * qr, d, attn_bias), d * qr, *([d] if attn_bias else [])]
    block += [*linear(ir, d, lin_bias), d * ir, *([d] if lin_bias else [])]
    counts = [*linear(d, 3 * p * p, bool(c["patch_embed_proj_bias"]))]
    counts += [W._int(c, "init_pos_emb_height") * W._int(c, "init_pos_emb_width") * d]
    counts += block * W._int(c, "vt_num_hidden_layers") + norm
    kh, kw = (int(x) for x in c["merge_kernel_size"])
    m, out = d * kh * kw, W._int(text, "hidden_size")
    if c["mm_projector_type"] != "patchmergerv2" and version not in OUT_HIDDEN_RELEASES:
        # before 0.32 Kimi-K2.5's projector ends at mm_hidden_size (the tower's width unless given)
        out = W._int({"mm_hidden_size": d, **{k: x for k, x in v.items() if x is not None}}, "mm_hidden_size")
    if c["mm_projector_type"] == "patchmergerv2":
        counts += [m * m, out * m, out]
    else:
        counts += [d, d, *linear(m, m), *linear(out, m)]
    # the temporal table is built in float32; the wrapper casts the tower to the model dtype
    # unless the model has a quantization config it keeps for the tower (``_maybe_ignore_quant_config``:
    # all but compressed-tensors', i.e. the MXFP4 one vLLM's config hook rewrites to): then it is
    # moved to the GPU as built
    kept = W.mxfp4_rewritten({"architectures": [ARCH]}, text.get("quantization_config"))
    return tensors("vision", counts, ab, buffers=[W._int(c, "init_pos_emb_time") * d * (4 if kept else ab)])


def _composed(version: str) -> Family:
    def tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
        return moonvit3d(v, text, tp, ab, version)

    return vision_language(LINEAR["KimiLinearForCausalLM"], tower, ("image",), text_of=text_config)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage: the language model, and the tower where this stage builds it
    (module docstring).

    :raises InputError: as the language model's walk; what vLLM refuses of the tower."""
    tower = not args.no_tower and towers_on_stage(str(config["architectures"][0]), par)
    w = _composed(par.vllm_version).walk(config, par, args)
    if tower and par.vllm_version in INPUT_NORM_RELEASES and args.image_norm_channels:
        ab = W.model_dtype_bytes({**config, **(config.get("text_config") or {})}, args.dtype)
        for _ in range(2):
            w.add("input norm", args.image_norm_channels * ab, buffer=True)
        w.notes.append(
            "Kimi-K3's tower: the device-side image normalization assumes --mm-device-do-normalize's default (on)"
        )
    return w


FAMILIES: dict[str, Family] = {"KimiK3ForConditionalGeneration": Family(walk, ("image",))}
