"""How a family outside the walk's own table is built: a :class:`Family` per architecture, and
the two compositions vLLM uses: a vision-language wrapper (``init_vllm_registered_model`` on the
text config, plus a tower and projector of its own: :func:`vision_language`) and a decoder whose
parameters are another architecture's (:func:`built_as`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.model_loader.weights import WalkArgs as WalkArgs

#: a tower and its projector on one rank: (vision config, text config, TP size, bytes per element)
#: -> what it allocates
Tower = Callable[[Mapping[str, Any], Mapping[str, Any], int, int], W.RankWeights]


@dataclass(frozen=True)
class Family:
    """One architecture's weights: ``walk(config, rank, args) -> RankWeights``; ``modalities``:
    what its tower takes (``--limit-mm-per-prompt`` 0 for all of them drops the tower)."""

    walk: Callable[[Mapping[str, Any], W.Parallel, WalkArgs], W.RankWeights]
    modalities: tuple[str, ...] = ()


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


def config_only(config: Mapping[str, Any], args: WalkArgs) -> None:
    if args.tensors is not None:
        raise InputError(
            "safetensors headers",
            None,
            f"the checkpoint tensors of {_arch(config)} are not mapped yet (--load-format dummy: the figure from "
            "the config)",
        )


def _text(config: Mapping[str, Any], architecture: str, par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """The walk over ``config`` built as ``architecture``."""
    text = {**config, "architectures": [architecture]}
    return W._walk(text, par, args.hf_quant, args.dtype, None, True, args.max_num_batched_tokens)


def built_as(
    architecture: str,
    *,
    prepare: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
    refused: tuple[str, ...] = (),
    required: tuple[str, ...] = (),
    extra: Callable[[Mapping[str, Any], W.Parallel, int], W.RankWeights] | None = None,
) -> Family:
    """A decoder whose vLLM model class allocates what ``architecture``'s does for the same
    config (its checkpoint names may differ, e.g. fused ``qkv_proj``: from the config only).
    ``prepare``: the family's reading of its config (defaults its config class sets);
    ``refused``: fields whose truth adds parameters that layout lacks, ``required``: fields
    whose falsehood removes some (each refused by name); ``extra``: what the family adds to that
    layout on the rank, ``(config, rank, bytes per element)``.

    :raises InputError: a ``refused`` field true or a ``required`` one false (named)."""

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
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


def vision_language(
    text_architecture: str,
    tower: Tower,
    modalities: tuple[str, ...] = ("image", "video"),
    prepare: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
    pp_refused: str | None = None,
) -> Family:
    """A vision-language wrapper as vLLM composes it: the language model of ``text_config`` (or,
    in the older single-level configs, the config's own text fields) built as
    ``text_architecture`` (the wrapper's ``tie_word_embeddings`` and dtype when the text config
    has none; ``prepare``: the family's reading of its text config), then ``tower`` over
    ``vision_config`` on every TP rank, unless the tower is off (``--language-model-only``, or
    ``--limit-mm-per-prompt`` 0 for every modality it takes).

    Under pipeline parallelism each stage's rank holds the tower and the text model's share of
    the stages (embedding on the first, norm and head on the last, as the text architecture
    places them); ``pp_refused``: why vLLM refuses the wrapper under pipeline parallelism.

    :raises InputError: pipeline parallelism where vLLM refuses it, a quantized wrapper (the
        tower's quantized layers are not modelled), checkpoint headers (not mapped), a missing
        ``vision_config``."""

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        arch = _arch(config)
        config_only(config, args)
        if par.pp > 1 and pp_refused is not None:
            raise InputError("--pipeline-parallel-size", None, f"{arch}: {pp_refused}")
        if W.quant_from_config(config, args.hf_quant).method is not None:
            raise InputError(
                "quantization_config", "quant_method", f"quantized {arch} layouts are not modelled (unquantized only)"
            )
        text = config.get("text_config")
        if not isinstance(text, Mapping):
            text = {k: v for k, v in config.items() if k != "vision_config"}
        outer = {k: config[k] for k in ("tie_word_embeddings", "torch_dtype") if k in config}
        text = {**outer, **text}
        if prepare is not None:
            text = prepare(text)
        weights = _text(text, text_architecture, par, args)
        if args.no_tower:
            return weights
        vision = config.get("vision_config")
        if not isinstance(vision, Mapping):
            raise InputError("config.json", "vision_config", f"{arch} needs a vision_config object")
        return merged(weights, tower(vision, text, par.tp, W.model_dtype_bytes(text, args.dtype)))

    return Family(walk, modalities)
