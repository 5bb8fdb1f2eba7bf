"""CUTLASS MLA's import-time workspace in ``Model loading took`` (issue 33).

vLLM's ``v1/attention/backends/mla/cutlass_mla.py`` (0.27.1 ``:107``, 0.28.0 ``:107``, 0.29.0 to
0.33.0 ``:99``) creates a module global ``g_sm100_workspace = SM100Workspace(128 * 1024 * 1024)``,
whose ``__init__`` is ``torch.empty(size, device="cuda", dtype=torch.uint8)``: 128 MiB allocated
on the GPU the moment the module is imported, held for the life of the process.

Nothing imports that module but the attention selector (``AttentionBackendEnum.CUTLASS_MLA``'s
``get_class``, ``v1/attention/backends/registry.py``). The selector runs in the worker while the
model is built, i.e. inside ``GPUModelRunner.load_model``'s ``DeviceMemoryProfiler``: each
``MLAAttention`` (``model_executor/layers/attention/mla_attention.py``, and the MLA layers of
Kimi-K3 and HY-V4 that call ``get_attn_backend(..., use_mla=True)`` themselves) asks
``v1/attention/selector.py`` ``get_attn_backend`` -> ``CudaPlatform.get_attn_backend_cls``
(``platforms/cuda.py``), the same code in every release 0.27.1-0.33.0:

* no ``--attention-backend``: ``get_valid_backends`` imports and validates *every* backend of
  ``_get_backend_priorities``' list (it does not stop at the first valid one). The MLA list of
  SM 10.x (``device_capability.major == 10``) is FLASHINFER_MLA, TOKENSPEED_MLA, CUTLASS_MLA,
  FLASH_ATTN_MLA, FLASHMLA, TRITON_MLA and the sparse backends, so CUTLASS MLA is imported (128 MiB)
  whichever backend wins, sparse MLA (DeepSeek-V3.2's) included. SM 12.x's list is TRITON_MLA and
  FLASHINFER_MLA_SPARSE_SM120, SM 8.x / 9.x / 11.x's has no CUTLASS_MLA: nothing imported.
* ``--attention-backend X``: only X's class is imported (and validated; vLLM raises if it is not
  valid): 128 MiB exactly when X is CUTLASS_MLA.

``update_block_size_for_backend`` runs after ``load_model`` (``uniproc_executor.py``,
``multiproc_executor.py``) and reads the layers' chosen backends; no selector call precedes the
model's build in the worker. So the workspace is in ``Model loading took`` of every rank that
builds an MLA layer. Checked against vLLM's own engine start on the meta device
(``engine_start.py`` executes the module with its "cuda" tensors on the meta device):
``tests/fidelity/test_weights_cutlass_mla.py``.
"""

from __future__ import annotations

#: ``g_sm100_workspace``'s ``initial_workspace_size`` (bytes, uint8): a multiple of the caching
#: allocator's 2 MiB segments, so it holds exactly this much
CUTLASS_MLA_WORKSPACE_BYTES = 128 * 1024 * 1024

#: the backends ``--attention-backend`` may name whose class lives in that module
CUTLASS_MLA_BACKEND = "CUTLASS_MLA"


def imports_cutlass_mla(capability: tuple[int, int] | None, attention_backend: str | None) -> bool | None:
    """Whether vLLM's selector imports the CUTLASS MLA module for an MLA layer (module docstring):
    ``attention_backend`` (``--attention-backend``) named: exactly when it is CUTLASS_MLA; else
    when the GPU's compute capability ``(major, minor)`` is SM 10.x. ``None``: unknown (no GPU
    given and no backend named)."""
    if attention_backend is not None:
        return attention_backend == CUTLASS_MLA_BACKEND
    if capability is None:
        return None
    return capability[0] == 10
