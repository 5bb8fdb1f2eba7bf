"""The encoder towers' tensor-parallel check under ``--mm-encoder-tp-mode`` (vLLM's
``ModelConfig.__post_init__`` fallback and the towers' ``disable_tp`` layers): which of a model's
sharded tower dimensions vLLM still splits over TP, read by :meth:`Family.built_towers`
(:mod:`dryboot.vllm.models.registry`) for every family."""

from __future__ import annotations

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ModelGeometry
from dryboot.vllm.config.mm_encoder_tp import support, unsharded_tower
from dryboot.vllm.engine_args import EngineArgs


def data_mode_towers(model: ModelGeometry, args: EngineArgs) -> ModelGeometry:
    """``--mm-encoder-tp-mode data``: a tower vLLM builds unsharded (``disable_tp``: its class has
    ``supports_encoder_tp_data``) has no dimension to divide by TP; a supporting class dryboot
    has not read so (:data:`~dryboot.vllm.config.mm_encoder_tp.UNSHARDED_DATA_TOWERS`) is refused by
    name where a tower dimension TP does not divide (vLLM would build it); a class without the flag
    falls back to ``weights`` (the check stays).

    :raises InputError: that refusal, naming the dimension."""
    if not model.parallel.tower_heads or args.mm_encoder_tp_mode != "data":
        return model
    if unsharded_tower(model.architecture, args.mm_encoder_tp_mode, args.vllm_version):
        return model.evolve(tower_heads=())
    if support(model.architecture, args.vllm_version) == "fallback":
        return model
    tp = args.tensor_parallel_size
    for path, size in model.parallel.tower_heads:
        if size % tp:
            raise InputError(
                model.source,
                path,
                f"{size} is not divisible by tensor parallel size {tp}: with --mm-encoder-tp-mode data vLLM's "
                f"{model.architecture} (supports_encoder_tp_data) builds its tower unsharded, at least in part; "
                "whether it builds at this TP is not modelled for it",
            )
    return model
