"""The MLA prefill backend vLLM picks, and the workspace it reserves while the model is built (issue 33).

Every dense MLA layer (``model_executor/layers/attention/mla_attention.py``, ``MLAAttention.__init__``,
0.27.1-0.33.0) builds a prefill backend in its constructor, i.e. inside ``GPUModelRunner.load_model``'s
``DeviceMemoryProfiler``: the class comes from ``get_mla_prefill_backend(vllm_config)``
(``v1/attention/backends/mla/prefill/selector.py``). A sparse MLA impl without a dense-MHA prefill path
builds none.

The choice (no ``attention_config.mla_prefill_backend`` named), the same rule in every release:

* 0.27.1-0.31.0: ``selector.py`` ``_get_mla_prefill_backend_priorities`` and
  ``_auto_select_mla_prefill_backend``; 0.32.0 and 0.33.0: the same lists moved to
  ``platforms/interface.py`` ``Platform.get_mla_prefill_backend_cls`` (``platforms/cuda.py`` does not
  override it). SM 10.x: TRTLLM_RAGGED, FLASH_ATTN, FLASHINFER, TOKENSPEED_MLA when the model's
  ``(qk_nope_head_dim, qk_rope_head_dim, v_head_dim)`` is ``(192, 64, 256)``, else FLASH_ATTN first
  and then the same three; every other capability: FLASH_ATTN alone. The first backend whose
  ``validate_configuration`` (``prefill/base.py``) holds wins; none valid: ``ValueError``.
* The dims are read from ``hf_text_config`` with ``getattr(..., 0)``; the dtype is the model's.
* Validity (``prefill/base.py`` and each backend's class attributes): every backend takes float16
  and bfloat16 only. FLASH_ATTN (``prefill/flash_attn.py``): any capability, dims (128, 64, 128),
  (192, 64, 256), (64, 64, 128), and from 0.31.0 (256, 0, 256); available where
  ``vllm.vllm_flash_attn`` is (the CUDA wheel ships it). TRTLLM_RAGGED (``prefill/trtllm_ragged.py``):
  SM 10.x, dims (128, 64, 128) or (192, 64, 256), FlashInfer present (``flashinfer-python`` is a
  requirement of every release's wheel). FLASHINFER (``prefill/flashinfer.py``) and TOKENSPEED_MLA
  (``prefill/tokenspeed_mla.py``): SM 10.x, (128, 64, 128) only, which FLASH_ATTN takes first, so
  neither is ever reached by the automatic choice on a CUDA box.

The workspace: TRTLLM_RAGGED's and FLASHINFER's constructors ask the worker's workspace manager
(``v1/worker/workspace.py``, ``get_simultaneous``) for ``VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE`` bytes
(``envs.py``: 394 MiB by default in every release) of uint8. The manager keeps one buffer per worker
and grows it to the largest request, so every layer's request after the first reuses it: 394 MiB once
per rank, a multiple of the allocator's 2 MiB segments. FLASH_ATTN's constructor allocates nothing.
Checked against vLLM's engine start on the meta device (the workspace manager set up as
``Worker.init_device`` does): ``tests/fidelity/test_weights_mla_prefill.py``.
"""

from __future__ import annotations

from dryboot.vllm.versions import version_key

#: ``envs.VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE``'s default (bytes), 0.27.1-0.33.0
FLASHINFER_WORKSPACE_BUFFER_BYTES = 394 * 1024 * 1024

#: the MLA head dims ``(qk_nope_head_dim, qk_rope_head_dim, v_head_dim)`` that put TRTLLM_RAGGED first
#: on SM 10.x
TRTLLM_FIRST_DIMS = (192, 64, 256)

#: the dims ``FlashAttnPrefillBackend.supports_mla_dimensions`` accepts (0.27.1-0.30.0)
_FLASH_ATTN_DIMS = ((128, 64, 128), (192, 64, 256), (64, 64, 128))
#: ... and from 0.31.0 (GLM-5-Next's NoPE layout)
_FLASH_ATTN_DIMS_031 = (*_FLASH_ATTN_DIMS, (256, 0, 256))

#: class-level dims of the SM 10.x-only backends
_TRTLLM_RAGGED_DIMS = ((128, 64, 128), (192, 64, 256))
_FLASHINFER_DIMS = ((128, 64, 128),)

#: the dtypes every prefill backend takes (``MLAPrefillBackend.supported_dtypes``)
PREFILL_DTYPES = ("float16", "bfloat16")

#: the backends whose constructor reserves the worker's workspace
WORKSPACE_BACKENDS = ("TRTLLM_RAGGED", "FLASHINFER")


def flash_attn_dims(vllm_version: str) -> tuple[tuple[int, int, int], ...]:
    """The MLA dims FLASH_ATTN's prefill accepts on vLLM ``vllm_version``
    (``prefill/flash_attn.py`` ``supports_mla_dimensions``)."""
    return _FLASH_ATTN_DIMS_031 if version_key(vllm_version) >= (0, 31, 0) else _FLASH_ATTN_DIMS


def prefill_priorities(capability: tuple[int, int], dims: tuple[int, int, int]) -> tuple[str, ...]:
    """vLLM's MLA prefill priority list on a CUDA GPU of compute capability ``(major, minor)`` for
    MLA head dims ``(qk_nope_head_dim, qk_rope_head_dim, v_head_dim)``, best first
    (``_get_mla_prefill_backend_priorities``; 0.32.0+ ``Platform.get_mla_prefill_backend_cls``)."""
    if capability[0] != 10:
        return ("FLASH_ATTN",)
    if dims == TRTLLM_FIRST_DIMS:
        return ("TRTLLM_RAGGED", "FLASH_ATTN", "FLASHINFER", "TOKENSPEED_MLA")
    return ("FLASH_ATTN", "TRTLLM_RAGGED", "FLASHINFER", "TOKENSPEED_MLA")


def backend_valid(
    backend: str, capability: tuple[int, int], dims: tuple[int, int, int], dtype: str, vllm_version: str
) -> bool:
    """``validate_configuration`` of one prefill backend on a CUDA box with vLLM's wheel requirements
    installed (FlashInfer; TokenSpeed MLA counts as absent, which no automatic choice can tell apart:
    FLASH_ATTN takes all of its dims first). ``dtype``: the model dtype's name, e.g. ``bfloat16``."""
    if dtype not in PREFILL_DTYPES:
        return False
    if backend == "FLASH_ATTN":
        return dims in flash_attn_dims(vllm_version)
    if capability[0] != 10:
        return False
    if backend == "TRTLLM_RAGGED":
        return dims in _TRTLLM_RAGGED_DIMS
    if backend == "FLASHINFER":
        return dims in _FLASHINFER_DIMS
    return False


def mla_prefill_backend(
    capability: tuple[int, int], dims: tuple[int, int, int], dtype: str, vllm_version: str
) -> str | None:
    """The prefill backend vLLM ``vllm_version`` picks for a dense MLA layer on a GPU of compute
    capability ``capability`` (``get_mla_prefill_backend`` with no backend named): the first valid
    one of :func:`prefill_priorities`; ``None`` where none is (vLLM raises ``ValueError: No valid MLA
    prefill backend found``)."""
    for backend in prefill_priorities(capability, dims):
        if backend_valid(backend, capability, dims, dtype, vllm_version):
            return backend
    return None


def prefill_workspace_bytes(backend: str) -> int:
    """What ``backend``'s constructor reserves from the worker's workspace manager (bytes, uint8, once
    per rank): ``VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE`` for TRTLLM_RAGGED and FLASHINFER, nothing
    for the others."""
    return FLASHINFER_WORKSPACE_BUFFER_BYTES if backend in WORKSPACE_BACKENDS else 0


#: the ``--kv-cache-dtype`` values ``is_quantized_kv_cache`` leaves unquantized (``auto``: the model's 16 bits)
UNQUANTIZED_KV_DTYPES = ("auto", "float16", "bfloat16")
#: the heads per rank up to which SM 10.x prefers FlashInfer's sparse backend with a 16-bit cache
SPARSE_FEW_HEADS = 16
#: the sparse MLA backend whose constructor reserves nothing while the model is built (its own 394 MiB
#: workspace comes with the first forward, the profile run's)
FLASHINFER_MLA_SPARSE = "FLASHINFER_MLA_SPARSE"


def sm100_sparse_priorities(heads: int, kv_cache_dtype: str) -> tuple[str, ...]:
    """The sparse MLA backends of ``platforms/cuda.py`` ``_get_backend_priorities`` on SM 10.x, best
    first (the dense MLA ones before them refuse a sparse layer), 0.27.1-0.33.0. ``heads``: the
    layer's heads on one rank; ``kv_cache_dtype``: the cache dtype vLLM resolved (``fp8_e4m3`` for a
    ModelOpt checkpoint's fp8 cache under ``auto``). A quantized cache, or a 16-bit one at 16 heads
    or fewer: FLASHINFER_MLA_SPARSE, FLASHMLA_SPARSE; else FLASHMLA_SPARSE, FLASHINFER_MLA_SPARSE.
    0.33.0 puts FLASH_ATTN_MLA_SPARSE_FA4 before them for a 16-bit cache at 16 heads or fewer: a
    subclass of FLASHINFER_MLA_SPARSE that takes only what it takes (``supports_combination`` ends in
    its parent's) and builds the same impl (``FlashAttnMLASparseFA4Impl`` has no constructor of its
    own), so it is left out here: it changes nothing built with the model."""
    if kv_cache_dtype not in UNQUANTIZED_KV_DTYPES or heads <= SPARSE_FEW_HEADS:
        return (FLASHINFER_MLA_SPARSE, "FLASHMLA_SPARSE")
    return ("FLASHMLA_SPARSE", FLASHINFER_MLA_SPARSE)


def flashinfer_mla_sparse_takes(kv_cache_dtype: str, qk_nope_head_dim: int, qk_rope_head_dim: int) -> bool:
    """``FlashInferMLASparseTRTLLMBackend``'s checks that a DeepSeek-V3.2-style layer can fail on
    SM 10.x (``supported_kv_cache_dtypes``, ``supports_combination``): no ``fp8_ds_mla`` cache, a
    ``qk_nope_head_dim`` of 128 or 192 with a rope (0.33.0's NoPE shape counts as not taken here:
    not modelled)."""
    return kv_cache_dtype != "fp8_ds_mla" and qk_rope_head_dim > 0 and qk_nope_head_dim in (128, 192)
