"""The target's own MTP layers as a drafter (``--speculative-config '{"method": "mtp"}'``):
``qwen3_next_mtp.py`` / ``qwen3_5_mtp.py`` (Qwen3-Next, Qwen3.5, Qwen3.5-MoE) and
``deepseek_mtp.py`` (DeepSeek-V3 and its derivatives), built from the TARGET's config on the last
pipeline stage, per rank, in the target's dtype and quantization:

* each MTP layer is one of the target's decoder layers (Qwen: a full-attention layer with the
  target's MLP or MoE block; DeepSeek: an MoE layer, ``mtp_block``), sized by the target's own
  walk as the difference of the target cut to ``n + 1`` and ``n`` layers;
* a quantized Qwen target: vLLM builds ``mtp.layers.<i>.*`` and ``mtp.fc`` with the target's
  quantization config under those names (``fc`` unquantized for ``modelopt_fp4`` whatever the
  config says); the published NVIDIA checkpoints ignore ``mtp*`` / ``mtp.layers.0*`` and an
  AutoRound ``block_name_to_quantize`` of ``model.layers`` leaves them out, so the layers are the
  unquantized ones, plus ModelOpt's four KV-cache scale parameters on each layer's attention when
  the config declares a KV cache; a config that quantizes an MTP module is refused by name;
* Qwen: ``fc`` (ColumnParallelLinear ``[H / TP, 2 H]``), ``pre_fc_norm_hidden``,
  ``pre_fc_norm_embedding`` and the final ``norm`` ``[H]`` once; layers: ``mtp_num_hidden_layers``
  (else ``num_nextn_predict_layers``, else 1);
* DeepSeek, per layer of ``num_nextn_predict_layers``: ``enorm``, ``hnorm``, ``shared_head.norm``
  ``[H]`` and ``eh_proj`` (replicated, unquantized ``[H, 2 H]``);
* Bailing-V2.5 (``bailing_moe_mtp.py``): its own module,
  :func:`~dryboot.vllm.model_executor.models.bailing_moe_linear.mtp_weights`;
* the embedding and the LM head (``shared_head.head``) are the target's: vLLM shares them with an
  MTP drafter unconditionally (``_maybe_share_embeddings`` / ``_maybe_share_lm_head``), the
  embedding only without pipeline parallelism (refused by name there); the rotary table is the
  target's (``get_rope``'s cache returns the same one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.auto_gptq import PACKED_MODULES
from dryboot.vllm.model_executor.model_loader import weights as W

QWEN_MTP = frozenset(
    {
        "Qwen3NextForCausalLM",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen3_5ForCausalLM",
        "Qwen3_5MoeForCausalLM",
    }
)
#: the text-only Qwen3.5 / 3.6 architectures (model types qwen3_5_text / qwen3_5_moe_text), and
#: the releases whose SpeculativeConfig does not map them to qwen3_5_mtp (recorded: 0.27.1)
QWEN_TEXT_ONLY = frozenset({"Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM"})
QWEN_TEXT_ONLY_REFUSED = frozenset({"0.27.1"})
DEEPSEEK_MTP = frozenset({"DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM"})


def _cut(config: Mapping[str, Any], n: int, *, full_attention: bool) -> dict[str, Any]:
    """``config`` with its language model cut to ``n`` decoder layers (all full attention)."""
    out = dict(config)
    text = dict(out["text_config"]) if isinstance(out.get("text_config"), Mapping) else out
    text["num_hidden_layers"] = n
    if full_attention:
        text["layer_types"] = ["full_attention"] * n
    if text is not out:
        out["text_config"] = text
    return out


#: the quantization-config fields that list module names left unquantized
_IGNORE_FIELDS = ("ignore", "exclude_modules", "ignored_layers", "modules_to_not_convert")


def _mtp_ignores(entries: Any, mtp: str, cut: str) -> Any:
    """``entries`` (module names or ``prefix*`` patterns) as the MTP layer ``mtp``
    (``model.layers.<N>``) sees them inside the cut walk, whose layer is ``cut``: the entries that
    reach ``mtp`` renamed to ``cut``, those naming other decoder layers dropped, the rest kept."""
    if not isinstance(entries, list):
        return entries
    out = []
    for e in entries:
        e = str(e)
        stem = e[:-1] if e.endswith("*") else e
        if stem == mtp or stem.startswith(mtp + "."):
            out.append(cut + e[len(mtp) :])
        elif e.endswith("*") and mtp.startswith(stem):
            out.append(cut + "*")  # a pattern covering the whole MTP layer (model.layers.6*)
        elif not e.startswith("model.layers."):
            out.append(e)
    return out


def _mtp_quant_view(
    target_config: Mapping[str, Any], hf_quant: Mapping[str, Any] | None, mtp: str, cut: str
) -> tuple[dict[str, Any], Mapping[str, Any] | None]:
    """The target's config and ``hf_quant_config.json`` with their lists of unquantized modules
    read for the MTP layer ``mtp`` as the cut walk names it (``cut``): vLLM quantizes the MTP
    layer with the target's quantization config, by the layer's own name."""
    config = dict(target_config)
    qc = config.get("quantization_config")
    if isinstance(qc, Mapping):
        config["quantization_config"] = {
            k: _mtp_ignores(v, mtp, cut) if k in _IGNORE_FIELDS else v for k, v in qc.items()
        }
    if isinstance(hf_quant, Mapping) and isinstance(hf_quant.get("quantization"), Mapping):
        inner = hf_quant["quantization"]
        hf_quant = {
            **hf_quant,
            "quantization": {k: _mtp_ignores(v, mtp, cut) if k in _IGNORE_FIELDS else v for k, v in inner.items()},
        }
    return config, hf_quant


def mtp_release_refusal(arch: str, vllm_version: str) -> str | None:
    """Why release ``vllm_version``'s ``SpeculativeConfig`` refuses an MTP drafter for a target of
    architecture ``arch`` (0.27.1 maps only ``qwen3_5`` / ``qwen3_5_moe`` to ``qwen3_5_mtp``, not
    a text-only Qwen3.5 / 3.6 model type: recorded), or ``None``."""
    if arch in QWEN_TEXT_ONLY and vllm_version in QWEN_TEXT_ONLY_REFUSED:
        return (
            f"vLLM {vllm_version}'s SpeculativeConfig maps only qwen3_5 / qwen3_5_moe to qwen3_5_mtp, not {arch}'s "
            "text model type (NotImplementedError: Unsupported speculative method: 'mtp')"
        )
    return None


def _mtp_modules(text: Mapping[str, Any], i: int) -> list[str]:
    """The linear modules of the MTP layer ``i`` as vLLM's drafter names them (prefix
    ``mtp.layers.<i>``): a full-attention layer with the target's MLP or MoE block."""
    p = f"mtp.layers.{i}"
    names = [f"{p}.self_attn.qkv_proj", f"{p}.self_attn.o_proj"]
    if text.get("num_experts"):
        names += [f"{p}.mlp.experts", f"{p}.mlp.shared_expert.gate_up_proj", f"{p}.mlp.shared_expert.down_proj"]
    else:
        names += [f"{p}.mlp.gate_up_proj", f"{p}.mlp.down_proj"]
    return names


def _quantized(quant: W.Quant, name: str) -> bool:
    """Whether the target's quantization config quantizes vLLM's layer ``name`` (an MTP module):
    weight-only integer configs (GPTQ / AWQ / AutoRound / compressed-tensors W4A16) and the
    W8A8 / NVFP4 / ModelOpt ones by their own per-layer rules; another method (fp8's
    ``Fp8Config``...) counts as quantizing it."""
    head, _, last = name.rpartition(".")
    parts = tuple(f"{head}.{m}" for m in PACKED_MODULES.get(last, ())) or (name,)
    if quant.wna16 is not None:
        return quant.wna16.layer_scheme(name) is not None
    if quant.scaled is not None:
        return quant.scaled.layer_scheme(name, parts) is not None
    if quant.method in ("modelopt", "modelopt_fp4"):  # without a GPU: its exclude_modules / ignore
        return not W._is_ignored(quant, name)
    return True


def _qwen_mtp_unquantized(
    quant: W.Quant, config: Mapping[str, Any], hf_quant: Mapping[str, Any] | None, n: int, arch: str
) -> bool:
    """A quantized Qwen3.5 / 3.6 / Qwen3-Next target's MTP layers, as vLLM's ``qwen3_5_mtp.py`` /
    ``qwen3_next_mtp.py`` build them with the target's quantization config under their own names
    (``mtp.layers.<i>.*``, ``mtp.fc``; a ``modelopt_fp4`` target's ``fc`` forced unquantized):
    modelled when the config leaves every one of them unquantized (the published NVIDIA
    checkpoints ignore ``mtp*`` / ``mtp.layers.0*``; an AutoRound ``block_name_to_quantize`` of
    ``model.layers`` leaves them out). Returns whether their attention takes ModelOpt's KV-cache
    method (an fp8 KV cache declared: four scale parameters per layer).

    :raises InputError: an MTP module the config quantizes (its layout is not modelled), a
        compressed-tensors ``kv_cache_scheme`` (its KV-cache method on them: not checked)."""
    text = config.get("text_config") or config
    names = [m for i in range(n) for m in _mtp_modules(text, i)]
    if quant.method != "modelopt_fp4":
        names.append("mtp.fc")
    quantized = [m for m in names if _quantized(quant, m)]
    if quantized:
        raise InputError(
            "--speculative-config",
            "method",
            f"the MTP layers of a {quant.method} {arch} target quantized by its config ({quantized[0]}, quantized "
            "by vLLM under that name) are not modelled; only MTP layers the config leaves unquantized are",
        )
    qc = config.get("quantization_config")
    if quant.method == "compressed-tensors" and isinstance(qc, Mapping) and qc.get("kv_cache_scheme") is not None:
        raise InputError(
            "--speculative-config",
            "method",
            f"the MTP layers of a compressed-tensors {arch} target with a kv_cache_scheme are not checked",
        )
    return str(quant.method).startswith("modelopt") and W.modelopt_fp8_kv_cache(config, hf_quant)


def mtp_weights(
    target_config: Mapping[str, Any],
    par: W.Parallel,
    *,
    dtype: str = "auto",
    hf_quant: Mapping[str, Any] | None = None,
    vllm_version: str = "0.28.0",
) -> W.RankWeights:
    """The MTP layers' weights on the last stage's rank (vLLM 0.28.0), in bytes and 512-byte
    allocator blocks. A quantized target's MTP layer takes its quantization (``config.json``'s
    ``quantization_config``, else ``hf_quant``: ModelOpt's ``hf_quant_config.json``) with the
    modules it leaves unquantized read for the MTP layer's own name (``model.layers.<N + i>``: a
    ModelOpt NVFP4 DeepSeek-V3 excludes ``model.layers.61*``, so its MTP layer stays bf16 while
    its MLA layer keeps ModelOpt's four KV-cache scales). A quantized Qwen target's MTP layers
    (``mtp.layers.<i>``, ``mtp.fc``) are modelled where its config leaves them unquantized
    (:func:`_qwen_mtp_unquantized`). ``vllm_version``: the release (0.27.1 has no MTP drafter for
    a text-only Qwen3.5 / 3.6 target).

    :raises InputError: a target whose MTP layers are not modelled, pipeline parallelism (the
        embedding is then the drafter's own: not modelled), a Qwen target whose config quantizes
        an MTP module, a DeepSeek target quantized per layer name (GPTQ / AWQ / AutoRound,
        compressed-tensors, ModelOpt mixed precision), a release that refuses the target's MTP,
        or what the target's walk refuses."""
    archs = list(target_config.get("architectures") or [])
    arch = archs[0] if archs else "no architectures"
    if par.pp > 1:
        raise InputError("--speculative-config", "method", "MTP layers under pipeline parallelism are not modelled")
    text = target_config.get("text_config") or target_config
    h = W._int(text, "hidden_size")
    ab = W.model_dtype_bytes(target_config, dtype)
    flat = W.Parallel(tp=par.tp, dp=par.dp, expert_parallel=par.expert_parallel)
    out = W.RankWeights(source="config")
    quant = W.quant_from_config(target_config, hf_quant)
    if (why := mtp_release_refusal(arch, vllm_version)) is not None:
        raise InputError("--speculative-config", "method", why)
    if arch == "BailingMoeV2_5ForCausalLM":
        from dryboot.vllm.model_executor.models import bailing_moe_linear  # at call: Bailing-V2.5 targets only

        return bailing_moe_linear.mtp_weights(target_config, par, dtype=dtype, vllm_version=vllm_version)
    if arch in QWEN_MTP:
        n = next((W._int(text, k) for k in ("mtp_num_hidden_layers", "num_nextn_predict_layers") if text.get(k)), 1)
        kv_scales = quant.method is not None and _qwen_mtp_unquantized(quant, target_config, hf_quant, n, arch)
        # the MTP layers are built unquantized: the target's layer without its quantization
        plain = {k: v for k, v in target_config.items() if k != "quantization_config"}

        def walk(k: int) -> W.RankWeights:
            cut = _cut(plain, k, full_attention=True)
            return W.rank_weights(cut, flat, dtype=dtype, language_model_only=True)

        two, one = walk(2), walk(1)
        layer = two.allocated_bytes - one.allocated_bytes
        out.allocated_bytes += n * layer
        out.param_bytes += n * layer
        out.load_segment_bytes += n * (two.load_segment_bytes - one.load_segment_bytes)
        out.add("fc", W._divide(h, par.tp, "the MTP fc's output") * 2 * h * ab)
        for _norm in range(3):
            out.add("norm", h * ab)
        if kv_scales:
            # ModelOptKVCacheMethod on each MTP layer's attention: q/k/v/prob scale parameters,
            # scalars of the model dtype (one block each)
            for _scale in range(4 * n):
                out.add("scale", ab)
        return out
    if arch in DEEPSEEK_MTP and text.get("num_nextn_predict_layers"):
        n = W._int(text, "num_nextn_predict_layers")
        dense = W._int(text, "first_k_dense_replace", 0)
        if quant.method is not None and (quant.wna16 is not None or quant.scaled is not None):
            raise InputError(
                "--speculative-config",
                "method",
                f"the MTP layers of a {quant.method} {arch} target (quantized per layer name) are not modelled",
            )
        total = W._int(text, "num_hidden_layers")
        out_layers = []
        for i in range(n):
            config, hq = _mtp_quant_view(
                target_config, hf_quant, f"model.layers.{total + i}", f"model.layers.{dense + 1}"
            )

            def walk_ds(k: int, config: Mapping[str, Any] = config, hq: Mapping[str, Any] | None = hq) -> W.RankWeights:
                return W.rank_weights(_cut(config, k, full_attention=False), flat, hf_quant=hq, dtype=dtype)

            two, one = walk_ds(dense + 2), walk_ds(dense + 1)
            out_layers.append((two, one))
        for two, one in out_layers:
            layer = two.allocated_bytes - one.allocated_bytes
            out.allocated_bytes += layer
            out.param_bytes += layer
            out.load_segment_bytes += two.load_segment_bytes - one.load_segment_bytes
            out.add("eh_proj", h * 2 * h * ab)
            for _norm in range(3):
                out.add("norm", h * ab)
        return out
    raise InputError(
        "--speculative-config",
        "method",
        f"the MTP layers of {arch} are not modelled (Qwen3-Next, Qwen3.5, DeepSeek-V2/V3 and Bailing-V2.5 targets are)",
    )
