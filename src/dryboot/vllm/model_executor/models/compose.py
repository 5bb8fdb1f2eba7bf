"""How a family outside the walk's own table is built: a :class:`Family` per architecture, and
the two compositions vLLM uses: a vision-language wrapper (``init_vllm_registered_model`` on the
text config, plus a tower and projector of its own: :func:`vision_language`) and a decoder whose
parameters are another architecture's (:func:`built_as`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.mm_encoder_tp import whole_tower
from dryboot.vllm.model_executor.layers.quantization.auto_gptq import wna16_experts_bytes
from dryboot.vllm.model_executor.layers.quantization.fused_moe import scaled_experts_bytes
from dryboot.vllm.model_executor.layers.quantization.modelopt import ModelOptQuant, modelopt_experts_bytes
from dryboot.vllm.model_executor.layers.quantization.scaled_mm import ScaledScheme
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.model_loader.weights import WalkArgs as WalkArgs
from dryboot.vllm.models.registry import release_registry_file
from dryboot.vllm.models.wrappers import BUILT_AS, WRAPPERS
from dryboot.vllm.versions import rules_for

#: a tower and its projector on one rank: (vision config, text config, TP size, bytes per element)
#: -> what it allocates
Tower = Callable[[Mapping[str, Any], Mapping[str, Any], int, int], W.RankWeights]


@dataclass(frozen=True)
class Family:
    """One architecture's weights: ``walk(config, rank, args) -> RankWeights``; ``modalities``:
    what its tower takes (``--limit-mm-per-prompt`` 0 for all of them drops the tower)."""

    walk: Callable[[Mapping[str, Any], W.Parallel, WalkArgs], W.RankWeights]
    modalities: tuple[str, ...] = ()


def without_pp(family: Family) -> Family:
    """``family`` for a model class without ``SupportsPP``: vLLM refuses pipeline parallelism
    ("Pipeline parallelism is not supported for this model").

    :raises InputError: ``--pipeline-parallel-size`` above 1."""

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        if par.pp > 1:
            raise InputError(
                "--pipeline-parallel-size",
                None,
                f"{_arch(config)} does not support pipeline parallelism (vLLM refuses it)",
            )
        return family.walk(config, par, args)

    return Family(walk, family.modalities)


def pp_refused_on(family: Family, releases: frozenset[str], why: str) -> Family:
    """``family`` on releases of vLLM that refuse it under pipeline parallelism (``why``) and
    build it on the others.

    :raises InputError: ``--pipeline-parallel-size`` above 1 on one of ``releases``."""

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        if par.pp > 1 and par.vllm_version in releases:
            raise InputError("--pipeline-parallel-size", None, f"{_arch(config)}: {why}")
        return family.walk(config, par, args)

    return Family(walk, family.modalities)


@dataclass(frozen=True)
class MoeDims:
    """One rank's sizes of a decoder with an expert block on every layer (gpt-oss, MiniMax-M2):
    ``quant`` (the checkpoint's method), ``ab`` (bytes per element of the model dtype), ``h``,
    ``e`` experts of ``inter`` width, ``hd``, the heads ``nq_r`` / ``nkv_r`` and padded vocabulary
    ``vocab_r`` on the rank, the experts it holds ``e_r`` of width ``i_r`` (``I / TP``, or whole
    experts under expert parallelism), the stage's ``layers``."""

    quant: W.Quant
    ab: int
    h: int
    e: int
    inter: int
    hd: int
    nq_r: int
    nkv_r: int
    vocab_r: int
    e_r: int
    i_r: int
    layers: range


def moe_decoder_dims(
    config: Mapping[str, Any], par: W.Parallel, args: WalkArgs, quant: W.Quant | None = None
) -> MoeDims:
    """:class:`MoeDims` of ``config`` (``hidden_size``, ``num_local_experts``,
    ``intermediate_size``, ``num_attention_heads``, ``num_key_value_heads``, ``head_dim``) on
    ``par``'s rank; ``quant`` replaces the config's quantization where the family decides it
    (gpt-oss's MXFP4 leaves every linear layer unquantized).

    :raises InputError: checkpoint headers (not mapped), a quantization method not modelled,
        heads, KV heads or sizes TP does not divide (KV heads below TP must divide it, as
        ``QKVParallelLinear`` requires)."""
    config_only(config, args)
    if quant is None:
        quant = W.quant_from_config(config, args.hf_quant)
        if quant.method == "fp8" and par.capability is not None:
            # on a named GPU plain fp8 is the layout after loading: recorded families only (named)
            quant = W._on_gpu(quant, par, str(config.get("model_type") or ""))
    tp = par.tp
    h, e, inter = (W._int(config, k) for k in ("hidden_size", "num_local_experts", "intermediate_size"))
    nq, nkv, hd = (W._int(config, k) for k in ("num_attention_heads", "num_key_value_heads", "head_dim"))
    nq_r = W._divide(nq, tp, "num_attention_heads")
    nkv_r = W.kv_heads_per_rank(nkv, tp)
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    e_r, i_r = W.experts_per_rank(e, inter, tp, par, "intermediate_size")
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    return MoeDims(
        quant, W.model_dtype_bytes(config, args.dtype), h, e, inter, hd, nq_r, nkv_r, vocab_r, e_r, i_r, layers
    )


def merged(a: W.RankWeights, b: W.RankWeights) -> W.RankWeights:
    """What two parts of one rank's model allocate together (each tensor still its own
    allocation: the allocator's rounding adds up)."""
    a.param_bytes += b.param_bytes
    a.buffer_bytes += b.buffer_bytes
    a.allocated_bytes += b.allocated_bytes
    a.load_segment_bytes += b.load_segment_bytes
    for kind, n in b.by_kind.items():
        a.by_kind[kind] = a.by_kind.get(kind, 0) + n
    return a


def _arch(config: Mapping[str, Any]) -> str:
    return str(config["architectures"][0])


def quant_scope_refusal(
    name: str, method: str | None, par: W.Parallel, releases: tuple[str, ...], sms: tuple[int, ...]
) -> str | None:
    """Why a quantized ``name`` on ``par`` lies outside what its records check, else ``None``: a
    release not in ``releases``, a GPU whose SM (major x 10 + minor) is not in ``sms`` (an
    unnamed GPU passes), pipeline or expert parallelism."""
    if par.vllm_version not in releases:
        return f"quantized {name} layouts are checked on vLLM {', '.join(releases)} only"
    if par.capability is not None and par.capability[0] * 10 + par.capability[1] not in sms:
        listed = ", ".join(f"{s // 10}.{s % 10}" for s in sms)
        return f"quantized {name} layouts ({method}) are checked on SM {listed} only"
    if par.pp > 1 or par.expert_parallel:
        return f"quantized {name} under pipeline or expert parallelism is not modelled"
    return None


def unquantized_text_config(config: Mapping[str, Any], args: WalkArgs, arch: str) -> Mapping[str, Any]:
    """The ``text_config`` object of an unquantized wrapper ``arch`` whose walk sizes from the config alone.

    :raises InputError: checkpoint headers given, a quantized checkpoint, no ``text_config`` object."""
    config_only(config, args)
    if W.quant_from_config(config, args.hf_quant).method is not None:
        raise InputError("quantization_config", "quant_method", f"quantized {arch} layouts are not modelled")
    text = config.get("text_config")
    if not isinstance(text, Mapping):
        raise InputError("config.json", "text_config", f"{arch}: the language model's config object is missing")
    return text


def require_gpu(par: W.Parallel, method: str) -> None:
    """A quantized layout after ``process_weights_after_loading`` is the kernels' vLLM picks per GPU.

    :raises InputError: no GPU named."""
    if par.capability is None:
        raise InputError(
            "quantization_config",
            "quant_method",
            f"{method} weights after loading depend on the GPU's kernels: name the GPU (--gpu)",
        )


def config_only(config: Mapping[str, Any], args: WalkArgs) -> None:
    if args.tensors is not None:
        raise InputError(
            "safetensors headers",
            None,
            f"the checkpoint tensors of {_arch(config)} are not mapped yet (--load-format dummy: the figure from "
            "the config)",
        )


def unquantized(
    config: Mapping[str, Any],
    args: WalkArgs,
    defaults: Mapping[str, Any] | None = None,
    *,
    untied: str | None = None,
) -> tuple[dict[str, Any], int]:
    """The opening of a family walk that models unquantized layouts only: ``config`` over the
    family's ``defaults`` (what its transformers config class fills in) and the model dtype's
    bytes per element. ``untied``: the family's name, for one that models an untied LM head only.

    :raises InputError: checkpoint headers (not mapped), a quantization method (named), a tied
        head under ``untied``."""
    config_only(config, args)
    if W.quant_from_config(config, args.hf_quant).method is not None:
        raise InputError("quantization_config", "quant_method", f"quantized {_arch(config)} layouts are not modelled")
    merged = {**(defaults or {}), **config}
    if untied is not None and merged.get("tie_word_embeddings"):
        raise InputError("config.json", "tie_word_embeddings", f"a tied {untied} head is not modelled")
    return merged, W.model_dtype_bytes(merged, args.dtype)


def _text(config: Mapping[str, Any], architecture: str, par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """The walk over ``config`` built as ``architecture``."""
    text = {**config, "architectures": [architecture]}
    return W._walk(
        text, par, args.hf_quant, args.dtype, None, True, args.max_num_batched_tokens, max_model_len=args.max_model_len
    )


def built_as(
    architecture: str,
    *,
    prepare: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
    refused: tuple[str, ...] = (),
    required: tuple[str, ...] = (),
    extra: Callable[[Mapping[str, Any], W.Parallel, int], W.RankWeights] | None = None,
    backend: Layout | None = None,
) -> Family:
    """A decoder whose vLLM model class allocates what ``architecture``'s does for the same
    config (its checkpoint names may differ, e.g. fused ``qkv_proj``: from the config only).
    ``prepare``: the family's reading of its config (defaults its config class sets);
    ``refused``: fields whose truth adds parameters that layout lacks, ``required``: fields
    whose falsehood removes some (each refused by name); ``extra``: what the family adds to that
    layout on the rank, ``(config, rank, bytes per element)``; ``backend``: the transformers
    class's layout, walked by :func:`decoder` on a release that serves the architecture through
    its Transformers modeling backend (:func:`on_backend`).

    :raises InputError: a ``refused`` field true or a ``required`` one false (named)."""
    own = decoder(backend, prepare, refused) if backend is not None else None

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        if own is not None and on_backend(_arch(config), par.vllm_version):
            return own.walk(config, par, args)
        config_only(config, args)
        if prepare is not None:
            config = prepare(config)
        for key in refused:
            if config.get(key):
                raise InputError("config.json", key, f"{_arch(config)} with {key} is not modelled")
        for key in required:
            if not config.get(key):
                raise InputError("config.json", key, f"{_arch(config)} without {key} is not modelled")
        weights = _text(config, architecture, par, args)
        if extra is None:
            return weights
        return merged(weights, extra(config, par, W.model_dtype_bytes(config, args.dtype)))

    return Family(walk)


def built_text(architecture: str) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """How the model class of ``architecture`` (a wrapper of ``models.wrappers.BUILT_AS``) reads
    its text config: the keys it must give (refused by name when absent), the text config class's
    defaults, the class's own rewrite, as its inner architecture and ``model_type``.

    :raises InputError: (from the returned reader) a key the wrapper needs missing (named)."""
    built = BUILT_AS[architecture]

    def read(text: Mapping[str, Any]) -> dict[str, Any]:
        for key, why in built.needs.items():
            if key not in text:
                raise InputError("config.json", f"text_config.{key}", why)
        out = {**built.defaults, **text, "architectures": [built.inner], "model_type": built.model_type}
        return built.rewrite(out) if built.rewrite is not None else out

    return read


def text_config(config: Mapping[str, Any]) -> Any:
    """``config["text_config"]``: a wrapper's language model config, required (``text_of``)."""
    return config.get("text_config")


#: ``FusedInputNorm`` (``models/vision.py``): the image normalization vLLM moves onto the device
#: (``mm_device_do_normalize``, on by default for these models) keeps float32 ``weight`` and
#: ``bias`` buffers of one value per channel of the processor's ``image_mean`` (three); an
#: identity normalization (mean 0, std 1, no rescale) keeps none: not modelled (Qwen's processors
#: normalize)
INPUT_NORM_CHANNELS = 3


def add_input_norm(w: W.RankWeights) -> None:
    """A vision tower's device-side input normalization (``FusedInputNorm``): its weight and bias
    buffers, float32 ``[3]`` each."""
    for _ in range(2):
        w.add("input norm", 4 * INPUT_NORM_CHANNELS, buffer=True)


def vision_language(
    text_architecture: str | Family,
    tower: Tower | tuple[tuple[tuple[str, ...], Tower], ...],
    modalities: tuple[str, ...] = ("image", "video"),
    prepare: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
    pp_refused: str | None = None,
    text_of: Callable[[Mapping[str, Any]], Any] | None = None,
    tower_of: Callable[[Mapping[str, Any]], Any] | None = None,
    quantized: Callable[[W.Quant], bool] | None = None,
    split_in_data: Tower | None = None,
) -> Family:
    """A vision-language wrapper as vLLM composes it: the language model of ``text_config`` (or,
    in the older single-level configs, the config's own text fields) built as
    ``text_architecture`` (the wrapper's ``tie_word_embeddings`` and dtype when the text config
    has none; ``prepare``: the family's reading of its text config), then ``tower`` over
    ``vision_config`` on every TP rank, unless the tower is off (``--language-model-only``, or
    ``--limit-mm-per-prompt`` 0 for every modality it takes). ``tower`` as ``((modalities,
    tower), ...)``: one tower per set of modalities (vLLM's ``_mark_tower_model`` per tower:
    Qwen-Omni's audio tower and its image/video tower), each dropped when all its modalities are
    limited to 0; ``modalities`` is then their union.

    Under pipeline parallelism each stage's rank holds the tower and the text model's share of
    the stages (embedding on the first, norm and head on the last, as the text architecture
    places them; a :class:`Family` as ``text_architecture``: a language model no architecture of
    the walk names, built by that family); ``pp_refused``: why vLLM refuses the wrapper under pipeline parallelism.
    ``text_of`` / ``tower_of``: where a wrapper keeps its text config and what its tower reads
    (``text_config`` and ``vision_config`` unless given; ``tower_of`` may return the whole config);
    with ``text_of`` the text config is required (:func:`text_config`: ``text_config``, required).
    ``quantized``: the quantization methods the wrapper's ``tower`` sizes itself (it reads the
    config's ``quantization_config``); the text model then gets the wrapper's ``quantization_config``.
    ``split_in_data``: a part built beside ``tower`` (with it, and dropped with it) that stays
    TP-split under ``--mm-encoder-tp-mode data`` while ``tower`` is built whole (Isaac's projector).

    On 0.33 the towers are built on the first stage alone (:func:`towers_on_stage`); a release's
    ``input_norm_towers`` add the tower's input normalization (:func:`add_input_norm`).

    :raises InputError: pipeline parallelism where vLLM refuses it, a quantized wrapper (the
        tower's quantized layers are not modelled), checkpoint headers (not mapped), a missing
        ``vision_config``."""

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        arch = _arch(config)
        config_only(config, args)
        if par.pp > 1 and pp_refused is not None:
            raise InputError("--pipeline-parallel-size", None, f"{arch}: {pp_refused}")
        quant = W.quant_from_config(config, args.hf_quant)
        if quant.method is not None and (quantized is None or not quantized(quant)):
            raise InputError(
                "quantization_config", "quant_method", f"quantized {arch} layouts are not modelled (unquantized only)"
            )
        text = config.get("text_config") if text_of is None else text_of(config)
        if not isinstance(text, Mapping) and text_of is not None:
            # a wrapper whose text model lives in a sub-config: without it vLLM would build its
            # config class's defaults (or fetch another repository's), not this checkpoint's
            raise InputError("config.json", None, f"{arch}: the language model's config object is missing")
        if not isinstance(text, Mapping):
            text = {k: v for k, v in config.items() if k != "vision_config"}
        kept = ("tie_word_embeddings", "torch_dtype", *(("quantization_config",) if quant.method else ()))
        outer = {k: config[k] for k in kept if k in config}
        text = {**outer, **text}
        if prepare is not None:
            text = prepare(text)
        if isinstance(text_architecture, Family):
            weights = text_architecture.walk({**text, "architectures": [arch]}, par, args)
        else:
            weights = _text(text, text_architecture, par, args)
        if args.no_tower or not towers_on_stage(arch, par):
            return weights
        vision = config.get("vision_config") if tower_of is None else tower_of(config)
        if not isinstance(vision, Mapping):
            raise InputError("config.json", "vision_config", f"{arch} needs a vision_config object")
        ab = W.model_dtype_bytes(text, args.dtype)
        rules = rules_for(par.vllm_version)
        if arch in rules.input_norm_towers:
            add_input_norm(weights)
        # --mm-encoder-tp-mode data: the tower unsharded on every TP rank (its class supports it)
        tp = 1 if whole_tower(arch, par.mm_encoder_tp_mode, par.vllm_version) else par.tp
        if not isinstance(tower, tuple):
            weights = merged(weights, tower(vision, text, tp, ab))
            return weights if split_in_data is None else merged(weights, split_in_data(vision, text, par.tp, ab))
        for mods, part in tower:
            if not all(m in args.zero_modalities for m in mods):
                weights = merged(weights, part(vision, text, tp, ab))
        return weights

    if isinstance(tower, tuple):
        modalities = tuple(m for mods, _ in tower for m in mods)
    return Family(walk, modalities)


@dataclass(frozen=True)
class Layout:
    """What one decoder layer (and the model around it) allocates, for the families whose vLLM
    classes differ from Llama's only in names, biases, norms and the MLP's kind; each family's
    module gives its own :class:`Layout` (and a ``prepare`` that reads its config class's field
    names and defaults into the walk's: ``hidden_size``, ``num_hidden_layers``,
    ``num_attention_heads``, ``num_key_value_heads``, ``head_dim``, ``intermediate_size``,
    ``vocab_size``, ``max_position_embeddings``).

    ``qkv``: ``fused`` (one ``QKVParallelLinear``), ``separate`` (three allocations: the
    Transformers modeling backend's ``q_proj`` / ``k_proj`` / ``v_proj``); ``qkv_bias`` /
    ``o_bias``: the config key that turns the bias on, or ``True`` / ``False``; ``qk_norm``:
    ``head`` (``[head_dim]`` each), ``whole`` (``[heads x head_dim]`` and ``[kv_heads x head_dim]``,
    replicated), or ``None``; ``norms``: RMS/LayerNorms per layer (``norm_bias``: LayerNorms with a
    bias, the final norm too); ``mlp``: ``gated`` (``gate_up_proj`` ``[2 I / TP, H]``), ``plain``
    (``up_proj`` ``[I / TP, H]``) or ``None``, ``mlp_bias``; ``tied``: the default of
    ``tie_word_embeddings``; ``head_bias``: the LM head's bias (``[vocab padded / TP]``); ``rope``:
    ``table`` (one ``cos_sin_cache`` in the model dtype, ``rotary_dim = head_dim x
    partial_rotary_factor``), ``hf`` (the Transformers backend's float32 ``inv_freq`` and
    ``original_inv_freq`` ``[rotary_dim / 2]``; ``hf_rope_by_layer_type``: one such pair per
    distinct entry of ``layer_types``, as OLMo-3's and Mellum's transformers classes build them) or
    ``None``; ``scalars``: scalar buffers in the model dtype beside the embedding (Gemma's
    ``normalizer``); ``attention_scales``: vLLM's ``Attention`` scale buffers per layer;
    ``every_stage``: the embedding, final norm and LM head built on every pipeline stage (no
    ``PPMissingLayer``); ``moe``: ``(config, layer index) -> bool`` for the layers whose MLP is a
    ``FusedMoE`` block (router ``[E, H]`` (+ ``router_bias``), ``w13`` / ``w2``, and a gated shared
    MLP of ``shared(config)`` width); ``head_vector``: ``(config, layer index) -> bool`` for the layers
    whose attention holds a per-head vector (``[heads / TP]`` in the model dtype: Granite-SWA's sinks,
    Beam's gate bias); ``sinks``: ``(config, layer index) -> bool`` for the layers whose attention
    takes per-head sinks (vLLM's ``Attention(sinks=...)``): where given, the walk asks about vLLM
    0.33.0's FlashInfer KV counter with every layer's query heads, head size and sinks
    (``weights.flashinfer_counter_layers``: FlashInfer serves sinks on SM 10.x / 12.x with
    ``flashinfer-cubin``; recorded: Granite-SWA / Granite-MoE-SWA, ``quant_cases_sinksfam.py``);
    ``rope_bytes``: the rotary table's element size where it is not the model
    dtype's (Beam's float32 table); ``score_bias_buffer``: the float32 ``e_score_correction_bias``
    ``[E]`` (``score_bias``) is a buffer, not a parameter (transformers' routers, e.g. Kolibri-1's);
    ``attention_replicated``: every projection of the attention whole on each TP rank
    (``ReplicatedLinear``: the Transformers backend's unfused attention of a model without a TP
    plan, HunYuan-VL's on 0.29 / 0.30); ``backend_attention_whole``: the transformers class gives its
    attention no TP plan, so the Transformers backend before 0.30 keeps its q/k/v/o projections whole
    on every rank (:func:`backend_layout`: HunYuan V1's); ``kv_rows_split``: a fused ``qkv_proj``
    whose key / value rows are split evenly over TP, replicating no KV head (the Transformers
    backend of 0.30.0 where TP exceeds the KV heads, :func:`backend_layout`); ``qk_norm_bias``:
    ``head`` QK-norms that are LayerNorms with a bias (two more ``[head_dim]``: Bailing-MoE's without
    ``use_rmsnorm``); ``shared_bias``: the shared MLP's biases (the config key that turns them on, or
    ``True`` / ``False``: Bailing-MoE's ``BailingMLP`` under ``use_bias``).
    """

    qkv: str = "fused"
    qkv_bias: str | bool = False
    o_bias: str | bool = False
    qk_norm: str | None = None
    qk_norm_bias: bool = False
    norms: int = 2
    norm_bias: bool = False
    mlp: str | None = "gated"
    mlp_bias: str | bool = False
    tied: bool = False
    head_bias: bool = False
    rope: str | None = "table"
    scalars: int = 0
    attention_scales: bool = True
    every_stage: bool = False
    moe: Callable[[Mapping[str, Any], int], bool] | None = None
    router_bias: bool = False
    shared: Callable[[Mapping[str, Any]], int] | None = None
    router_fp32: bool = False
    score_bias: bool = False
    experts_key: str = "num_experts"
    moe_inter_key: str = "moe_intermediate_size"
    final_norm: bool = True
    dense_inter_key: str = "intermediate_size"
    tp_over_experts_refused: bool = False
    attributes: Callable[[Mapping[str, Any], int, int], tuple[int, ...]] | None = None
    uses_rope: Callable[[Mapping[str, Any], int], bool] | None = None
    learned_positions: Callable[[Mapping[str, Any]], int] | None = None
    rope_tables: Callable[[Mapping[str, Any], range], int] | None = None
    stage_needs_moe: bool = False
    output_gate: bool = False
    hf_rope_by_layer_type: bool = False
    head_vector: Callable[[Mapping[str, Any], int], bool] | None = None
    sinks: Callable[[Mapping[str, Any], int], bool] | None = None
    rope_bytes: int | None = None
    score_bias_buffer: bool = False
    attention_replicated: bool = False
    backend_attention_whole: bool = False
    kv_rows_split: bool = False
    shared_bias: str | bool = False


def no_sinks(config: Mapping[str, Any], li: int) -> bool:
    """``Layout.sinks`` of a family whose attention takes no sinks: the walk still asks about vLLM
    0.33.0's FlashInfer KV counter with every layer's heads and head size (no sinks)."""
    return False


def _flag(config: Mapping[str, Any], v: str | bool) -> bool:
    return bool(config.get(v)) if isinstance(v, str) else v


def backend_served(architecture: str, version: str) -> bool:
    """Whether release ``version`` serves ``architecture`` through its Transformers modeling
    backend with vLLM's attention layers (switch ``transformers_backend_vllm_attention``, 0.30+;
    ``registry.py`` maps the architecture to ``transformers/``)."""
    rules = rules_for(version)
    if not rules.transformers_backend_vllm_attention:
        return False
    return on_backend(architecture, version)


def on_backend(architecture: str, version: str) -> bool:
    """Whether release ``version``'s ``registry.py`` maps ``architecture`` to its Transformers
    modeling backend (``transformers/``), on any release (:func:`backend_layout` builds the
    release's layout)."""
    return str(release_registry_file(architecture, version) or "").startswith("transformers")


def backend_layout(layout: Layout, config: Mapping[str, Any], version: str) -> Layout:
    """``layout`` as the Transformers modeling backend of release ``version`` builds it:
    transformers' rotary buffers (``inv_freq`` / ``original_inv_freq`` float32 ``[rotary_dim / 2]``,
    no vLLM table) and a ``ParallelLMHead`` without bias; on 0.30+ (switch
    ``transformers_backend_vllm_attention``) one ``qkv_proj`` (``QKVParallelLinear``; biased
    projections stay three before 0.31, switch ``transformers_backend_fuses_biased_qkv``) and vLLM's
    ``Attention`` with its scale buffers per layer; before, transformers' attention modules with
    vLLM's linear layers swapped in: ``q_proj`` / ``k_proj`` / ``v_proj`` three allocations, no
    scale buffers (0.27.1-0.29.0; recorded on 0.28.0 and 0.29.0). On every release the embedding on
    the first stage only and the final norm and head on the last; on 0.28.0-0.30.0 (switch
    ``backend_text_attention_whole``) an attention the class's TP plan leaves out
    (``backend_attention_whole``) whole on every rank, and on 0.30.0 a fused ``qkv_proj``'s key /
    value rows split over a TP above the KV heads (``kv_rows_split``); 0.31+ replicate KV heads as
    vLLM's own classes do (recorded on 0.29.0-0.33.0, every flag set)."""
    rules = rules_for(version)
    # 0.28.0-0.30.0 (switch backend_text_attention_whole) keep an attention without a TP plan whole;
    # 0.31+ fuse it into a split QKVParallelLinear of the heads (recorded on 0.29.0-0.33.0)
    whole = layout.backend_attention_whole and rules.backend_text_attention_whole
    vllm_attention = rules.transformers_backend_vllm_attention
    qkv, kv_rows_split = "separate", layout.kv_rows_split
    if vllm_attention:
        fused = not (_flag(config, layout.qkv_bias) or whole) or rules.transformers_backend_fuses_biased_qkv
        qkv, kv_rows_split = "fused" if fused else "separate", rules.backend_text_attention_whole
    return replace(
        layout,
        qkv=qkv,
        rope="hf",
        attention_scales=vllm_attention,
        rope_tables=None,
        head_bias=False,
        every_stage=False,
        attention_replicated=whole,
        kv_rows_split=kv_rows_split,
        stage_needs_moe=False,
    )


def decoder(
    layout: Layout,
    prepare: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
    refused: tuple[str, ...] = (),
    *,
    backend: Layout | None = None,
    backend_prepare: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
) -> Family:
    """A decoder-only family of :class:`Layout` (one rank of one pipeline stage), unquantized and
    from the config only. ``refused``: config fields whose truth adds what the layout lacks.
    On a release that serves the architecture through its Transformers modeling backend
    (:func:`on_backend`): :func:`backend_layout` of ``backend`` (``layout`` when not given),
    the config read by ``backend_prepare`` (transformers' config class) when given.

    :raises InputError: a quantization method, checkpoint headers, a ``refused`` field, heads or
        sizes TP does not divide, expert parallelism without experts (vLLM refuses it)."""

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        arch = _arch(config)
        config_only(config, args)
        if W.quant_from_config(config, args.hf_quant).method is not None:
            raise InputError(
                "quantization_config", "quant_method", f"quantized {arch} layouts are not modelled (unquantized only)"
            )
        lay, prep = layout, prepare
        served = on_backend(arch, par.vllm_version)
        if served:
            prep = backend_prepare or prepare
        if prep is not None:
            config = prep(config)
        if served:
            lay = backend_layout(backend or layout, config, par.vllm_version)
        for key in refused:
            if config.get(key):
                raise InputError("config.json", key, f"{arch} with {key} is not modelled")
        rank = _decoder_rank(lay, config, par, W.model_dtype_bytes(config, args.dtype))
        if lay.sinks is not None:
            _sink_counter(rank, lay.sinks, config, par, args.max_num_batched_tokens)
        return rank

    return Family(walk)


def _decoder_rank(lay: Layout, config: Mapping[str, Any], par: W.Parallel, ab: int) -> W.RankWeights:
    tp = par.tp
    h = W._int(config, "hidden_size")
    nq = W._int(config, "num_attention_heads")
    nkv = W._int(config, "num_key_value_heads", nq)
    hd = config.get("head_dim") or h // nq
    if type(hd) is not int:
        raise InputError("config.json", "head_dim", "not an integer")
    if lay.attention_replicated:
        nq_r, nkv_r = nq, nkv
    else:
        nq_r, nkv_r = W._divide(nq, tp, "num_attention_heads"), W.kv_heads_per_rank(nkv, tp)
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    tied = bool(config.get("tie_word_embeddings", lay.tied))
    w = W._Walk(None, par.vllm_version)
    first, last = par.pp_rank == 0, par.pp_rank == par.pp - 1
    has_embed, has_head = first or lay.every_stage, last or lay.every_stage
    if has_embed:
        w.own("embedding", vocab_r * h * ab)
    if has_embed and lay.learned_positions is not None:
        w.own("embedding", lay.learned_positions(config) * h * ab)
    if has_head and (not tied or not has_embed):
        w.own("lm_head", vocab_r * h * ab)  # a tied head on a later stage holds its own copy
    if has_head and lay.head_bias:
        w.own("lm_head", vocab_r * ab)
    if has_head and lay.final_norm:
        w.own("norm", h * ab)
        if lay.norm_bias:
            w.own("norm", h * ab)
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    if lay.moe is not None and par.expert_parallel and not any(lay.moe(config, li) for li in range(len(layers) + 1)):
        raise InputError("--enable-expert-parallel", None, f"{_arch(config)} has no experts: vLLM refuses it")
    if lay.stage_needs_moe and lay.moe is not None and not any(lay.moe(config, li) for li in layers):
        raise InputError(
            "--pipeline-parallel-size",
            None,
            f"a stage without MoE layers: vLLM refuses {_arch(config)} (No MoE layer found)",
        )
    qkv = (nq_r * hd, nkv_r * hd, nkv_r * hd)
    for li in layers:
        for _ in range(lay.norms * (2 if lay.norm_bias else 1)):
            w.own("norm", h * ab)
        if lay.qkv == "fused" and lay.kv_rows_split and not lay.attention_replicated:
            kv_rows = W._divide(nkv * hd, tp, "the key/value projection rows")
            w.own("attention", (nq_r * hd + 2 * kv_rows) * h * ab)
            if _flag(config, lay.qkv_bias):
                w.own("bias", (nq_r * hd + 2 * kv_rows) * ab)
        elif lay.qkv == "fused":
            w.own("attention", sum(qkv) * h * ab)
            if _flag(config, lay.qkv_bias):
                w.own("bias", sum(qkv) * ab)
        else:
            # the Transformers backend column-splits k_proj / v_proj rows over TP, replicating no
            # KV head (a head split across ranks when TP exceeds the KV heads)
            kv_rows = nkv * hd if lay.attention_replicated else W._divide(nkv * hd, tp, "the key/value projection rows")
            rows = (nq_r * hd, kv_rows, kv_rows)
            for part in rows:
                w.own("attention", part * h * ab)
                if _flag(config, lay.qkv_bias):
                    w.own("bias", part * ab)
        w.own("attention", h * nq_r * hd * ab)
        if lay.head_vector is not None and lay.head_vector(config, li):
            w.own("attention", nq_r * ab)
        if lay.output_gate:
            w.own("attention", nq_r * hd * h * ab)
        if _flag(config, lay.o_bias):
            w.own("bias", h * ab)
        if lay.qk_norm == "head":
            for _ in range(4 if lay.qk_norm_bias else 2):
                w.own("norm", hd * ab)
        elif lay.qk_norm == "whole":
            w.own("norm", nq * hd * ab)
            w.own("norm", nkv * hd * ab)
        for nbytes in lay.attributes(config, li, hd) if lay.attributes is not None else ():
            w.ref.allocated_bytes += -(-nbytes // W.ALLOC_ROUND) * W.ALLOC_ROUND
        if lay.attention_scales:
            w.own("attention scales", 16, buffer=True)
            w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
        if lay.moe is not None and lay.moe(config, li):
            _moe_block(w, lay, config, par, h, ab)
        elif lay.mlp is not None:
            _dense_mlp(w, lay.mlp, _flag(config, lay.mlp_bias), h, W._int(config, lay.dense_inter_key), tp, ab)
    if lay.uses_rope is not None:
        layers = range(0) if not any(lay.uses_rope(config, li) for li in layers) else layers
    if layers and lay.rope == "table":
        for _ in range(lay.rope_tables(config, layers) if lay.rope_tables is not None else 1):
            w.own("rotary", W._rotary_bytes(config, hd, lay.rope_bytes or ab), buffer=True)
    elif layers and lay.rope == "hf":
        half = int(hd * float(config.get("partial_rotary_factor", 1.0))) // 2
        kinds = config.get("layer_types") if lay.hf_rope_by_layer_type else None
        for _ in range(len(set(kinds)) if isinstance(kinds, list) and kinds else 1):
            w.own("rotary", 4 * half, buffer=True)
            w.own("rotary", 4 * half, buffer=True)
    # the embedding's scale, with the embedding or a tied head's copy of it
    for _ in range(lay.scalars if has_embed or (tied and has_head) else 0):
        w.own("normalizer", ab, buffer=True)
    return w.result()


def _sink_counter(
    rank: W.RankWeights,
    sinks: Callable[[Mapping[str, Any], int], bool],
    config: Mapping[str, Any],
    par: W.Parallel,
    max_num_batched_tokens: int | None,
) -> None:
    """FlashInfer's KV counter of a stage whose layers may take attention sinks (``sinks``: which):
    every layer's (query heads per rank, head size, sinks) to ``weights.flashinfer_counter_layers``,
    the head size as :func:`_decoder_rank` reads it.

    :raises InputError: a FlashInfer layer and ``max_num_batched_tokens`` not given."""
    nq = W._int(config, "num_attention_heads")
    hd = config.get("head_dim") or W._int(config, "hidden_size") // nq
    nq_r = W._divide(nq, par.tp, "num_attention_heads")
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    W.flashinfer_counter_layers(rank, par, max_num_batched_tokens, [(nq_r, hd, sinks(config, li)) for li in layers])


def _dense_mlp(w: W._Walk, kind: str, bias: bool, h: int, inter: int, tp: int, ab: int) -> None:
    """``gated``: ``gate_up_proj`` ``[2 I / TP, H]``, ``down_proj`` ``[H, I / TP]``; ``plain``:
    ``up_proj`` ``[I / TP, H]`` and ``down_proj``; biases: the column layer's split, the row
    layer's whole."""
    i_r = W._divide(inter, tp, "intermediate_size")
    up = (2 if kind == "gated" else 1) * i_r
    w.own("mlp", up * h * ab)
    if bias:
        w.own("bias", up * ab)
    w.own("mlp", h * i_r * ab)
    if bias:
        w.own("bias", h * ab)


def _moe_block(w: W._Walk, lay: Layout, config: Mapping[str, Any], par: W.Parallel, h: int, ab: int) -> None:
    """A ``FusedMoE`` block: the router (``ReplicatedLinear`` ``[E, H]``), the experts
    (``weights.experts_bytes``), a gated shared MLP, the expert map under expert parallelism."""
    e = W._int(config, lay.experts_key)
    inter = W._int(config, lay.moe_inter_key)
    if lay.tp_over_experts_refused:
        W.refuse_tp_above_experts(par.tp, e)
    w.own("router", e * h * (4 if lay.router_fp32 else ab))
    if lay.router_bias:
        w.own("router", e * ab)
    if lay.score_bias:
        w.own("router", 4 * e, buffer=lay.score_bias_buffer)
    shared = lay.shared(config) if lay.shared is not None else 0
    if shared:
        _dense_mlp(w, "gated", _flag(config, lay.shared_bias), h, shared, par.tp, ab)
    e_r, i_r = W.experts_per_rank(e, inter, par.tp, par, "the experts' intermediate size")
    for kind, nbytes in W.experts_bytes(W.Quant(), e_r, h, i_r, ab):
        w.own(kind, nbytes)
    if par.expert_parallel:
        w.own("expert map", 4 * e, buffer=True)


def wrapped_text_architecture(config: Mapping[str, Any], arch: str) -> str:
    """The architecture vLLM builds as the language model of a wrapper that hands its text config
    to ``init_vllm_registered_model`` as is: the text config's ``architectures`` (one the planner's
    ``WRAPPERS`` entry accepts), else the causal-LM class of its ``model_type`` (the wrapper's own
    ``model_type`` standing for its config class's default text model), as
    :data:`dryboot.vllm.models.wrappers.WRAPPERS` says.

    :raises InputError: a language model that table does not list (named)."""
    allowed = WRAPPERS[arch][1]
    text = config.get("text_config")
    text = text if isinstance(text, Mapping) else {}
    named = text.get("architectures")
    if isinstance(named, list) and named:
        kind, inner = str(named[0]), (str(named[0]) if str(named[0]) in allowed.values() else None)
    else:
        kind = str(text.get("model_type") or config.get("model_type") or "")
        inner = allowed.get(kind)
    if inner is None:
        raise InputError(
            "config.json", "text_config.model_type", f"{arch} with a {kind!r} language model is not modelled"
        )
    return inner


def towers_on_stage(arch: str, par: W.Parallel) -> bool:
    """Whether ``par``'s pipeline stage builds the wrapper's encoder towers: every stage, or the
    first alone where the release's V2 model runner skips them on later stages
    (``VersionRules.pp_towers_first_stage``; a speculative method that keeps the V1 runner, e.g.
    ``suffix``, builds them on every stage: not distinguished here)."""
    rules = rules_for(par.vllm_version)
    return par.pp_rank == 0 or not rules.pp_towers_first_stage


def routed_experts_bytes(
    quant: W.Quant,
    ex: str,
    e: int,
    h: int,
    i_r: int,
    ab: int,
    check_scheme: Callable[[ScaledScheme], None] | None = None,
    *,
    plain_swiglu: bool = False,
) -> list[tuple[str, int]]:
    """The routed experts of one MoE layer after loading, ``(name, bytes)`` per tensor (``ex``: the
    experts' module name, ``e`` experts of hidden size ``h`` and intermediate size ``i_r`` per rank,
    ``ab`` bytes of the model dtype): unquantized as created (``weights.experts_bytes``), weight-only
    integer through the fused MoE Marlin backend (``auto_gptq.wna16_experts_bytes``), ModelOpt
    (``modelopt.modelopt_experts_bytes``), compressed-tensors / plain fp8 schemes
    (``fused_moe.scaled_experts_bytes``); experts the checkpoint's ignore list leaves unquantized as
    created. ``check_scheme``: a family's refusal of a scheme it has not checked. ``plain_swiglu``:
    gated experts without SwiGLU limits, in a case the family has checked (ModelOpt NVFP4 on SM 10.x,
    0.27-0.33: FlashInfer TRT-LLM's layout, ``modelopt.trtllm_nvfp4_experts_bytes``; otherwise refused
    there).

    :raises InputError: what ``check_scheme`` and the experts' own functions refuse."""
    if quant.method is None:
        return W.experts_bytes(W.Quant(), e, h, i_r, ab)
    if quant.wna16 is not None:
        return wna16_experts_bytes(quant.wna16, ex, e, h, i_r, ab)
    if isinstance(quant.scaled, ModelOptQuant):
        return modelopt_experts_bytes(quant.scaled, ex, e, h, i_r, fp8_act_bytes=ab, plain_swiglu=plain_swiglu)
    assert quant.scaled is not None
    scheme = quant.scaled.layer_scheme(ex, tuple(f"{ex}.0.{n}" for n in ("gate_proj", "up_proj", "down_proj")))
    if scheme is None:
        return W.experts_bytes(W.Quant(), e, h, i_r, ab)
    if check_scheme is not None:
        check_scheme(scheme)
    return scaled_experts_bytes(quant.scaled, scheme, e, h, i_r, ab)
