"""Qwen4-Exp's plain layout (``Qwen4ExpForCausalLM`` without QSA or PLE layers: vLLM 0.29.0-0.33.0
``vllm/models/qwen4_exp/nvidia/model.py``): Qwen3-Next's layers (Gated DeltaNet mixers,
``Qwen3NextAttention`` with its output gate, ``Qwen3NextSparseMoeBlock`` / ``Qwen3NextMLP``; the
embedding and LM head on every stage) without their RMSNorms (no ``input_layernorm`` /
``post_attention_layernorm``, no final ``norm``), the hidden state kept as ``hc_count`` streams.

Per layer two hyper-connection modules (``attn_hyper_connection``, ``mlp_hyper_connection``:
``nvidia/hyperconnection.py`` ``GatedResidual``), each ``hc_norm`` ``[hc x H]``, the merged
``input_mix_weight_down_block_inject`` ``[r + hc + pad, hc x H]`` (``pad`` rounds ``r + hc`` up to a
multiple of 16) and ``input_mix_weight_up`` ``[hc x H, r]`` (``r = hc_lowrank``); on the last stage
the final ``hyper_connection_mixer`` (no injection): ``hc_norm`` ``[hc x H]``,
``input_mix_weight_down`` ``[r, hc x H]``, ``input_mix_weight_up`` ``[hc x H, r]``. All replicated
(``disable_tp`` / ``ReplicatedLinear``), unquantized, and bfloat16 whatever the model dtype
(``params_dtype=torch.bfloat16``).

QSA layers (``indexer_n_heads`` set; vLLM 0.30.0, 0.32.0, 0.33.0: :func:`qsa_layer`): each attention
layer is ``Qwen4ExpQSAAttention``, Qwen3-Next's attention with its indexer's replicated Q/K projection
(``index_qk_proj`` ``[(indexer_n_heads + indexer_kv_heads) x indexer_head_dim, H]``: its own tensor on 0.30.0,
the last part of ``qkv_proj`` from 0.32.0), the indexer's two norms ``[indexer_head_dim]`` and the int32 top-k
buffer ``[max_num_batched_tokens, indexer_budget + indexer_compress_ratio]``.

PLE layers (``ple_layer_ids``; vLLM 0.30.0-0.33.0: :func:`ple_layer`): ``Qwen4ExpPLELayer`` on each named
decoder layer: its n-gram table (``Qwen4ExpPLEDeviceEmbedding``, rows split over the Engram TP group),
the replicated ``kv_proj``, three grouped norms, the depthwise ``conv1d`` and three int64 hash buffers.
Sized with the table on the device (``--engram-config '{"cpu_offload": false}'``); vLLM's default puts it
in pinned host memory, refused by name (:data:`WHY_OFFLOAD`).

Refused by name: layer types other than ``linear_attention`` / ``full_attention``, ``hc_count`` <= 1; QSA
layers on other releases, quantized, or in another dtype than bfloat16 (vLLM's);
PLE layers on other releases, offloaded, quantized or with a ``ple_embedding_dtype``; GPTQ on 0.32.0 /
0.33.0 (vLLM refuses it: :data:`WHY_GPTQ`), and quantized checkpoints of a method, release, GPU or
parallelism not recorded (:data:`QUANT_METHODS`, :data:`QUANT_RELEASES`, :data:`QUANT_SMS`, pipeline / expert
parallelism).

Quantized (vLLM 0.29.0-0.33.0; SM 8.6 / 8.9 / 9.0 / 10.0): the Qwen3-Next layers take the
checkpoint's method as Qwen3-Next's walk models them, the hyper-connection weights stay bfloat16
(their ``quant_config=None``), as do the embedding and the LM head.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import qwen3_vl
from dryboot.vllm.model_executor.models.compose import (
    Family,
    WalkArgs,
    _text,
    config_only,
    merged,
    quant_scope_refusal,
    vision_language,
)
from dryboot.vllm.models import qwen4_exp as plan
from dryboot.vllm.versions import rules_for

ARCH = "Qwen4ExpForCausalLM"
#: bytes per element of the hyper-connection weights (``params_dtype=torch.bfloat16``)
HC_BYTES = 2
#: the releases and GPUs (``major * 10 + minor``) whose quantized layouts after loading are recorded
#: against vLLM (``tests/fidelity/quant_cases_qwen4exp.py``)
QUANT_RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
QUANT_SMS = (86, 89, 90, 100)
#: the methods recorded (plain fp8, compressed-tensors W8A8 / NVFP4 / W4A16, AWQ, GPTQ)
QUANT_METHODS = ("fp8", "compressed-tensors", "awq", "gptq")
#: the releases that refuse a GPTQ checkpoint of Qwen4-Exp (:data:`WHY_GPTQ`; 0.29.0-0.31.0 load it)
GPTQ_REFUSED_RELEASES = ("0.32.0", "0.33.0")
#: GPTQ on 0.32.0 / 0.33.0: vLLM reads the quantized modules from the checkpoint (``maybe_update_config``) and maps them
#: through the model's ``hf_to_vllm_mapper`` (``q_proj`` / ``k_proj`` / ``v_proj`` onto ``qkv_proj``),
#: after which the attention's shards match unevenly and vLLM refuses the checkpoint
WHY_GPTQ = (
    "vLLM 0.32.0 / 0.33.0 refuse GPTQ checkpoints of Qwen4Exp: the attention's q/k/v names mapped onto qkv_proj "
    "before the quantized modules are matched ('Detected some but not all shards of ...self_attn.qkv_proj are "
    "quantized')"
)


#: the releases whose QSA layers' weights are recorded (``data/weights/qwen4-exp-side/``): where the KV cache
#: geometry of QSA layers is planned (:data:`dryboot.vllm.models.qwen4_exp.QSA_RELEASES`)
QSA_RELEASES = ("0.30.0", "0.32.0", "0.33.0")
#: the releases whose QSA attention packs the indexer's Q/K projection into ``qkv_proj``
#: (``Qwen4ExpQSAQKVIndexerLinear``, without LoRA); 0.30.0 keeps ``index_qk_proj`` apart
QSA_FUSED_RELEASES = ("0.32.0", "0.33.0")
#: the releases whose PLE layers' weights are recorded (the table on the device)
PLE_RELEASES = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: bytes of one hash buffer element (``layer_multipliers``, ``ngram_heads_vocab_sizes``, ``ngram_heads_offsets``:
#: int64)
PLE_HASH_BYTES = 8
WHY_OFFLOAD = (
    "Qwen4-Exp's PLE n-gram tables in pinned host memory (vLLM's default --engram-config cpu_offload: true, "
    "Qwen4ExpPLEPinnedHostEmbedding with its UVA view and device-side prefetch buffers): not recorded (the "
    "oracle's meta device has no UVA); sized only with the tables on the device (vLLM's --engram-config "
    "'{\"cpu_offload\": false}' in a plan --serve line on 0.30.0+, or the weights API's "
    "Parallel(engram_cpu_offload=False))"
)


def _release_checks(out: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> None:
    """A config with QSA or PLE layers as the release's config class reads it (the plan's own checks,
    :func:`dryboot.vllm.models.qwen4_exp.read` / ``verify_release``), then what dryboot sizes of it.

    :raises InputError: the config class's refusals (QSA beside PLE layers: both kinds' checks), a
        release not recorded (:data:`QSA_RELEASES`, :data:`PLE_RELEASES`), a quantized checkpoint, QSA in
        another dtype than bfloat16 (vLLM's words), PLE layers under pipeline parallelism (vLLM's), PLE
        tables offloaded (:data:`WHY_OFFLOAD`) or with a ``ple_embedding_dtype``; ``max_num_batched_tokens``
        not given for QSA (it sizes the top-k buffer)."""
    qsa = out.get("indexer_n_heads") is not None
    ple = not qsa or bool(out.get("ple_layer_ids"))
    plan.verify_release(plan.read(ConfigFields("config.json", dict(out), ""), ARCH), rules_for(par.vllm_version))
    version = par.vllm_version
    what = "QSA" if qsa else "PLE"
    kinds: list[tuple[str, tuple[str, ...], str]] = [("QSA", QSA_RELEASES, "indexer_n_heads")] if qsa else []
    kinds += [("PLE", PLE_RELEASES, "ple_layer_ids")] if ple else []
    for kind, releases, field in kinds:
        if version not in releases:
            raise InputError(
                "config.json",
                field,
                f"{ARCH}'s {kind} layers: weights recorded on vLLM {', '.join(releases)} only, not {version}",
            )
    if W.quant_from_config(out, args.hf_quant).method is not None:
        raise InputError(
            "quantization_config", "quant_method", f"quantized {ARCH} with {what} layers: layouts not recorded"
        )
    if qsa:
        auto = args.dtype == "auto" and out.get("torch_dtype") not in ("float16", "half")
        if not auto and args.dtype not in ("bfloat16",):
            raise InputError("--dtype", args.dtype, "Qwen4Exp QSA currently requires BF16 (vLLM's)")
        if version in plan.QSA_BF16_ONLY_RELEASES and par.kv_cache_dtype not in ("auto", "bfloat16"):
            raise InputError(
                "--kv-cache-dtype", par.kv_cache_dtype, "Qwen4Exp QSA requires a BF16 main KV cache (vLLM's)"
            )
        if args.max_num_batched_tokens is None:
            raise InputError(
                "--max-num-batched-tokens",
                None,
                f"{ARCH}'s QSA layers allocate their top-k buffer (max_num_batched_tokens x (indexer_budget + "
                "indexer_compress_ratio) int32) with the weights: give max_num_batched_tokens",
            )
    if not ple:
        return
    if par.pp > 1:
        raise InputError(
            "--pipeline-parallel-size",
            str(par.pp),
            "Qwen4Exp N-gram PLE embedding requires pipeline_parallel_size=1 because non-first pipeline ranks do not "
            "receive the raw input_ids (vLLM's)",
        )
    if out.get("ple_embedding_dtype") is not None:
        raise InputError(
            "config.json",
            "ple_embedding_dtype",
            f"{ARCH}'s PLE tables in {out['ple_embedding_dtype']} (Qwen4ExpPLEFp8 / NvFp4 embedding methods): "
            "not recorded",
        )
    if par.engram_cpu_offload:
        raise InputError("--engram-config", "cpu_offload", WHY_OFFLOAD)


def _prepare(config: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The config as the release's ``Qwen4ExpTextConfig`` reads it, with its ``layer_types``
    spelled out for the Qwen3-Next walk: absent, every 4th layer is attention (vLLM's own class,
    0.29-0.31) or every ``full_attention_interval``-th (transformers' class, 0.32 on).

    :raises InputError: other layer types (or a ``layer_types`` of another length),
        ``full_attention_interval`` < 1, ``hc_count`` <= 1, ``hc_lowrank`` < 1 (named)."""
    out: dict[str, Any] = {**plan._DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
    n = W._int(out, "num_hidden_layers")
    types = out.get("layer_types")
    if not isinstance(types, list):
        every = 4
        if rules_for(version).qwen3_next_hf_config_class:
            every = W._int(out, "full_attention_interval", 4)
            if every < 1:
                raise InputError("config.json", "full_attention_interval", f"must be positive, got {every}")
        types = ["linear_attention" if (i + 1) % every else "full_attention" for i in range(n)]
    if len(types) != n:
        raise InputError("config.json", "layer_types", f"{len(types)} entries for {n} layers")
    other = sorted(set(map(str, types)) - set(plan.PLAIN_LAYER_TYPES))
    if other:
        raise InputError("config.json", "layer_types", f"{ARCH} layer types {other}: weights not modelled")
    if W._int(out, "hc_count") <= 1:
        raise InputError("config.json", "hc_count", f"Qwen4Exp requires hc_count > 1, got {out['hc_count']}")
    if W._int(out, "hc_lowrank") < 1:
        raise InputError("config.json", "hc_lowrank", "hc_lowrank must be positive")
    out["layer_types"] = list(types)
    return out


def without_mrope(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with its RoPE's ``mrope_section`` / ``mrope_interleaved`` dropped, as vLLM's
    ``_strip_qwen4_exp_mrope`` (``model_executor/models/config.py``, 0.29.0-0.33.0) does for
    ``Qwen4ExpForCausalLM`` and for the wrapper under ``--language-model-only``: its attention then
    takes a one-dimensional rotary table (``max_position_embeddings`` rows, not the multimodal 4x)."""
    out = dict(config)
    for key in ("rope_parameters", "rope_scaling"):
        rope = out.get(key)
        if isinstance(rope, Mapping):
            out[key] = {k: v for k, v in rope.items() if k not in ("mrope_section", "mrope_interleaved")}
    return out


def _less(w: W.RankWeights, kind: str, nbytes: int) -> None:
    """Undo :meth:`RankWeights.add` of one parameter of ``nbytes`` (a Qwen3-Next norm this
    layout lacks)."""
    rounded = -(-nbytes // W.ALLOC_ROUND) * W.ALLOC_ROUND
    w.param_bytes -= nbytes
    w.by_kind[kind] -= nbytes
    w.allocated_bytes -= rounded
    w.load_segment_bytes -= W.load_segment_bytes(nbytes) - rounded


def hyper_connections(config: Mapping[str, Any], par: W.Parallel) -> W.RankWeights:
    """The stage's hyper-connection weights (replicated on every rank, bfloat16): two
    ``GatedResidual`` per layer, the final mixer on the last stage."""
    h, hc, r = W._int(config, "hidden_size"), W._int(config, "hc_count"), W._int(config, "hc_lowrank")
    wide = hc * h
    pad = -(r + hc) % 16
    w = W.RankWeights()
    for _ in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        for _module in ("attn_hyper_connection", "mlp_hyper_connection"):
            w.add("norm", wide * HC_BYTES)
            w.add("hyper_connection", (r + hc + pad) * wide * HC_BYTES)
            w.add("hyper_connection", wide * r * HC_BYTES)
    if par.pp_rank == par.pp - 1:
        w.add("norm", wide * HC_BYTES)
        w.add("hyper_connection", r * wide * HC_BYTES)
        w.add("hyper_connection", wide * r * HC_BYTES)
    return w


def qkv_columns(config: Mapping[str, Any], tp: int) -> int:
    """A Qwen4-Exp attention layer's ``qkv_proj`` rows on a rank: the query and its output gate
    (``2 x num_attention_heads / TP`` heads), key and value (``num_key_value_heads / TP`` heads each,
    one replicated below TP), ``head_dim`` wide."""
    h, heads, kv = (
        W._int(config, "hidden_size"),
        W._int(config, "num_attention_heads"),
        W._int(config, "num_key_value_heads"),
    )
    return (2 * heads // tp + 2 * max(1, kv // tp)) * W._int(config, "head_dim", h // heads)


def qsa_layer(config: Mapping[str, Any], par: W.Parallel, max_num_batched_tokens: int) -> W.RankWeights:
    """What one QSA attention layer (``Qwen4ExpQSAAttention``, bfloat16) holds on a rank beyond the
    Qwen3-Next attention layer of the same heads without its ``qkv_proj``.

    Returns the layer's ``qkv_proj`` (0.32.0 on: :func:`qkv_columns` and the indexer's replicated Q/K,
    ``(indexer_n_heads + indexer_kv_heads) x indexer_head_dim`` rows, one tensor ``[rows, H]``; 0.30.0:
    those rows a tensor of their own, ``index_qk_proj``), the indexer's ``q_layernorm`` / ``k_layernorm``
    ``[indexer_head_dim]`` and the int32 ``topk_indices_buffer`` ``[max_num_batched_tokens,
    indexer_budget + indexer_compress_ratio]`` (its packed width: the budget, ``ratio - 1`` and a count
    column); bytes."""
    h = W._int(config, "hidden_size")
    qkv = qkv_columns(config, par.tp)
    index_hd = W._int(config, "indexer_head_dim")
    index = (W._int(config, "indexer_n_heads") + W._int(config, "indexer_kv_heads")) * index_hd
    w = W.RankWeights()
    if par.vllm_version in QSA_FUSED_RELEASES:
        w.add("attention", (qkv + index) * h * HC_BYTES)
    else:
        w.add("attention", qkv * h * HC_BYTES)
        w.add("attention", index * h * HC_BYTES)
    for _norm in ("q_layernorm", "k_layernorm"):
        w.add("norm", index_hd * HC_BYTES)
    width = W._int(config, "indexer_budget") + W._int(config, "indexer_compress_ratio")
    w.add("qsa", max_num_batched_tokens * width * 4, buffer=True)
    return w


def _qsa_layers(w: W.RankWeights, config: Mapping[str, Any], par: W.Parallel, tokens: int) -> W.RankWeights:
    """``w`` (Qwen3-Next's walk of the stage) with each of its attention layers made a QSA layer:
    its ``qkv_proj`` taken out, :func:`qsa_layer` in."""
    qkv = qkv_columns(config, par.tp) * W._int(config, "hidden_size") * HC_BYTES
    types = config["layer_types"]
    for li in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        if types[li] == "full_attention":
            _less(w, "attention", qkv)
            w = merged(w, qsa_layer(config, par, tokens))
    return w


#: the n-gram heads' table sizes dryboot works out at most (each a prime found by search): a config asking
#: for more is refused by name
MAX_PLE_PRIMES = 100_000
#: witnesses that decide primality by Miller-Rabin for every n below 3.3e24 (covers int64)
_WITNESSES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def _is_prime(n: int) -> bool:
    """Whether ``n`` is prime: trial division by the small witnesses, then Miller-Rabin with each."""
    if n < 2:
        return False
    for p in _WITNESSES:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in _WITNESSES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _primes_from(base: int, count: int) -> list[int]:
    """The first ``count`` primes >= ``base`` (each n-gram head's table size, ``_make_vocab_layout``:
    head ``k`` of the model's PLE heads takes the ``k``-th)."""
    out: list[int] = []
    n = max(base, 2)
    while len(out) < count:
        if _is_prime(n):
            out.append(n)
        n += 1
    return out


def ple_table_rows(config: Mapping[str, Any], dense_id: int) -> int:
    """The rows of PLE layer ``dense_id``'s n-gram table before the Engram TP split
    (``Qwen4ExpNGramEmbedding``): its ``(ngram_size - 1) x heads_per_ngram`` heads take the next
    primes from ``ngram_vocab_size_base`` after those of the PLE layers before it (``dense_id``: its
    place among the sorted distinct ``ple_layer_ids``), summed and rounded up to
    ``make_ngram_vocab_size_divisible_by``.

    :raises InputError: more than :data:`MAX_PLE_PRIMES` head sizes to find, a base outside (0, 2^62) or a
        divisor below 1."""
    heads = (W._int(config, "ngram_size") - 1) * W._int(config, "heads_per_ngram")
    base = W._int(config, "ngram_vocab_size_base", 20_000_000)
    divisor = W._int(config, "make_ngram_vocab_size_divisible_by", 128)
    if (dense_id + 1) * heads > MAX_PLE_PRIMES or not 0 < base < 2**62 or divisor < 1:
        raise InputError(
            "config.json",
            "heads_per_ngram",
            f"{ARCH}'s PLE tables: {(dense_id + 1) * heads} n-gram head sizes from ngram_vocab_size_base {base} "
            f"(divisible by {divisor}): outside what dryboot sizes (at most {MAX_PLE_PRIMES} heads, a positive "
            "base below 2^62)",
        )
    total = sum(_primes_from(base, (dense_id + 1) * heads)[dense_id * heads :])
    return -(-total // divisor) * divisor


def ple_layer(config: Mapping[str, Any], par: W.Parallel, dense_id: int, ab: int) -> W.RankWeights:
    """One ``Qwen4ExpPLELayer`` on a rank, its table on the device (``Qwen4ExpPLEDeviceEmbedding``),
    in the model dtype (``ab`` bytes): the n-gram table ``[rows / TP, ple_embed_dim / heads]``
    (:func:`ple_table_rows`; the Engram TP group is the TP group), ``kv_proj``
    ``[(hc_count + 1) x H, ple_embed_dim]`` (replicated), ``norm_key`` / ``norm_query`` / ``norm_conv``
    ``[hc_count x H]``, ``conv1d`` ``[hc_count x H, 1, ple_conv_kernel_size]`` and the int64 hash buffers
    (``layer_multipliers`` ``[ngram_size]``, the heads' sizes and offsets ``[heads]``).

    :raises InputError: table rows the TP size does not divide (``VocabParallelEmbedding``'s ``divide``)."""
    h, hc = W._int(config, "hidden_size"), W._int(config, "hc_count")
    ngram = W._int(config, "ngram_size")
    heads = (ngram - 1) * W._int(config, "heads_per_ngram")
    embed = W._int(config, "ple_embed_dim", h)
    rows = ple_table_rows(config, dense_id)
    w = W.RankWeights()
    w.add("ple", W._divide(rows, par.tp, "the PLE n-gram table's rows") * (embed // heads) * ab)
    w.add("ple", (hc + 1) * h * embed * ab)
    for _norm in ("norm_key", "norm_query", "norm_conv"):
        w.add("norm", hc * h * ab)
    w.add("ple", hc * h * W._int(config, "ple_conv_kernel_size") * ab)
    for n in (ngram, heads, heads):
        w.add("ple", n * PLE_HASH_BYTES, buffer=True)
    return w


def _ple_layers(w: W.RankWeights, config: Mapping[str, Any], par: W.Parallel, ab: int) -> W.RankWeights:
    """``w`` with a :func:`ple_layer` for each decoder layer of the stage that ``ple_layer_ids`` names
    (``layer + 1`` in it; its dense id: the ids below it among the sorted distinct ones)."""
    ids = sorted(set(config.get("ple_layer_ids") or []))
    for li in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        if li + 1 in ids:
            w = merged(w, ple_layer(config, par, ids.index(li + 1), ab))
    return w


def _refuse_quantized(quant: W.Quant, par: W.Parallel) -> None:
    """What of a quantized Qwen4-Exp is not checked against vLLM, named.

    :raises InputError: GPTQ on 0.32.0 / 0.33.0 (vLLM refuses it, :data:`WHY_GPTQ`), a method not recorded
        (:data:`QUANT_METHODS`), a release or GPU not recorded, pipeline or expert parallelism."""
    if quant.method == "gptq" and par.vllm_version in GPTQ_REFUSED_RELEASES:
        why: str | None = WHY_GPTQ
    elif quant.method not in QUANT_METHODS:
        why = f"{quant.method} layouts of {ARCH} are not recorded (only {', '.join(QUANT_METHODS)})"
    else:
        why = quant_scope_refusal(ARCH, quant.method, par, QUANT_RELEASES, QUANT_SMS)
    if why:
        raise InputError("quantization_config", "quant_method", why)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank: Qwen3-Next's walk over the prepared config, less its norms, plus the
    hyper-connection weights. Quantized, the Gated DeltaNet, attention and MoE layers take the
    checkpoint's method as Qwen3-Next's do (vLLM passes them the model's ``quant_config``); the
    hyper-connection projections (``quant_config=None``), the embedding and the LM head (none
    passed) stay unquantized, the former bfloat16 whatever the model dtype.

    :raises InputError: see :func:`_prepare`; a quantized checkpoint on a release, GPU or
        parallelism not recorded (:func:`_refuse_quantized`), or what Qwen3-Next's walk refuses."""
    config_only(config, args)
    qsa = config.get("indexer_n_heads") is not None
    ple = bool(config.get("ple_layer_ids"))
    if qsa or ple:
        _release_checks({**plan._DEFAULTS, **{k: v for k, v in config.items() if v is not None}}, par, args)
    quant = W.quant_from_config(config, args.hf_quant)
    if quant.method is not None:
        _refuse_quantized(quant, par)
    prepared = _prepare(config, par.vllm_version)
    wrapped = str((config.get("architectures") or [ARCH])[0]) == WRAPPER
    if not wrapped or (args.no_tower and not {"image", "video"} <= args.zero_modalities):
        prepared = without_mrope(prepared)
    if qsa:  # the QSA layer's own backend: no FlashInfer counter, attention output gate always on
        prepared["attn_output_gate"] = True
        # its rotary takes qwen3_vl.py's mrope_positions_factor from 0.32 (a multimodal RoPE over the
        # tokens' positions, as Qwen3VLDecoderLayer's: weights.MROPE_TOKEN_POSITIONS); 0.30.0 get_rope's default
        prepared[W.QWEN3_VL_DECODER] = True
        w = _text(prepared, "Qwen3NextForCausalLM", replace(par, kv_cache_dtype="auto"), args)
    else:
        w = _text(prepared, "Qwen3NextForCausalLM", par, args)
    ab = W.model_dtype_bytes(prepared, args.dtype)
    norm = W._int(prepared, "hidden_size") * ab
    for _ in W.pp_layers(W._int(prepared, "num_hidden_layers"), par):
        _less(w, "norm", norm)  # input_layernorm
        _less(w, "norm", norm)  # post_attention_layernorm
    if par.pp_rank == par.pp - 1:
        _less(w, "norm", norm)  # the final norm
    if qsa and args.max_num_batched_tokens is not None:
        w = _qsa_layers(w, prepared, par, args.max_num_batched_tokens)
    if ple:
        w = _ple_layers(w, prepared, par, ab)
    return merged(w, hyper_connections(prepared, par))


WRAPPER = "Qwen4ExpForConditionalGeneration"
#: the releases whose wrapper is recorded on the meta device (``data/weights/qwen4-exp-vl/``)
WRAPPER_RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: transformers' ``Qwen4ExpVisionConfig`` defaults (5.19 / 5.20, what 0.32+ read the file with);
#: it has no ``deepstack_visual_indexes`` field
VISION_DEFAULTS: dict[str, Any] = {
    **qwen3_vl.VISION_CONFIG_DEFAULTS,
}


#: what vLLM's own ``Qwen4ExpVisionConfig`` (a ``Qwen3VLVisionConfig``: 0.29-0.31) adds to those
OWN_CLASS_VISION_DEFAULTS: dict[str, Any] = {**VISION_DEFAULTS, "deepstack_visual_indexes": [8, 16, 24]}


def wrapper_vision(config: Mapping[str, Any], version: str = WRAPPER_RELEASES[-1]) -> dict[str, Any]:
    """The wrapper's ``vision_config`` as release ``version``'s ``Qwen4ExpVisionConfig`` reads it:
    :data:`VISION_DEFAULTS` under the file's keys (transformers' class, 0.32 on), or
    :data:`OWN_CLASS_VISION_DEFAULTS` (vLLM's own, 0.29-0.31: Qwen3-VL's three deepstack levels).

    :raises InputError: no ``vision_config`` object."""
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        raise InputError("config.json", "vision_config", f"{WRAPPER} needs a vision_config object")
    own = not rules_for(version).qwen3_next_hf_config_class
    return {**(OWN_CLASS_VISION_DEFAULTS if own else VISION_DEFAULTS), **vision}


def _wrapper_checks(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> None:
    """What the wrapper's ``__init__`` (0.33.0) asserts before building anything.

    :raises InputError: ``vision_config.deepstack_visual_indexes`` absent (no field of
        ``Qwen4ExpVisionConfig``) unless the tower is off under ``--language-model-only`` (read
        for ``use_deepstack`` otherwise: vLLM's AttributeError, recorded; a zero image and video
        limit alone does not skip it); under pipeline parallelism a later stage starting before
        layer ``len(deepstack_visual_indexes)`` (vLLM's assertion, recorded)."""
    vision = wrapper_vision(config, par.vllm_version)
    levels = vision.get("deepstack_visual_indexes")
    lm_only = args.no_tower and not {"image", "video"} <= args.zero_modalities
    if levels is None and not lm_only:
        raise InputError(
            "config.json",
            "vision_config.deepstack_visual_indexes",
            f"{WRAPPER} reads vision_config.deepstack_visual_indexes, a field Qwen4ExpVisionConfig does not "
            "default (vLLM's AttributeError building the wrapper): set it ([] for no deepstack level)",
        )
    if par.pp > 1 and isinstance(levels, list):
        text = config.get("text_config")
        n = W._int(text if isinstance(text, Mapping) else {}, "num_hidden_layers")
        start = min(W.pp_layers(n, replace(par, pp_rank=r)).start for r in range(1, par.pp))
        if start < len(levels):
            raise InputError(
                "--pipeline-parallel-size",
                str(par.pp),
                f"{WRAPPER}: a later pipeline stage starts at layer {start}, before len(deepstack_visual_indexes) "
                f"= {len(levels)} (vLLM's assertion)",
            )


def _wrapper_family() -> Family:
    """``Qwen4ExpForConditionalGeneration`` (``nvidia/model.py``): Qwen4-Exp's text model (its
    walk, :func:`_walk`, over ``text_config``) and, under ``_mark_tower_model`` (dropped by
    ``--language-model-only`` or a zero image and video limit; on 0.33 built on the first
    pipeline stage alone), Qwen3-VL's vision tower (``Qwen3_VisionTransformer``,
    :func:`qwen3_vl.vision_tower`, over :func:`wrapper_vision`) with the deepstack feature
    buffers (:func:`qwen3_vl.deepstack_buffers`). Unquantized only; releases other than
    :data:`WRAPPER_RELEASES` refused."""

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        if par.vllm_version not in WRAPPER_RELEASES:
            raise InputError(
                "config.json",
                "architectures",
                f"{WRAPPER}'s vision tower is recorded on vLLM {', '.join(WRAPPER_RELEASES)} only, not "
                f"{par.vllm_version} (its text model alone is sized: Qwen4ExpForCausalLM)",
            )
        _wrapper_checks(config, par, args)
        vision = wrapper_vision(config, par.vllm_version)
        inner = vision_language(Family(_walk), qwen3_vl.vision_tower, tower_of=lambda _: vision)
        with_levels = {**config, "vision_config": vision}
        return qwen3_vl.with_deepstack(
            inner, lambda c: c.get("text_config"), lambda c: c.get("vision_config"), ("image", "video")
        ).walk(with_levels, par, args)

    return Family(walk, ("image", "video"))


FAMILIES: dict[str, Family] = {ARCH: Family(_walk), WRAPPER: _wrapper_family()}
