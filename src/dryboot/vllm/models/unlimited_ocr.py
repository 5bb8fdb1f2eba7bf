"""UnlimitedOCR (``unlimited_ocr.py``, ``UnlimitedOCRForCausalLM``): DeepSeek-OCR's wrapper
(a ``DeepseekOCRForCausalLM`` subclass on ``UnlimitedOCRConfig``, vLLM's ``DeepseekVLV2Config``
with ``rswa_window``) whose language model, DeepSeek-V2 with plain multi-head attention, builds
every attention layer as ``RSWAAttention``. Its ``RSWASpec`` extends ``FullAttentionSpec`` and
is sized at startup as full attention; vLLM names the group ``RSWA`` (the wrapper sets
``full_spec_name`` ``rswa``, :data:`~dryboot.vllm.models.wrappers.BUILT_AS`).

The model's config hook (``UnlimitedOCRForCausalLMConfig.verify_and_update_config`` in
``model_executor/models/config.py``, 0.27.1-0.33.0) decides the engine arguments the layers run
with (:func:`engine_args`); the rest of the family's rules are DeepSeek's
(:mod:`dryboot.vllm.models.deepseek`: :func:`for_release`, :func:`verify_release`).
"""

from __future__ import annotations

from dryboot.errors import InputError
from dryboot.vllm.backends import fa4_available
from dryboot.vllm.config.hf import ModelGeometry
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.models import deepseek
from dryboot.vllm.versions import VersionRules

#: the backends whose R-SWA geometry dryboot models: FlashAttention 4 and Triton's unified kernel
#: (FLEX_ATTENTION, which the hook also configures, and any other named one are refused)
MODELLED_BACKENDS = ("FLASH_ATTN", "TRITON_ATTN")


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """``UnlimitedOCRForCausalLMConfig.verify_and_update_config``: with no
    ``--attention-backend``, ``FLASH_ATTN`` where FlashAttention 4 runs
    (``is_fa_version_supported(4)``: SM 9.x, 10.x, 11.x, the wheel's CuTe kernels present as in
    vLLM's CUDA wheel) with ``flash_attn_version`` forced to 4 (:func:`fa4_all_layers`), else
    ``TRITON_ATTN``; prefix caching off whatever the flags say. Without ``--gpu`` the device is
    dryboot's default GPU (H200: FlashAttention 4), as every backend choice.

    :returns: ``args`` with ``attention_backend`` and ``enable_prefix_caching`` as the hook sets
        them, and vLLM's log lines as notes.
    :raises InputError: ``FLASH_ATTN`` named where FlashAttention 4 does not run (vLLM raises a
        RuntimeError), or a backend whose R-SWA geometry is not modelled.
    """
    capability = args.device.capability
    fa4 = fa4_available(capability)
    backend = args.attention_backend
    notes = list(args.input_notes)
    if backend is None:
        backend = "FLASH_ATTN" if fa4 else "TRITON_ATTN"
        notes.append(
            f"Unlimited-OCR: auto-selected attention backend={backend} (fa4_available={fa4}) "
            f"(vLLM's UnlimitedOCRForCausalLMConfig on SM {capability[0]}.{capability[1]})"
        )
    elif backend == "FLASH_ATTN" and not fa4:
        raise InputError(
            "--attention-backend",
            backend,
            "Unlimited-OCR: --attention-config backend=FLASH_ATTN requires FA4 (rswa_mask_mod), but FA4 is not "
            f"available on this device (SM {capability[0]}.{capability[1]}; vLLM's RuntimeError)",
        )
    elif backend not in MODELLED_BACKENDS:
        raise InputError(
            "--attention-backend",
            backend,
            f"{model.architecture}'s R-SWA layers on {backend} are not modelled (only {', '.join(MODELLED_BACKENDS)})",
        )
    if args.enable_prefix_caching is not False:
        notes.append("Unlimited-OCR: prefix caching disabled (R-SWA decode KV is not a pure function of the prefix)")
    return args.evolve(attention_backend=backend, enable_prefix_caching=False, input_notes=tuple(notes))


def fa4_all_layers(model: ModelGeometry, requested: str | None) -> bool:
    """On ``FLASH_ATTN`` the hook forces ``flash_attn_version`` 4 for every layer (the R-SWA
    mask needs FlashAttention 4)."""
    return requested in (None, "FLASH_ATTN")


def for_release(model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
    """As DeepSeek's (:func:`dryboot.vllm.models.deepseek.for_release`)."""
    return deepseek.for_release(model, rules)


def verify_release(model: ModelGeometry, rules: VersionRules) -> None:
    """As DeepSeek's (:func:`dryboot.vllm.models.deepseek.verify_release`)."""
    deepseek.verify_release(model, rules)
