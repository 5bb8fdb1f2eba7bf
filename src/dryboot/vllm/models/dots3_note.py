"""Dots3-Note (``Dots3NoteForCausalLM``; vLLM 0.33.0's ``vllm/models/dots3_note/nvidia``, config
class vLLM's own ``Dots3NoteConfig``, a ``DeepseekV3Config``, model_type ``dots3_note``).

* ``layer_types[i]`` decides each decoder layer: ``sliding_attention`` builds
  ``Dots3NoteSlidingAttention``, an MLA layer of the ``swa_*`` dims kept for
  ``sliding_window_size`` tokens (a ``SlidingWindowMLASpec`` of one
  ``swa_kv_lora_rank + swa_qk_rope_head_dim`` head, on the model's own Triton MLA backend);
  ``full_attention`` builds ``Dots3NoteFullAttention``, DeepSeek-V3.2's sparse MLA with its
  indexer key cache (``<layer>.self_attn.indexer.k_cache``: ``index_head_dim`` fp8 bytes and a
  4-byte scale per 128 a token, ``MultipleOf(64)``) and its latent rows padded to the sliding
  layers' width (``Dots3NotePaddedMLAAttention``: an ``MLAAttentionSpec`` whose head is
  ``swa_kv_lora_rank + swa_qk_rope_head_dim``, on ``DOTS3_NOTE_PADDED_MLA_SPARSE``; its blocks
  aligned to one row, ``align_blocks_to_rows``).
* The padded backend and the indexer ask for the block-outermost ``BLHNC`` layout, so vLLM 0.33.0
  packs the mixed pages by repeat pattern (:mod:`dryboot.vllm.kv_cache_utils.repeat_packed`): the
  sliding layers' buckets, the indexer caches with the padded rows in one MLA bucket; the pool's
  bytes per block the widest group's pages rounded up to the lcm of one padded row (its bytes a
  token) and the indexer's 64-token page where the block exceeds 64.
* Planned on vLLM 0.33.0 with ``auto`` / ``bfloat16`` KV caches (the sparse backend refuses
  fp8, in its words), bfloat16 and float16 models, blocks of 64 (the default), 128 and 256
  tokens, tensor and pipeline parallelism, the ``extract_hidden_states`` cache (a group of its
  own), on Hopper and Blackwell (recorded: ``tests/fidelity/data/dots3-note/``, and the
  architecture's flag sets in ``data/release-architectures/``). The configs are tiny stand-ins:
  no published config.json of Dots3-Note was found. 0.32.0 has the module, but its engine start
  cannot inspect the class offline: not verified there.

Not modelled (refused by name): the vision and audio towers (a config with ``vision_config`` or
``audio_config``), a quantized checkpoint, MTP on the target (vLLM's engine start on the meta
device fails comparing the drafter's head, so it is not verifiable offline), the MTP drafter as a
model of its own (``Dots3NoteMTPModel``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.backends import BACKENDS, AttentionBackend, KernelBlock
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.config.resolve import EngineConfig
from dryboot.vllm.distributed import pp_stage_ranges
from dryboot.vllm.dtypes import KVQuantMode, dtype_bytes
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import AttentionSpec
from dryboot.vllm.kv_cache_utils.packed import drafter_layers, stage_block_lines
from dryboot.vllm.kv_cache_utils.repeat_packed import POLICY, PackedLayers, group_specs
from dryboot.vllm.models.common import geometry, num_layers
from dryboot.vllm.models.deepseek import defaults as deepseek_defaults
from dryboot.vllm.models.deepseek import indexer_head_size

SLIDING = "sliding_attention"
FULL = "full_attention"
#: the releases whose engine start verified the layout
RELEASES = frozenset({"0.33.0"})
#: the backends vLLM logs choosing the block, in layer order (:func:`block_log_backends`)
SLIDING_BACKEND = "TRITON_MLA"
INDEXER_BACKEND = "DEEPSEEK_V32_INDEXER"
PADDED = AttentionBackend(
    "DOTS3_NOTE_PADDED_MLA_SPARSE",
    (KernelBlock(64, multiple_of=True),),
    False,
    is_mla=True,
    kv_cache_dtypes=frozenset({"auto", "bfloat16"}),
    is_sparse=True,
)
#: the sparse layers' default block (tokens): the indexer and the padded backend's ``MultipleOf(64)``
DEFAULT_BLOCK = 64
#: cache blocks recorded against vLLM 0.33.0's engine start
VERIFIED_BLOCKS = frozenset({64, 128, 256})
#: the indexer's kernel block (``MultipleOf(64)``: its block stride alignment above it)
INDEXER_KERNEL_BLOCK = 64
#: the KV cache dtypes the padded sparse backend builds (``FlashAttnMLASparseImpl``)
KV_DTYPES = frozenset({"auto", "bfloat16"})
#: quantized caches the sparse layers' backend selection passes and ``FlashAttnMLASparseImpl`` refuses
IMPL_REFUSED_DTYPES = frozenset({"fp8", "fp8_e4m3"})
#: quantized caches no sparse MLA backend takes (recorded: vLLM's "No valid attention backend found")
NO_BACKEND_DTYPES = frozenset({"fp8_e5m2", "int4_per_token_head"})
#: GPU generations recorded serving it (H100 / H200, B200, B300)
SERVED_CAPABILITIES = frozenset({(9, 0), (10, 0), (10, 3)})
#: model dtypes the padded sparse backend takes (``supported_dtypes``; both recorded served)
MODEL_DTYPES = frozenset({"bfloat16", "float16"})
#: the token vLLM's model class reads from ``added_tokens.json`` beside the config
IMAGE_PAD = "<|imgpad|>"
_SPARSE_FP8 = "NotImplementedError: FlashAttnMLASparseImpl currently supports only FP16/BF16 KV cache."


@dataclass(frozen=True)
class Dots3NoteCaches(FamilyExtra):
    """What a Dots3-Note config caches.

    :param sliding: per decoder layer, whether it is a sliding-window MLA layer.
    :param sliding_window: ``sliding_window_size`` (tokens).
    :param row: the sliding layers' latent head, ``swa_kv_lora_rank + swa_qk_rope_head_dim``
        (values a token), which the sparse layers' rows are padded to.
    :param index_row: bytes a token of an indexer key cache.
    :param swa_heads: ``swa_num_attention_heads`` (the sliding layers' query heads, before TP).
    """

    sliding: tuple[bool, ...]
    sliding_window: int
    row: int
    index_row: int
    swa_heads: int


def defaults(f: ConfigFields) -> dict[str, Any]:
    """``Dots3NoteConfig``'s cache-relevant defaults: DeepSeek-V3's MLA dims, one MTP layer."""
    return {**deepseek_defaults(f), "num_nextn_predict_layers": 1}


def _layer_types(f: ConfigFields, n: int) -> list[str]:
    """:raises InputError: no ``layer_types`` (the model class reads it), too short, or a type
    other than sliding and full attention."""
    types = f.get("layer_types")
    if not isinstance(types, list) or len(types) < n:
        raise InputError(
            f.source,
            f.where("layer_types"),
            f"Dots3NoteDecoderLayer reads layer_types[i] for each of the {n} layers: a list that long is needed",
        )
    bad = sorted({str(t) for t in types[:n]} - {SLIDING, FULL})
    if bad:
        raise InputError(f.source, f.where("layer_types"), f"{bad}: only {SLIDING} and {FULL} layers are modelled")
    return [str(t) for t in types[:n]]


def _check_added_tokens(f: ConfigFields) -> None:
    """The model class reads the image padding token from ``added_tokens.json`` beside the config
    (a local checkpoint directory only; elsewhere not checked).

    :raises InputError: the file is missing or lacks the token (vLLM's ValueError)."""
    config = Path(f.source)
    if config.name != "config.json" or not config.is_file():
        return
    added = config.parent / "added_tokens.json"
    try:
        tokens = json.loads(added.read_text(encoding="utf-8")) if added.is_file() else {}
    except (OSError, ValueError):
        tokens = {}
    if not isinstance(tokens, dict) or IMAGE_PAD not in tokens:
        raise InputError(
            f.source,
            "added_tokens.json",
            "ValueError: NOTE tokenizer is missing the image padding token (Dots3NoteForCausalLM reads "
            f"{IMAGE_PAD} from added_tokens.json beside config.json)",
        )


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """:raises InputError: what vLLM refuses of the config (named with its words) or dryboot does
    not plan (towers, a quantized checkpoint, a config without a full_attention layer)."""
    n = num_layers(f)
    for key in ("vision_config", "audio_config"):
        if f.get(key) is not None:
            raise InputError(
                f.source,
                f.where(key),
                f"{architecture}'s {key.split('_')[0]} tower is not modelled (planned: the language model's caches)",
            )
    if f.get("quantization_config") is not None:
        raise InputError(
            f.source, f.where("quantization_config"), f"a quantized {architecture} checkpoint is not verified"
        )
    _check_added_tokens(f)
    types = _layer_types(f, n)
    sliding = tuple(t == SLIDING for t in types)
    if all(sliding):
        raise InputError(
            f.source,
            f.where("layer_types"),
            "no full_attention (sparse MLA) layer: the sliding layers alone are not verified against vLLM 0.33.0",
        )
    if f.get("q_lora_rank") is None or f.get("index_topk") is None:
        raise InputError(
            f.source,
            f.where("index_topk"),
            "its full_attention layers are DeepSeek-V3.2 sparse MLA: index_topk and q_lora_rank are needed",
        )
    rope = f.integer("qk_rope_head_dim", minimum=0)
    latent = f.integer("kv_lora_rank") + rope
    dims = (f.integer("qk_nope_head_dim", minimum=0), rope, f.integer("v_head_dim"))
    row = f.integer("swa_kv_lora_rank") + f.integer("swa_qk_rope_head_dim", minimum=0)
    if row < latent:
        raise InputError(
            f.source,
            f.where("swa_kv_lora_rank"),
            f"the sliding layers' latent row ({row}) is narrower than the sparse layers' ({latent}): "
            "Dots3NotePaddedMLAAttention asserts physical_head_size >= head_size",
        )
    caches = Dots3NoteCaches(
        sliding=sliding,
        sliding_window=f.integer("sliding_window_size"),
        row=row,
        index_row=indexer_head_size(f.integer("index_head_dim")),
        swa_heads=f.integer("swa_num_attention_heads"),
    )
    kinds: list[LayerKind] = []
    decoder: list[int] = []
    for i, s in enumerate(sliding):
        for kind in (LayerKind.SLIDING_MLA,) if s else (LayerKind.MLA_INDEXER, LayerKind.MLA):
            kinds.append(kind)
            decoder.append(i)
    return geometry(
        f,
        architecture,
        "dots3_note",
        tuple(kinds),
        heads=(f.integer("num_attention_heads"), 1, latent),
        head_dim_v=0,
        mla_dims=dims,
        indexer_head_size=caches.index_row,
        decoder_layers=tuple(decoder),
        layer_prefix="language_model.model.layers",
        # the MTP module (``Dots3NoteMTP``) is not modelled: --speculative-config mtp is refused by name
        num_mtp_layers=f.integer("num_nextn_predict_layers", minimum=0),
        mtp_kind=None,
        family_extra=caches,
    )


def _caches(model: ModelGeometry) -> Dots3NoteCaches:
    caches = extra_of(model, Dots3NoteCaches)
    if caches is None:
        raise InputError("--model", model.source, f"{model.architecture}: no Dots3-Note caches to plan")
    return caches


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """The heads against TP: the sliding layers assert ``swa_num_attention_heads % tp == 0``
    (``Dots3NoteSlidingAttention``), the sparse layers split ``num_attention_heads``.

    :raises InputError: naming the field and vLLM's AssertionError."""
    caches, tp = _caches(model), tensor_parallel_size
    for field, heads in (
        ("swa_num_attention_heads", caches.swa_heads),
        ("num_attention_heads", model.num_attention_heads),
    ):
        if heads % tp:
            raise InputError(
                model.source,
                field,
                f"{heads} at tensor parallel size {tp}: AssertionError ({heads} heads do not split over {tp} ranks: "
                "the sliding layers assert num_heads % tp_size == 0)"
                if field == "swa_num_attention_heads"
                else f"{heads} at tensor parallel size {tp}: {heads} heads do not split over {tp} ranks",
            )


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """The flags as Dots3-Note's layers take them: they hand themselves their backends.

    :raises InputError: an fp8 KV cache (the padded sparse backend's NotImplementedError), any other
        dtype but ``auto`` / ``bfloat16``, a named backend, decode context parallelism or
        ``--prefix-match-unit`` (not verified)."""
    dtype = args.kv_cache_dtype or "auto"
    arch = model.architecture
    if dtype in IMPL_REFUSED_DTYPES:
        raise InputError("--kv-cache-dtype", dtype, f"{arch}: {_SPARSE_FP8}")
    if dtype in NO_BACKEND_DTYPES:
        raise InputError(
            "--kv-cache-dtype",
            dtype,
            f"{arch}: ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(... "
            f"kv_cache_dtype={dtype}, use_mla=True, ... use_sparse=True ...) (no sparse MLA backend takes it)",
        )
    if dtype not in KV_DTYPES:
        raise InputError("--kv-cache-dtype", dtype, f"{arch}: this KV cache dtype is not verified against vLLM 0.33.0")
    check_gpu(model, args, dtype)
    named = args.attention_backend
    if named is not None and not (BACKENDS.get(named) is not None and BACKENDS[named].is_mla):
        raise InputError(
            "--attention-backend",
            named,
            f"{arch}: ValueError: Selected backend AttentionBackendEnum.{named} is not valid for this configuration "
            "(its sparse MLA layers take MLA sparse backends only)",
        )
    for flag, value, bad in (
        ("--attention-backend", named, named is not None),
        ("--decode-context-parallel-size", args.decode_context_parallel_size, args.decode_context_parallel_size > 1),
        ("--prefix-match-unit", args.prefix_match_unit, args.prefix_match_unit is not None),
    ):
        if bad:
            raise InputError(
                flag, str(value), f"{arch}: its layers' caches under this flag are not verified against vLLM 0.33.0"
            )
    return args


def check_gpu(model: ModelGeometry, args: EngineArgs, kv_cache_dtype: str) -> None:
    """The GPUs its sparse layers build on: the backend vLLM selects for them before handing them the
    padded one (``Dots3NoteFullAttention`` builds DeepSeek's attention first). Recorded: SM 9.0, 10.0
    and 10.3 serve; SM 8.x finds no sparse MLA backend; SM 12.x selects FLASHINFER_MLA_SPARSE_SM120,
    which takes an ``auto`` / fp8 cache as ``fp8_ds_mla`` (``_canonicalize_sparse_mla_kv_cache_dtype``),
    and the padded backend then refuses it.

    :raises InputError: those refusals in vLLM's words; any other GPU generation (not verified)."""
    arch, cap = model.architecture, tuple(args.device.capability)
    if cap in SERVED_CAPABILITIES:
        return
    if cap[0] < 9:
        raise InputError(
            "--gpu",
            args.device.name,
            f"{arch}: ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(... "
            "use_mla=True, ... use_sparse=True ...) (no sparse MLA backend below SM 9.0)",
        )
    if cap[0] == 12 and kv_cache_dtype == "auto":
        raise InputError(
            "--gpu",
            args.device.name,
            f"{arch}: {_SPARSE_FP8} (on SM 12.x its sparse layers select FLASHINFER_MLA_SPARSE_SM120, which takes an "
            "auto KV cache as fp8_ds_mla)",
        )
    raise InputError(
        "--gpu", args.device.name, f"{arch}: SM {cap[0]}.{cap[1]} with a {kv_cache_dtype} KV cache is not verified"
    )


def attention_backend(model: ModelGeometry, requested: str | None) -> AttentionBackend | None:
    """The backend the sparse layers are handed (``Dots3NotePaddedMLAAttention``; the sliding
    layers take the model's Triton MLA backend in the packed plan)."""
    return PADDED


def handed_on_every_gpu(model: ModelGeometry) -> bool:
    """The handed backends were recorded on Hopper (H100, H200) and Blackwell (B200) alike."""
    return True


def kv_cache_layout(model: ModelGeometry) -> str:
    """Dots3-Note's mixed pages take 0.33.0's repeat-pattern packing."""
    return POLICY


def backend_assumption(model: ModelGeometry) -> str | None:
    """Its layers hand themselves their backends."""
    return (
        "Dots3-Note's layers choose their own attention (the sliding layers the model's TRITON_MLA, the sparse ones "
        "DOTS3_NOTE_PADDED_MLA_SPARSE beside DEEPSEEK_V32_INDEXER), whatever --attention-backend names"
    )


def check_block(cfg: EngineConfig) -> int:
    """The cache block (tokens): ``--block-size`` or :data:`DEFAULT_BLOCK`.

    :raises InputError: a block that is not a multiple of 64 on Hopper (the sparse layers find no
        backend: vLLM's ValueError), or one not recorded."""
    block = cfg.args.block_size or DEFAULT_BLOCK
    arch = cfg.model.architecture
    if block % INDEXER_KERNEL_BLOCK and cfg.args.device.capability[0] == 9:
        raise InputError(
            "--block-size",
            str(block),
            f"{arch}: ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(... "
            f"block_size={block}, use_mla=True, ... use_sparse=True ...) (its sparse layers' backends take multiples "
            "of 64 tokens)",
        )
    if block not in VERIFIED_BLOCKS:
        raise InputError(
            "--block-size",
            str(block),
            f"{arch}: blocks {sorted(VERIFIED_BLOCKS)} are verified against vLLM 0.33.0; this one is not modelled",
        )
    return block


def layer_specs(caches: Dots3NoteCaches, block: int, dtype: str) -> dict[str, AttentionSpec]:
    """(layer name -> spec) of every cache, module order: a sliding layer's latent rows
    (``language_model.model.layers.<i>.self_attn.attn``, a ``SlidingWindowMLASpec``); a sparse
    layer's indexer key cache (``.self_attn.indexer.k_cache``, uint8, ``MultipleOf(64)``) then its
    padded latent rows (``.self_attn.attn``, :attr:`Dots3NoteCaches.row` values, aligned to one
    row: ``block_stride_alignment`` 1 token)."""
    out: dict[str, AttentionSpec] = {}

    def spec(kind: LayerKind, head: int, content: int, dtype: str, backend: str, **kw: Any) -> AttentionSpec:
        return AttentionSpec(
            layer_kind=kind,
            block_size=block,
            num_kv_heads=1,
            head_size=head,
            head_size_v=0,
            torch_dtype=dtype,
            kv_cache_dtype=dtype,
            quant_mode=KVQuantMode.NONE,
            content_bytes=content,
            backend=backend,
            indexes_kv_by_block_stride=False,
            **kw,
        )

    row_bytes = caches.row * dtype_bytes(dtype)
    for i, sliding in enumerate(caches.sliding):
        p = f"language_model.model.layers.{i}.self_attn"
        if sliding:
            out[f"{p}.attn"] = spec(
                LayerKind.SLIDING_MLA,
                caches.row,
                row_bytes,
                "bfloat16",
                SLIDING_BACKEND,
                sliding_window=caches.sliding_window,
            )
            continue
        out[f"{p}.indexer.k_cache"] = spec(
            LayerKind.MLA_INDEXER,
            caches.index_row,
            caches.index_row,
            "uint8",
            INDEXER_BACKEND,
            block_stride_alignment=INDEXER_KERNEL_BLOCK,
        )
        out[f"{p}.attn"] = spec(LayerKind.MLA, caches.row, row_bytes, dtype, PADDED.name, block_stride_alignment=1)
    return out


def block_log_backends(sliding: tuple[bool, ...], layers: range) -> list[str]:
    """The backends vLLM 0.33.0 names choosing the block ("for A/B/C backend(s)."), in the order
    the decoder layers of ``layers`` register them (``Platform._find_non_ssm_backends``): a sliding
    layer's ``TRITON_MLA``; a sparse layer's indexer cache, then its padded MLA rows; each name once.

    :param sliding: per decoder layer, whether it is a sliding-window MLA layer.
    :param layers: the decoder layers one worker builds (a pipeline stage's)."""
    out: list[str] = []
    for i in layers:
        for name in [SLIDING_BACKEND] if sliding[i] else [INDEXER_BACKEND, PADDED.name]:
            if name not in out:
                out.append(name)
    return out


def stage_layers(
    specs: dict[str, AttentionSpec], caches: Dots3NoteCaches, args: EngineArgs
) -> list[frozenset[str]] | None:
    """The cache layers each pipeline stage's worker builds (``get_pp_indices``), or ``None``
    without pipeline parallelism.

    :raises InputError: a stage without a sparse layer (not verified: its worker asks for no
        block-outermost layout)."""
    pp = args.pipeline_parallel_size
    if pp <= 1:
        return None
    ranges = pp_stage_ranges(len(caches.sliding), pp, args.pp_layer_partition)
    stages = [frozenset(n for n in specs if int(n.split(".")[3]) in r) for r in ranges]
    without = [s for s, r in enumerate(ranges) if all(caches.sliding[i] for i in r)]
    if without:
        raise InputError(
            "--pipeline-parallel-size",
            str(pp),
            f"stage(s) {without} hold no full_attention (sparse) layer: their workers' KV cache layouts are not "
            "verified against vLLM 0.33.0",
        )
    return stages


def packed_layers(cfg: EngineConfig, log: list[str]) -> PackedLayers:
    """Dots3-Note's caches for the repeat-packed planner: the block, every cache's spec
    (:func:`layer_specs`), the groups (``repeat_packed.group_specs``) and the pipeline stages'
    layers; logs vLLM's block-size line when the block is the default.

    :raises InputError: a release other than 0.33.0, a model dtype other than bfloat16, a drafter
        (not verified; MTP is refused before, by name: :func:`read` leaves its kind unset), or what
        :func:`check_block` and :func:`stage_layers` refuse."""
    model, args, version = cfg.model, cfg.args, cfg.rules.version
    arch = model.architecture
    if version not in RELEASES:
        raise InputError(
            "--vllm-version", version, f"{arch}'s caches on vLLM {version} are not modelled: verified on 0.33.0 only"
        )
    if cfg.model_dtype not in MODEL_DTYPES:
        raise InputError(
            "--dtype", cfg.model_dtype, f"{arch}: a {cfg.model_dtype} model is not verified against vLLM 0.33.0"
        )
    if cfg.drafter is not None and cfg.drafter.method != "extract_hidden_states":
        raise InputError(
            "--speculative-config",
            cfg.drafter.method,
            f"{arch}: its caches beside a drafter are not verified against vLLM 0.33.0 (its MTP module is not "
            "verifiable offline: the engine start on the meta device fails comparing the drafter's head with the "
            "target's, aten::equal)",
        )
    caches = _caches(model)
    block = check_block(cfg)
    specs = layer_specs(caches, block, cfg.model_dtype)
    num_target = len(specs)
    stages = stage_layers(specs, caches, args)
    # the extract_hidden_states cache: a group of its own after the packed ones (``get_kv_cache_groups``)
    _, hidden = drafter_layers(cfg, block)
    groups = group_specs(specs) + tuple((n,) for n, _ in hidden)
    specs.update((n, replace(spec, backend="HIDDEN_STATE")) for n, spec in hidden)
    if args.block_size is None:
        lines = stage_block_lines(cfg, len(caches.sliding), block, lambda r: block_log_backends(caches.sliding, r))
        log.extend(line for line in lines if line not in log)
    return PackedLayers(specs, groups, stages, block, PADDED, cfg.kv_cache_dtype, num_target)
