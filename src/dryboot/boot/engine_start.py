# mypy: disable-error-code="unused-ignore,misc"
"""A vLLM tree's own engine start, run offline on a faked GPU (0.28.0; also 0.27.1, 0.29.0-0.33.0):
the engine-start path from a user's config.json and CLI flags.

This file runs *inside* the boot environment's interpreter, by path
(``python engine_start.py --tree DIR [--gpu JSON]``); :mod:`dryboot.boot.session` starts it.
``--tree DIR`` puts DIR (the directory holding the ``vllm`` package: a source checkout, a
``site-packages``, or a tree ``dryboot series apply`` produced) first on ``sys.path``, so that
tree's code runs, not the environment's installed vLLM. dryboot never imports this file and this
file never imports dryboot (the environment has no dryboot). It is also the fidelity oracle of
``tests/fidelity`` (one oracle: the tests run this copy).

One file for every release; what differs by release is checked where it is used (by the
presence of the function a release introduced, or ``VLLM_MINOR``):

* 0.29.0+: ``EngineCore._initialize_kv_caches`` resolves one KV cache layout first
  (``resolve_kv_cache_layout`` over each pipeline stage worker's
  ``WorkerBase.get_supported_kv_cache_layouts``).
* 0.30.0+: the global block size is the smallest block of the groups that take part in prefix
  caching (``prefix_cacheable``).
* 0.27.1: no ``update_kv_cache_capacity``; the core stores ``get_kv_cache_capacity``'s answer.
* 0.33.0: ``get_kv_cache_configs``/``get_global_kv_cache_groups`` live in
  ``v1/core/kv_cache_planning.py`` and take the global groups; ``init_speculator`` takes the
  runner's ``RequestState`` (a stand-in with its sizes); no ``VllmConfig.is_encoder_only``;
  torch 2.14.0 is a CUDA build whose torchvision loads its own ops; the SSD kernels read
  ``triton.Config`` fields at import (a small stand-in for vLLM's Triton placeholder);
  ``torch.cuda.get_device_properties`` answers as the faked GPU; FlashInfer's multi-CTA KV counter
  (allocated on "cuda" at construction) is allocated on the meta device.
* Every release: ``v1/attention/backends/mla/cutlass_mla.py`` allocates its 128 MiB
  ``g_sm100_workspace`` on "cuda" when it is imported, which the MLA selector does on SM 10.x
  while the model is built (it imports every backend of the priority list); the module is
  executed with its explicit "cuda" tensors on the meta device (``_CutlassMlaOnMeta``), and each
  case imports it anew (``_reset_per_process_caches``), as a fresh process does.

Run with the boot environment's python (``dryboot boot-env`` prints it). Unlike
``tests/fidelity/vllm_oracle.py`` (which feeds vLLM's planner with layer specs described by the
caller), every figure here starts from exactly what a user gives ``vllm serve``:
a model directory holding ``config.json`` and the command-line flags.

What runs, in the engine's own order (each step is vLLM's function, called as vLLM calls it):

1. ``FlexibleArgumentParser`` + ``AsyncEngineArgs.add_cli_args`` parse ``--model DIR`` + argv (the
   engine half of ``vllm serve``'s parser; the frontend half only adds server flags), then
   ``AsyncEngineArgs.from_cli_args`` and ``create_engine_config(UsageContext.OPENAI_API_SERVER)``
   (the HF config class, ModelConfig/CacheConfig/SchedulerConfig/SpeculativeConfig validation, the
   per-architecture config hooks, platform defaults).                              stage "config"
2. What the GPU worker does to load the model: ``check_if_supports_dtype``; the drafter (proposer
   class chosen by the speculative config's own predicates, as ``GPUModelRunner.__init__`` does);
   the model through ``get_model_loader(load_config).load_model`` (the real model class, built by
   vLLM's ``initialize_model``, which selects every layer's attention backend via the platform);
   ``drafter.load_model(model)`` (drafter / MTP layers); then
   ``current_platform.update_block_size_for_backend`` (preferred block size and the hybrid
   attention/mamba alignment, as the executor runs it after load); then
   ``GPUModelRunner.get_kv_cache_spec`` (called unbound on a stand-in ``self``; it only reads
   ``vllm_config`` and writes ``shared_kv_cache_layers``).                          stage "model"
3. What ``EngineCore._initialize_kv_caches`` does: ``register_all_kvcache_specs``, the available
   memory as ``Worker.determine_available_memory`` returns it with ``--kv-cache-memory-bytes``
   (``reserve_mm_ipc_gpu_memory``), ``get_kv_cache_configs``, ``generate_scheduler_kv_cache_config``,
   ``update_kv_cache_capacity`` (logs "GPU KV cache size"), ``validate_block_size`` and
   ``resolve_kv_cache_block_sizes`` (as ``EngineCore.__init__``).                    stage "plan"

What is faked, and why (nothing else is):

* **Kernels absent.** vLLM's compiled extensions need ``libcuda``: ``vllm._C_stable_libtorch``,
  ``vllm.vllm_flash_attn._vllm_fa2_C``, ``_vllm_fa3_C``, ``vllm._flashmla_C`` and
  ``vllm._flashmla_extension_C`` are registered as empty modules (so FA2/FA3 and FlashMLA count
  as built, as in the CUDA wheel, which ships all five: on an H200 FlashMLA serves fp8 MLA
  caches); after ``vllm._custom_ops`` has imported (its
  ``hasattr`` probes see no kernel), the op namespaces ``torch.ops._C``, ``_C_cache_ops``,
  ``_moe_C``, ``_C_custom_ar``, ``_C_cuda_utils``, ``_vllm_fa2_C``, ``_vllm_fa3_C``,
  ``_flashmla_C`` and ``_flashmla_extension_C`` answer any name with a placeholder that raises if
  called (layers keep a handle to their kernel at construction; no kernel is ever called). The
  three CUTLASS capability queries of ``vllm._custom_ops`` answer as an SM90 build does
  (fp8: SM>=89, block fp8: SM>=90, fp4: SM>=100). ``torch.cuda.Stream``/``Event`` are inert
  stand-ins (layers create side streams at construction).
* **The GPU: a stand-in (``--gpu``; default an H200).** ``vllm.platforms.current_platform`` is a
  subclass of vLLM's own ``NonNvmlCudaPlatform`` (so backend selection, priorities and validity
  checks are CUDA's) that answers the ``--gpu`` compute capability, name, total memory and SM
  count (default 9.0, "NVIDIA H200", 143156 MiB, 132 SMs), 8 devices, no pinned memory (host buffers
  only) and ``current_device()`` = the meta device. One total answers both NVML's query (the batch
  defaults' 70 / 160 GiB tiers) and torch's (the H200's NVML 143771 MiB is in the same tier).
* **torchvision's kernels.** PyPI's torchvision 0.28.0 is a CUDA build whose op library cannot
  load next to CPU torch; the two op schemas (``torchvision::nms``/``qnms``) its import registers
  fake kernels for are declared first, so the multimodal model classes (which import
  transformers' image processors) import.
* **torchaudio, where absent.** No torchaudio release loads next to the boot environment's torch
  (PyPI's newest, 2.11.1, ships a kernel library built for torch 2.11). Two model files import
  it: ``midashenglm.py`` (``torchaudio.functional``: ``melscale_fbanks`` sizes one non-persistent
  buffer of the audio frontend at construction; ``spectrogram`` / ``amplitude_to_DB`` only in its
  forward) and, through ``transformers_utils/processors/funasr.py``, ``funasr.py``
  (``torchaudio.compliance.kaldi.fbank``: feature extraction only). Where ``torchaudio`` does not
  import, a stand-in package answers: ``melscale_fbanks`` returns zeros of torchaudio's shape
  ``[n_freqs, n_mels]`` in the default dtype (its documented result; values are never read:
  no weight, no KV), every other function raises when called. The engine start never runs a
  frontend or a processor, so the model builds as with torchaudio.
* **triton.set_allocator, where Triton is absent.** OLMo-Hybrid's Gated DeltaNet layers
  (``olmo_gdn_linear_attn.py``) register Triton's scratch allocator while they are built; Triton
  itself only stores that callback. vLLM's Triton placeholder has no ``set_allocator``: a stand-in
  stores nothing (no kernel runs here).
* **triton.language.extra, where Triton is absent.** vLLM's Triton placeholder (``vllm.triton_utils``'
  ``tl``) has no ``extra``; 0.33.0's Step5 kernels read ``tl.extra.cuda.libdevice`` at import
  (``step5/nvidia/ops/summary_update.py``; the others only inside ``@triton.jit`` bodies, which the
  placeholder never runs). A stand-in ``tl.extra`` answers any attribute path under it with a
  namespace that raises when called; no kernel is ever called.
* **Step5's FlashInfer sparse adapter (0.33.0).** Each Step5 DSA layer's attention impl
  (``step5/nvidia/sparse_attention.py`` ``Step5DSAAttentionImpl``) shares one
  ``Step5FlashInferSparse`` built at construction on ``cuda:<current_device_index()>``: a 128 MiB
  uint8 prefill workspace, FlashInfer's ragged prefill wrapper (8 MiB device and pinned host
  buffers) and the indexer-logits kernel choice. While that impl is constructed the device index
  answers 0 and the adapter is a stand-in that raises when used (scratch for kernels that never run
  here: no KV cache, no weight); the DSA layer, its summary-cache layer and its tail ring are built
  as they are.
* **MiniMax-M2's CUDA runtime bindings, where absent.** At TP > 1 each q/k norm of MiniMax-M2
  (``minimax_rms_norm/rms_norm_tp.py``) asks ``lamport_workspace.py`` for its fused all-reduce
  workspace, a module that imports the CUDA runtime bindings (``cuda.bindings.runtime``, shipped on
  a GPU box by the CUDA wheel's dependencies) at its top. Where they do not import, that one module
  is imported against a stand-in whose every call raises, then the stand-in is removed (no other
  module sees a ``cuda`` package): vLLM's own ``except`` then takes its no-P2P path (its warning, no
  workspace), which is what the bindings do where they are present here (no driver) and what a
  box without P2P does. The workspace holds no weight and no KV cache.
* **Kimi-K3's GEMM-AR/RS module, where the CuTe DSL is absent (0.31.0+).** ``kimi_k3/nvidia/model.py``
  ``maybe_init_gemm_rs_ar`` imports ``model_executor/kernels/linear/cute_dsl/gemm_rs_ar.py`` while
  the model is built (``VLLM_KIMI_K3_GEMM_AR`` is on by default); that module imports the CuTe DSL
  (``cutlass``, ``cuda.bindings.driver``) at its top, which the CUDA wheel ships and the boot
  environment lacks. Where ``cutlass`` does not import, that module is a stand-in whose
  ``maybe_init_gemm_rs_ar`` answers False (GEMM-AR/RS disabled) and whose ``get_gemm_rs_ar`` raises.
  vLLM's own check disables it on every GPU but the SM100 family (the default faked H200 is SM 9.0),
  and where it is enabled it only binds the row-parallel ``o_proj``/``down_proj`` to a fused kernel
  (a plain attribute read in ``forward``) over a symmetric-memory workspace outside the model: no
  parameter, buffer or KV cache spec differs. Kimi-Linear and Kimi-K3 build as they are.
* **FlashKDA's extension (0.33.0).** Kimi-K3's KDA layers (``kimi_k3/nvidia/kda.py``
  ``KimiK3DeltaAttention``, a full-rank gate) pick their prefill backend at construction: FlashKDA on
  SM 9.x/10.x/12.x with bfloat16 activations, ``head_dim`` 128 and a bounded gate. Chosen, the layer
  imports ``vllm._flashkda_C`` (shipped by the CUDA wheel; it needs ``libcuda`` here) and asks
  ``torch.ops._flashkda_C.get_workspace_size(T, H, N)`` for the size of the scratch buffer its
  forward takes from the workspace manager. ``vllm._flashkda_C`` is registered as an empty module
  (as the five above) and ``torch.ops._flashkda_C`` answers as the other absent namespaces, except
  that ``get_workspace_size`` answers 0: that size is kept for the forward's workspace request only
  (no parameter, buffer or KV cache spec reads it). The backend choice itself is vLLM's, on the
  faked GPU: with FlashKDA the KDA layers' MambaSpec carries one prefill checkpoint block.
* **No JIT warmup registration.** From 0.30.0 layers with JIT kernels (DeepSeek-V4's decoder
  layers, compressors and indexers, ...) import those kernels' modules at construction when
  ``kernel_config.enable_jit_warmup`` is on (the default), to register them for the compile-only
  warmup the worker runs after the KV cache is allocated. Those modules need the CUDA wheel's
  own dependencies, absent here: TileLang (``vllm.tilelang_utils``: "ImportError: tilelang is
  required for mhc") and the CuTe DSL (``cutlass``, ``quack``). Each worker builds the model with
  ``enable_jit_warmup`` off: registering records compile keys only (no parameter, buffer or KV
  spec; no warmup registry is active here, so it would do nothing), and nothing else it gates
  runs before the KV cache is planned.
* **transformers' old Pixtral names.** vLLM 0.28.0's ``pixtral.py`` (imported by the LLaVA family's
  modules) imports ``PixtralRotaryEmbedding`` and ``position_ids_in_meshgrid``, which transformers
  5.x no longer has: where missing, a rotary-embedding module that builds with no parameters or
  buffers and raises when called, and a function that raises when called, so those modules import
  and a Pixtral tower builds on the meta device (the engine start never runs the tower).
* **Values read with ``Tensor.item()`` at construction.** 0.30.0+'s ``GeluAndMulSparse`` (Gemma-3n's
  sparse MLPs) computes its Gaussian cutoff as a Python float while built; its constructor runs
  under the CPU device (the model is built under the meta device, where ``.item()`` fails), so the
  float is the one a GPU box computes. The layer holds no parameter or buffer. (0.27.1-0.29.0 keep
  the cutoff as a tensor: built as it is.)
  0.27.1's Transformers modeling backend reads an input embedding's ``embed_scale`` buffer as a
  float (VaultGemma's ``VaultGemmaTextScaledWordEmbedding``): that embedding's constructor runs
  under the CPU device likewise (its weight still lands on the meta device; the module is replaced
  by vLLM's ``ScaledVocabParallelEmbedding``, which holds the float).
  The Conformer encoder's ``RelPositionalEncoding`` (FireRedASR2's audio tower) computes its
  table's frequency scale with ``.item()`` likewise: built under the CPU device, its ``pe`` table
  (a buffer from 0.29.0, a plain attribute in 0.27.1-0.28.0; the same shape and dtype) then moved
  to the meta device, where the rest of the model is.
  ``XIELU`` (Apertus's MLP activation) reads its ``beta`` and ``eps`` buffers back as floats: built
  under the CPU device, its two one-element parameters and two scalar buffers (bfloat16, the
  shapes and dtype vLLM gives them) then moved to the meta device. The layer holds no KV cache, so
  this cannot change the KV figures; the weights count the same four tensors per layer.
* **Distributed groups.** No process group exists: the TP/PP/DP/EP/DCP/PCP/world groups of
  ``vllm.distributed.parallel_state`` are stand-ins of the configured sizes in which this process
  is rank 0 (layers only read sizes and ranks at construction; KV specs are identical on every
  TP rank), except that a pipeline stage's worker is that stage's rank, in its PP group and in
  ``parallel_config.rank`` (``pp_rank x TP``, as ``WorkerBase.__init__`` sets it).
* **No weights.** ``BaseModelLoader.load_model`` is replaced by vLLM's ``initialize_model`` under
  the model dtype on the meta device; no weight is read and ``process_weights_after_loading`` is
  not run (it does not touch KV specs).
* **Sparse attention (DSA indexer) models.** Their top-k indices buffer, allocated on "cuda" at
  construction, is allocated on the meta device (only for configs with ``index_topk``); the
  indexer's DeepGEMM check (and GLM-5.3-Flash's kpool indexer's) answers as the CUDA wheel, which
  vendors DeepGEMM (0.30.0-0.32.0's boot environments cannot load it); the worker's
  workspace manager is initialised (on the meta device) before the model, as ``Worker.init_device``
  does, and ``torch.accelerator.empty_cache`` (called when a workspace grows) does nothing.
* **Transformers modeling backend.** The parameters it materializes from the meta device
  (``transformers/base.py`` ``init_parameters``, on "cuda") stay on the meta device (only for an
  architecture of the registry's Transformers tables); its attention layers are built as they are.
* **Triton present.** ``vllm.config.vllm.HAS_TRITON`` is set: on an H200 host Triton is
  installed, and the config uses it to choose (and validate) the V2 model runner for its default
  architectures (DeepSeek-V2, ...) and for mixed sliding/full DFlash drafts. With the V2 runner the
  oracle follows ``vllm/v1/worker/gpu/model_runner.py`` (``init_speculator``,
  ``DraftModelSpeculator.load_model``, ``attn_utils.get_kv_cache_spec``). Triton kernels are never
  run (vLLM's own placeholders stand for ``triton`` elsewhere).
* **Registry inspection in-process.** ``ModelRegistry`` inspects model classes in a subprocess
  only to avoid initialising CUDA; here it runs in-process (the subprocess would not see the
  stand-ins above). The model-info cache goes to a throwaway ``VLLM_CACHE_ROOT``.
* **One process, many cases.** Before each case every ``functools`` cache in vLLM's modules is
  cleared (backend selection, once-only log lines, layouts ...), so that each case sees what a
  fresh engine process would; the HF config is read from each case's own directory.
* **No worker / runner objects.** ``GPUModelRunner.__init__`` allocates CUDA buffers and streams;
  the steps above are the ones of Worker/GPUModelRunner/EngineCore that decide the KV cache,
  called in their order. No profile run: the available memory is ``--kv-cache-memory-bytes``
  exactly as the worker returns it (a case without it fails at stage "plan"); only whether the
  profile run's call of the model binds to its ``forward`` is checked (stage "profile": a
  speculative-decoding drafter given as the model fails there on vLLM with a ``TypeError``).
  PP > 1 is refused (one process cannot hold several stages' layers).

Protocol: first a line ``{"meta": {"stage": "ready", "vllm_version", "vllm_file", "import_seconds",
"gpu"}}`` once vLLM imported (or ``{"meta": {"stage": "import", "error"}}`` and exit 3 when the
tree does not import), then JSON lines on stdin, one case each (or one document ``{"cases": [...]}``):

    {"id": "x", "model": "/dir/with/config.json", "argv": ["--max-model-len", "8192", ...]}

and one JSON line per case on stdout, flushed as it is done:

    {"id", "ok": true, "block_size", "groups": [[spec_type, block, page_bytes, n_layers], ...],
     "group_layers": [[layer names], ...], "num_blocks", "tokens", "concurrency",
     "max_model_len", "final_block_size", "scheduler_block_size", "hash_block_size",
     "kv_log": [...], "log": [...], "seconds"}
    {"id", "ok": false, "stage": "parse|config|model|profile|plan", "error": "Type: message",
     "kv_log", "log", "seconds"}

``spec_type`` is the KV cache spec's class name without its ``Spec`` suffix (``FullAttention``,
``SlidingWindow``, ``MLAAttention``, ``Mamba`` ...). ``kv_log`` holds vLLM's own log lines about the
KV cache (block size settings, mamba cache mode and padding, padding layers, the
num_gpu_blocks override, auto-fit, "GPU KV cache size ... Maximum concurrency"). A final line
``{"meta": {...}}`` gives the vLLM version and timings. vLLM's console logging is off; anything it
prints goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import gc
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import logging
import os
import sys
import tempfile
import time
import traceback
import types
from typing import Any

os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
if "VLLM_CACHE_ROOT" not in os.environ:
    os.environ["VLLM_CACHE_ROOT"] = tempfile.mkdtemp(prefix="e2e-oracle-vllm-cache-")


@dataclasses.dataclass
class FakeGPU:
    """The GPU the stand-in platform answers as (``--gpu`` JSON: name, capability, memory, SMs)."""

    name: str = "NVIDIA H200"
    capability: tuple[int, int] = (9, 0)
    total_memory: int = 143156 << 20  # an H200's CUDA total (torch: total_memory=143156MB)
    sm_count: int = 132
    device_count: int = 8


GPU = FakeGPU()

GC_EVERY = 100
#: vLLM's minor release number (0.X.y), set by _install(); the few steps that differ by release
#: check it (or the presence of the function the release introduced), each saying what differs.
VLLM_MINOR = 28

KV_LOG_MARKERS = (
    "block size",
    "Mamba cache mode",
    "mamba page size",
    "padding layers",
    "num_gpu_blocks",
    "Auto-fit max_model_len",
    "GPU KV cache size",
    "Maximum concurrency",
    "page sizes cannot be unified",
    "Hybrid KV cache manager is disabled",
)

V = types.SimpleNamespace()  # vLLM handles, filled by _install()


# --------------------------------------------------------------------------- stand-ins


class _AbsentKernel:
    """A kernel handle that exists (layers keep one at construction) but cannot run."""

    def __init__(self, name: str) -> None:
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"kernel {self.__name__} is absent (CPU oracle)")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _AbsentKernel(f"{self.__name__}.{name}")


class _RaisingModule(types.ModuleType):
    """A stand-in module (or package) of the ``stand_in`` named: every public attribute is a
    function that raises ``RuntimeError`` when called (a library imported for code that never runs
    here: torchaudio's, the CUDA runtime bindings')."""

    def __init__(self, name: str, stand_in: str) -> None:
        super().__init__(name)
        self._stand_in = stand_in

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        what = f"{self._stand_in} stand-in: {self.__name__}.{attr} is not run here"

        def fail(*a: Any, **k: Any) -> Any:
            raise RuntimeError(what)

        return fail


class _AbsentKernelNamespace:
    def __init__(self, ns: str) -> None:
        self._ns = ns

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _AbsentKernel(f"torch.ops.{self._ns}.{name}")


class _FlashKdaNamespace(_AbsentKernelNamespace):
    """``torch.ops._flashkda_C``: every kernel absent, ``get_workspace_size(T, H, N)`` 0 bytes (the
    forward's scratch request, never made here; see the module docstring)."""

    @staticmethod
    def get_workspace_size(*args: Any) -> int:
        return 0


class _InertStream:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def wait_stream(self, *args: Any) -> None:
        pass

    def wait_event(self, *args: Any) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def record_event(self, *args: Any) -> _InertEvent:
        return _InertEvent()


class _InertEvent:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def record(self, *args: Any) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, *args: Any) -> None:
        pass

    def query(self) -> bool:
        return True


class _StandInProcessGroup:
    def __init__(self, size: int) -> None:
        self._size = size

    def size(self) -> int:
        return self._size

    def rank(self) -> int:
        return 0


def _stand_in_group(size: int, name: str) -> types.SimpleNamespace:
    """A GroupCoordinator stand-in of ``size`` ranks in which this process is rank 0."""
    pg = _StandInProcessGroup(size)
    return types.SimpleNamespace(
        world_size=size,
        rank_in_group=0,
        rank=0,
        ranks=list(range(size)),
        local_rank=0,
        is_first_rank=True,
        is_last_rank=True,
        first_rank=0,
        last_rank=size - 1,
        next_rank=1 % size,
        prev_rank=(size - 1) % size,
        unique_name=f"{name}:0",
        device_group=pg,
        cpu_group=pg,
        use_device_communicator=False,
        device_communicator=None,
        mq_broadcaster=None,
        size=lambda: size,
    )


def _declare_torchvision_ops() -> Any:
    """Declare the two torchvision op schemas; returns the registration (keep it alive).

    PyPI's torchvision is a CUDA build whose op library cannot load next to CPU torch: its
    import registers fake kernels for ``torchvision::nms`` / ``qnms`` and fails unless those op
    schemas exist. With a CUDA torch (0.33.0's torch 2.14.0 is PyPI's CUDA build) torchvision's
    own op library loads and registers them, and declaring them first would abort the process:
    nothing is done then. No torchvision kernel is ever called.
    """
    import torch

    if torch.version.cuda is not None:
        return None
    with contextlib.suppress(Exception):
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        return lib
    return None


def _pixtral_stand_ins() -> None:
    """Give transformers' Pixtral module the two names vLLM 0.28.0's ``pixtral.py`` imports and
    transformers 5.x no longer has (``PixtralRotaryEmbedding``, renamed ``PixtralVisionRotaryEmbedding``
    with another buffer layout, and ``position_ids_in_meshgrid``), so the modules that import
    ``pixtral.py`` (``llava.py``, ``llava_next.py``, ``mistral3.py``, ...) import and build.

    What is faked: ``PixtralRotaryEmbedding`` is an ``nn.Module`` that builds with no parameters and
    no buffers (the real one holds only a non-persistent ``inv_freq`` buffer, computed from the
    vision config: no weight, no KV) and raises when called; ``position_ids_in_meshgrid`` raises
    when called. The engine start builds the model on the meta device and never runs the vision
    tower, so a Pixtral tower (Mistral-3, LightOnOCR, Pixtral-HF) builds as it would with the
    transformers vLLM 0.28.0 was released against, and the KV specs come from its language model.
    Nothing is done where transformers has the names (vLLM 0.33.0 reads the new one)."""
    with contextlib.suppress(Exception):
        mp = importlib.import_module("transformers.models.pixtral.modeling_pixtral")
        nn = importlib.import_module("torch.nn")

        def _absent(name: str) -> Any:
            def fail(*a: Any, **k: Any) -> Any:
                raise RuntimeError(f"transformers {name} stand-in (this transformers lacks it): not run here")

            return fail

        if not hasattr(mp, "PixtralRotaryEmbedding"):

            class PixtralRotaryEmbedding(nn.Module):  # type: ignore[misc,name-defined]
                def __init__(self, *a: Any, **k: Any) -> None:
                    super().__init__()

                def forward(self, *a: Any, **k: Any) -> Any:
                    return _absent("PixtralRotaryEmbedding")()

            mp.PixtralRotaryEmbedding = PixtralRotaryEmbedding  # type: ignore[attr-defined]
        if not hasattr(mp, "position_ids_in_meshgrid"):
            mp.position_ids_in_meshgrid = _absent("position_ids_in_meshgrid")  # type: ignore[attr-defined]


def _torchaudio_stand_in() -> None:
    """Register a ``torchaudio`` stand-in (``functional``, ``compliance.kaldi``) when the real one
    does not import (see the module docstring). ``functional.melscale_fbanks(n_freqs, f_min, f_max,
    n_mels, sample_rate, ...)`` -> zeros ``[n_freqs, n_mels]`` (torchaudio's shape, default dtype and
    device); anything else raises ``RuntimeError`` when called."""
    try:
        importlib.import_module("torchaudio.functional")
        return
    except Exception:  # absent, or a kernel library built for another torch
        for name in [m for m in sys.modules if m == "torchaudio" or m.startswith("torchaudio.")]:
            del sys.modules[name]
    import torch

    def melscale_fbanks(
        n_freqs: int, f_min: float, f_max: float, n_mels: int, sample_rate: int, *a: Any, **k: Any
    ) -> Any:
        return torch.zeros(int(n_freqs), int(n_mels))

    root, functional, compliance, kaldi = (
        _RaisingModule(n, "torchaudio")
        for n in ("torchaudio", "torchaudio.functional", "torchaudio.compliance", "torchaudio.compliance.kaldi")
    )
    functional.melscale_fbanks = melscale_fbanks  # type: ignore[attr-defined]
    root.functional, root.compliance, compliance.kaldi = functional, compliance, kaldi  # type: ignore[attr-defined]
    root.__version__ = "0+dryboot.stand-in"  # type: ignore[attr-defined]
    for mod in (root, functional, compliance, kaldi):
        mod.__path__ = []  # type: ignore[attr-defined]  # a package: submodule imports resolve here
        sys.modules[mod.__name__] = mod


def _on_cpu(init: Any) -> Any:
    """``init`` (a constructor) run under the CPU device, whatever device the caller's scope
    names: the scalars it computes with ``Tensor.item()`` get their value, not a meta tensor's
    error."""
    import torch

    @functools.wraps(init)
    def wrapped(*args: Any, **kwargs: Any) -> None:
        with torch.device("cpu"):
            init(*args, **kwargs)

    return wrapped


def _on_cpu_buffers_moved(init: Any) -> Any:
    """``init`` run under the CPU device (as :func:`_on_cpu`), then every tensor it left on the
    module (registered buffers, and tensors kept as plain attributes) moved to the device the
    caller's scope names (on a GPU box they are on the GPU: here the meta device), so the module
    holds the same tensors, of the same shapes and dtypes, where vLLM's model holds them."""
    import torch

    @functools.wraps(init)
    def wrapped(self: Any, *args: Any, **kwargs: Any) -> None:
        device = torch.get_default_device()
        with torch.device("cpu"):
            init(self, *args, **kwargs)
        for name, buf in list(self._buffers.items()):
            if buf is not None:
                self._buffers[name] = buf.to(device)
        for name, value in list(vars(self).items()):
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                setattr(self, name, value.to(device))

    return wrapped


def _on_cpu_tensors_moved(init: Any) -> Any:
    """``init`` run as :func:`_on_cpu_buffers_moved` runs it, its parameters moved too (each a
    parameter again, on the caller's device, same shape, dtype and ``requires_grad``)."""
    import torch

    moved = _on_cpu_buffers_moved(init)

    @functools.wraps(init)
    def wrapped(self: Any, *args: Any, **kwargs: Any) -> None:
        device = torch.get_default_device()
        moved(self, *args, **kwargs)
        for name, param in list(self._parameters.items()):
            if param is not None:
                self._parameters[name] = torch.nn.Parameter(param.to(device), requires_grad=param.requires_grad)

    return wrapped


def _triton_extra_stand_in() -> None:
    """Give vLLM's Triton-language placeholder a ``triton.language.extra`` (see the module
    docstring): ``extra`` answers any attribute path (``cuda.libdevice.exp``, ``cuda.gdc_wait``...)
    with a namespace that raises ``RuntimeError`` when called. Only where the placeholder stands in
    for Triton and lacks ``extra``."""
    from vllm.triton_utils import importing as triton_importing
    from vllm.triton_utils import tl

    if not isinstance(tl, triton_importing.TritonLanguagePlaceholder) or "extra" in vars(tl):
        return

    class _Absent(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return _Absent(f"{self.__name__}.{name}")

        def __call__(self, *a: Any, **k: Any) -> Any:
            raise RuntimeError(f"triton.language.extra stand-in: {self.__name__} is not run here")

    tl.extra = _Absent("triton.language.extra")  # type: ignore[attr-defined]


#: the modules whose sparse-attention indexer asks ``has_deep_gemm()`` as it is built (GLM-5.3-Flash's)
_KPOOL_INDEXER_MODULES = frozenset(
    {"vllm.model_executor.layers.sparse_attn_indexer_kpool", "vllm.models.glm5next.nvidia.sparse_indexer"}
)


def _kpool_deep_gemm_stand_in() -> None:
    """``vllm.utils.deep_gemm.has_deep_gemm`` answering as a CUDA box's (True) to the kpool indexer's
    modules, which import it later (with the model), and as before to every other caller."""
    try:
        import vllm.utils.deep_gemm as deep_gemm
    except ImportError:
        return
    original = getattr(deep_gemm, "has_deep_gemm", None)
    if original is None:
        return

    def has_deep_gemm() -> bool:
        caller = sys._getframe(1).f_globals.get("__name__")
        return caller in _KPOOL_INDEXER_MODULES or bool(original())

    deep_gemm.has_deep_gemm = has_deep_gemm


def _step5_adapter_stand_in(torch: Any) -> None:
    """Build 0.33.0's Step5 DSA layers without a device (see the module docstring): while a
    ``Step5DSAAttentionImpl`` is constructed, ``torch.accelerator.current_device_index()`` answers 0
    (a one-GPU worker's device) and its shared FlashInfer sparse adapter (``_shared_adapter`` ->
    ``Step5FlashInferSparse``: a 128 MiB uint8 prefill workspace on the device, FlashInfer's ragged
    prefill wrapper with its 8 MiB device and pinned host buffers) is a stand-in that raises when
    used. The adapter is scratch for the prefill/indexer kernels: no KV cache, no weight. Only where
    the release has the module."""
    try:
        step5_sparse = importlib.import_module("vllm.models.step5.nvidia.sparse_attention")
    except ImportError:
        return
    impl = getattr(step5_sparse, "Step5DSAAttentionImpl", None)
    if impl is None or not hasattr(step5_sparse, "_shared_adapter"):
        return
    step5_sparse._shared_adapter = lambda device: _AbsentKernel("Step5FlashInferSparse")  # type: ignore[attr-defined]
    init = impl.__init__

    @functools.wraps(init)
    def wrapped(*args: Any, **kwargs: Any) -> None:
        saved = torch.accelerator.current_device_index
        torch.accelerator.current_device_index = lambda: 0
        try:
            init(*args, **kwargs)
        finally:
            torch.accelerator.current_device_index = saved

    impl.__init__ = wrapped


def _lamport_bindings_stand_in() -> None:
    """Import MiniMax-M2's ``lamport_workspace`` against a raising stand-in of the CUDA runtime
    bindings where they do not import (see the module docstring); the stand-in leaves
    ``sys.modules`` afterwards. Only where the release has the module."""
    name = "vllm.model_executor.layers.minimax_rms_norm.lamport_workspace"
    try:
        importlib.import_module("cuda.bindings.runtime")
        return
    except ImportError:
        pass
    try:
        if name in sys.modules or importlib.util.find_spec(name) is None:
            return
    except ImportError:  # its package does not import: nothing of it is built
        return

    root, bindings, runtime = (
        _RaisingModule(n, "CUDA runtime bindings (no P2P)") for n in ("cuda", "cuda.bindings", "cuda.bindings.runtime")
    )
    root.bindings, bindings.runtime = bindings, runtime  # type: ignore[attr-defined]
    for mod in (root, bindings):
        mod.__path__ = []  # type: ignore[attr-defined]
    stand_ins = {m.__name__: m for m in (root, bindings, runtime)}
    sys.modules.update(stand_ins)
    try:
        importlib.import_module(name)
    finally:
        for key in stand_ins:
            sys.modules.pop(key, None)


def _gemm_rs_ar_stand_in() -> None:
    """Stand in for ``vllm.model_executor.kernels.linear.cute_dsl.gemm_rs_ar`` where the CuTe DSL
    (``cutlass``) does not import (see the module docstring): ``maybe_init_gemm_rs_ar(vllm_config,
    *, N, all_reduce)`` answers False (the fused GEMM-AR/RS kernel disabled: projections keep their
    plain path) and ``get_gemm_rs_ar()`` raises if reached. Only where the release has the module."""
    if importlib.util.find_spec("cutlass") is not None:
        return
    name = "vllm.model_executor.kernels.linear.cute_dsl.gemm_rs_ar"
    try:
        if importlib.util.find_spec(name) is None:
            return
    except ImportError:  # a release without the cute_dsl package
        return
    module = types.ModuleType(name)

    def maybe_init_gemm_rs_ar(vllm_config: Any, *, N: int, all_reduce: bool) -> bool:
        return False

    def get_gemm_rs_ar() -> Any:
        raise RuntimeError("GEMM-RS/AR stand-in (no CuTe DSL here): disabled, never bound")

    module.maybe_init_gemm_rs_ar = maybe_init_gemm_rs_ar  # type: ignore[attr-defined]
    module.get_gemm_rs_ar = get_gemm_rs_ar  # type: ignore[attr-defined]
    sys.modules[name] = module


#: vLLM's modules that allocate a device tensor on "cuda" when imported (a module global for the
#: whole process): executed with those tensors on the meta device (:class:`_CutlassMlaOnMeta`),
#: and dropped before each case so a case that imports them allocates anew, as a fresh process does
IMPORT_ALLOCATING_MODULES = ("vllm.v1.attention.backends.mla.cutlass_mla",)


class _CutlassMlaOnMeta(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import :data:`IMPORT_ALLOCATING_MODULES` with their explicit ``device="cuda"`` tensors on the
    meta device (CUTLASS MLA's ``SM100Workspace(128 MiB)`` at import, every release): the file's
    own loader executes it under a torch function mode that answers "cuda" with "meta"."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in IMPORT_ALLOCATING_MODULES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        self._inner = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: Any) -> Any:
        return None

    def exec_module(self, module: Any) -> None:
        import torch
        from torch.overrides import TorchFunctionMode

        class CudaOnMeta(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                kwargs = kwargs or {}
                device = kwargs.get("device")
                if device is not None and torch.device(device).type == "cuda":
                    kwargs = {**kwargs, "device": torch.device("meta")}
                return func(*args, **kwargs)

        with CudaOnMeta():
            self._inner.exec_module(module)  # type: ignore[attr-defined]


def _install() -> None:
    """Install the stand-ins (see the module docstring), then import vLLM's pieces."""
    if not any(isinstance(f, _CutlassMlaOnMeta) for f in sys.meta_path):
        sys.meta_path.insert(0, _CutlassMlaOnMeta())
    for mod in (
        "vllm._C_stable_libtorch",
        "vllm.vllm_flash_attn._vllm_fa2_C",
        "vllm.vllm_flash_attn._vllm_fa3_C",
        "vllm._flashmla_C",
        "vllm._flashmla_extension_C",
        "vllm._flashkda_C",
    ):
        sys.modules[mod] = types.ModuleType(mod)

    import torch

    # torchvision on PyPI is a CUDA build whose kernel library cannot load next to CPU torch;
    # declaring the two ops its import registers fake kernels for lets it import (the
    # multimodal model classes import transformers' image processors, which import it).
    V.torchvision_lib = _declare_torchvision_ops()  # keep the registration alive
    _pixtral_stand_ins()
    _torchaudio_stand_in()

    # 0.33.0's SSD kernels filter their autotune configs at import on SM90 (reading num_stages,
    # num_warps, kwargs); vLLM's Triton placeholder makes triton.Config a no-op decorator.
    with contextlib.suppress(Exception):
        from vllm.triton_utils import importing as triton_importing
        from vllm.triton_utils import triton as triton_mod

        if isinstance(triton_mod, triton_importing.TritonPlaceholder):

            class _Config:
                def __init__(self, kwargs: Any = None, num_warps: int = 4, num_stages: int = 1, **_: Any) -> None:
                    self.kwargs, self.num_warps, self.num_stages = dict(kwargs or {}), num_warps, num_stages

            triton_mod.Config = _Config
            # Triton's set_allocator only registers the callback kernels call for scratch memory
            # (no allocation when it is called); OLMo-Hybrid's GDN layers call it at construction
            triton_mod.set_allocator = lambda alloc_fn: None
        _triton_extra_stand_in()

    torch.cuda.Stream = _InertStream  # type: ignore[misc,assignment]
    # 0.33.0's FlashInfer GDN prefill probes the device properties at layer construction.
    torch.cuda.get_device_properties = lambda device=None: types.SimpleNamespace(  # type: ignore[assignment]
        name=GPU.name,
        major=GPU.capability[0],
        minor=GPU.capability[1],
        total_memory=GPU.total_memory,
        multi_processor_count=GPU.sm_count,
    )
    torch.cuda.Event = _InertEvent  # type: ignore[misc,assignment]
    # The workspace manager empties the device's caching allocator before it grows a workspace
    # (the sparse MLA backends reserve theirs at construction): nothing to empty here.
    torch.accelerator.empty_cache = lambda: None  # type: ignore[assignment]

    import vllm.platforms as platforms
    from vllm.platforms.cuda import NonNvmlCudaPlatform
    from vllm.platforms.interface import DeviceCapability

    class StandInH200(NonNvmlCudaPlatform):
        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> DeviceCapability:
            return DeviceCapability(*GPU.capability)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return GPU.name

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return GPU.total_memory

        @classmethod
        def is_pin_memory_available(cls) -> bool:
            return False

        @classmethod
        def current_device(cls) -> Any:
            return torch.device("meta")

        @classmethod
        def device_count(cls) -> int:
            return GPU.device_count

        @classmethod
        def num_compute_units(cls, device_id: int = 0) -> int:
            return GPU.sm_count

    platforms._current_platform = StandInH200()  # type: ignore[attr-defined]
    import vllm.utils.torch_utils as torch_utils

    torch_utils.PIN_MEMORY = False  # computed at import, before the platform existed

    import vllm._custom_ops as custom_ops

    custom_ops.cutlass_scaled_mm_supports_fp8 = lambda capability: capability >= 89
    custom_ops.cutlass_scaled_mm_supports_block_fp8 = lambda capability: capability >= 90
    custom_ops.cutlass_scaled_mm_supports_fp4 = lambda capability: capability >= 100
    for ns in (
        "_C",
        "_C_cache_ops",
        "_moe_C",
        "_C_custom_ar",
        "_C_cuda_utils",
        "_vllm_fa2_C",
        "_vllm_fa3_C",
        "_flashmla_C",
        "_flashmla_extension_C",
    ):
        setattr(torch.ops, ns, _AbsentKernelNamespace(ns))
    # FlashKDA's forward workspace size, asked at construction (see the module docstring)
    torch.ops._flashkda_C = _FlashKdaNamespace("_flashkda_C")  # type: ignore[attr-defined]

    # An H200 host has Triton: the config's Triton checks (which pick and validate the V2 model
    # runner for its default architectures and mixed-window DFlash drafts) answer as there.
    import vllm.config.vllm as vllm_config_module

    vllm_config_module.HAS_TRITON = True

    from vllm.model_executor.models import registry

    registry._run_in_subprocess = lambda fn: fn()  # type: ignore[assignment]

    # 0.33.0's FlashInfer attention allocates its multi-CTA KV counter on "cuda" at construction
    # (``v1/attention/backends/flashinfer.py`` ``_get_multi_ctas_kv_counter_buffer``): the same
    # buffer on the meta device (its size never reaches the KV cache).
    try:
        import vllm.v1.attention.backends.flashinfer as fi_backend
    except ImportError:
        fi_backend = None
    counter = getattr(fi_backend, "_get_multi_ctas_kv_counter_buffer", None)
    if counter is not None:
        fi_backend._get_multi_ctas_kv_counter_buffer = functools.partial(  # type: ignore[union-attr]
            lambda fn, min_bytes, device: fn(min_bytes, torch.device("meta")), counter
        )

    # The CUDA wheel vendors DeepGEMM (``vllm.third_party.deep_gemm``, whose library needs
    # libtorch_cuda): on an H200 ``has_deep_gemm()`` is true, and the sparse-attention indexer
    # (``SparseAttnIndexer.__init__``) refuses to build without it. Its check answers as there;
    # no DeepGEMM kernel is ever called.
    try:
        import vllm.model_executor.layers.sparse_attn_indexer as sparse_indexer
    except ImportError:
        sparse_indexer = None
    if sparse_indexer is not None and hasattr(sparse_indexer, "has_deep_gemm"):
        sparse_indexer.has_deep_gemm = lambda: True  # type: ignore[attr-defined]
    # GLM-5.3-Flash's kpool indexer (``SparseAttnIndexerKpool.__init__``: 0.30.0's
    # ``model_executor/layers/sparse_attn_indexer_kpool.py``, 0.31+'s
    # ``models/glm5next/nvidia/sparse_indexer.py``) asks the same of ``vllm.utils.deep_gemm``
    # when it is imported with the model; the 0.30.0-0.32.0 boot environments cannot load the
    # vendored library (0.33.0's can), a CUDA box can. Only those two modules get the answer.
    _kpool_deep_gemm_stand_in()

    _step5_adapter_stand_in(torch)
    _lamport_bindings_stand_in()
    _gemm_rs_ar_stand_in()

    import vllm
    import vllm.logger as vllm_logger
    from vllm.config.vllm import set_current_vllm_config
    from vllm.distributed import parallel_state
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.model_executor.model_loader import base_loader, get_model_loader
    from vllm.model_executor.model_loader.utils import initialize_model
    from vllm.multimodal.gpu_ipc_memory import reserve_mm_ipc_gpu_memory
    from vllm.platforms import current_platform
    from vllm.usage.usage_lib import UsageContext
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    from vllm.utils.torch_utils import set_default_torch_dtype
    from vllm.v1.attention.backends import utils as backend_utils
    from vllm.v1.core import kv_cache_utils as kcu

    try:  # 0.33.0: get_kv_cache_configs / get_global_kv_cache_groups live in kv_cache_planning
        from vllm.v1.core import kv_cache_planning as planning
    except ImportError:  # 0.27.1 .. 0.32.0: in kv_cache_utils
        planning = kcu
    try:  # 0.29.0+: the engine core resolves one KV cache layout before planning
        from vllm.v1.attention.backends.utils import resolve_kv_cache_layout
        from vllm.v1.worker.worker_base import WorkerBase
    except ImportError:  # 0.27.1, 0.28.0
        resolve_kv_cache_layout = WorkerBase = None
    from torch.overrides import TorchFunctionMode
    from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    try:
        from vllm.model_executor.models import registry as _registry

        _TRANSFORMERS_TABLES = {
            *getattr(_registry, "_TRANSFORMERS_SUPPORTED_MODELS", {}),
            *getattr(_registry, "_TRANSFORMERS_BACKEND_MODELS", {}),
        }
    except ImportError:  # a release without them
        _TRANSFORMERS_TABLES = set()

    class CudaBuffersOnMeta(TorchFunctionMode):
        """Tensors created with an explicit ``device="cuda"`` are created on the meta device."""

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            device = kwargs.get("device")
            if device is not None and torch.device(device).type == "cuda":
                kwargs = {**kwargs, "device": torch.device("meta")}
            return func(*args, **kwargs)

    def load_model_on_meta(self: Any, vllm_config: Any, model_config: Any, prefix: str = "") -> Any:
        # The sparse-attention (DSA indexer) models allocate their top-k indices buffer on "cuda"
        # at construction (``deepseek_v2.py`` ``DeepseekV2Model.__init__``): on the meta device
        # here (its size never reaches the KV cache). Other models are built as they are.
        sparse = hasattr(model_config.hf_text_config, "index_topk")
        # the Transformers modeling backend materializes its meta parameters on "cuda"
        # (transformers/base.py init_parameters): on the meta device here
        backend = any(a in _TRANSFORMERS_TABLES for a in (model_config.architectures or []))
        with (
            set_default_torch_dtype(model_config.dtype),
            torch.device("meta"),
            CudaBuffersOnMeta() if sparse or backend else contextlib.nullcontext(),
        ):
            model = initialize_model(vllm_config=vllm_config, model_config=model_config, prefix=prefix)
        return model.eval()

    base_loader.BaseModelLoader.load_model = load_model_on_meta  # type: ignore[method-assign]

    # The registry inspects a model class it has not cached in a fresh subprocess (to keep CUDA
    # out of the parent); that subprocess lacks the torchvision op declarations above, so every
    # multimodal class importing an image processor "failed to be inspected". There is no CUDA
    # here: inspect in-process, where the declarations hold.
    from vllm.model_executor.models import registry as model_registry

    model_registry._run_in_subprocess = lambda fn: fn()  # type: ignore[attr-defined]

    global VLLM_MINOR
    VLLM_MINOR = int(vllm.__version__.split(".")[1])

    # 0.30.0+'s ``GeluAndMulSparse.__init__`` (``layers/activation.py``; Gemma-3n's sparse MLPs)
    # reads its Gaussian cutoff as a Python float (``Normal(0, 1).icdf(sparsity).item()``) while the
    # model is built under the meta device, where a tensor has no value: its constructor runs under
    # the CPU device instead, so the float is the one a GPU box computes (the layer then holds no
    # tensor: nothing it builds reaches the weights or the KV cache). 0.27.1-0.29.0 keep the cutoff
    # as a tensor attribute (counted with the model's tensors on the meta device): built as it is.
    from vllm.model_executor.layers import activation as activation_layers

    sparse_gelu = getattr(activation_layers, "GeluAndMulSparse", None)
    if sparse_gelu is not None and VLLM_MINOR >= 30:
        sparse_gelu.__init__ = _on_cpu(sparse_gelu.__init__)

    # The Conformer encoder's relative positional table (``conformer_encoder.py``
    # ``RelPositionalEncoding``; FireRedASR2's audio tower) computes its frequency scale with
    # ``.item()`` while built: built under the CPU device, its ``pe`` table (a buffer from 0.29.0,
    # a plain attribute before) then moved to the device the model is built on (the meta device),
    # as a GPU box holds it on the GPU.
    try:
        conformer = importlib.import_module("vllm.model_executor.models.conformer_encoder")
    except ImportError:  # a release without the Conformer encoder
        pass
    else:
        rel_pos = conformer.RelPositionalEncoding
        rel_pos.__init__ = _on_cpu_buffers_moved(rel_pos.__init__)

    # ``XIELU.__init__`` (``layers/activation.py``; Apertus's MLP activation) computes its two
    # parameters (``alpha_p``, ``alpha_n``: one bfloat16 element each) and two buffers (``beta``,
    # ``eps``: bfloat16 scalars) from constants, then reads ``beta`` and ``eps`` back as Python floats
    # (``.item()``), which a meta tensor has not: built under the CPU device, its parameters and
    # buffers (same shapes, same dtype) then moved to the device the model is built on (the meta
    # device), where a GPU box holds them on the GPU. Nothing it builds reaches the KV cache.
    xielu = getattr(activation_layers, "XIELU", None)
    if xielu is not None:
        xielu.__init__ = _on_cpu_tensors_moved(xielu.__init__)

    # 0.27.1's Transformers modeling backend (``models/transformers/base.py``) reads the input
    # embedding's ``embed_scale`` buffer as a Python float (``float(embed_scale)``) to build its
    # ``ScaledVocabParallelEmbedding``; buffers are created on the caller's device (a GPU box's CUDA
    # device, here the meta device, where a tensor has no value). VaultGemma's scaled embedding
    # (transformers' ``VaultGemmaTextScaledWordEmbedding``) is built under the CPU device instead, so
    # the float is the one a GPU box reads (sqrt(hidden_size) in the model dtype). Its parameters still
    # land on the meta device, and the module is replaced by vLLM's before anything is counted.
    if VLLM_MINOR == 27:
        try:
            modeling_vaultgemma = importlib.import_module("transformers.models.vaultgemma.modeling_vaultgemma")
        except ImportError:  # a transformers release without VaultGemma: nothing to build
            pass
        else:
            scaled = modeling_vaultgemma.VaultGemmaTextScaledWordEmbedding
            scaled.__init__ = _on_cpu(scaled.__init__)

    V.__dict__.update(
        torch=torch,
        vllm=vllm,
        vllm_logger=vllm_logger,
        set_current_vllm_config=set_current_vllm_config,
        parallel_state=parallel_state,
        AsyncEngineArgs=AsyncEngineArgs,
        get_model_loader=get_model_loader,
        reserve_mm_ipc_gpu_memory=reserve_mm_ipc_gpu_memory,
        current_platform=current_platform,
        UsageContext=UsageContext,
        FlexibleArgumentParser=FlexibleArgumentParser,
        backend_utils=backend_utils,
        kcu=kcu,
        planning=planning,
        resolve_kv_cache_layout=resolve_kv_cache_layout,
        WorkerBase=WorkerBase,
        register_all_kvcache_specs=register_all_kvcache_specs,
        GPUModelRunner=GPUModelRunner,
    )
    V.parser = AsyncEngineArgs.add_cli_args(FlexibleArgumentParser(prog="vllm serve"))


def _set_parallel_groups(cfg: Any, pp_rank: int = 0) -> None:
    """Stand-in parallel groups in which this process is rank 0, except for pipeline
    parallelism: stage ``pp_rank`` of ``pipeline_parallel_size`` (the worker that builds that
    stage's layers). ``parallel_config.rank`` becomes that worker's rank, TP rank 0 of the stage
    (``WorkerBase.__init__`` sets it; the layout is DP x PP x TP, so ``pp_rank x TP``):
    ``ModelConfig.get_layers_start_end_indices`` reads the stage from it (an EAGLE head numbers
    its layer after the target's layers of that stage)."""
    pc = cfg.parallel_config
    tp = pc.tensor_parallel_size
    pp = pc.pipeline_parallel_size
    dp = pc.data_parallel_size
    pc.rank = pp_rank * tp
    ps = V.parallel_state
    ps._TP = _stand_in_group(tp, "tp")
    ps._PP = _stand_in_group(pp, "pp")
    ps._PP.rank_in_group = ps._PP.rank = pp_rank
    ps._PP.is_first_rank = pp_rank == 0
    ps._PP.is_last_rank = pp_rank == pp - 1
    ps._PP.unique_name = f"pp:{pp_rank}"
    ps._DP = _stand_in_group(dp, "dp")
    ps._EP = _stand_in_group(tp * dp, "ep")
    ps._EPLB = _stand_in_group(tp * dp, "eplb")
    ps._DCP = _stand_in_group(pc.decode_context_parallel_size, "dcp")
    ps._PCP = _stand_in_group(getattr(pc, "prefill_context_parallel_size", 1), "pcp")
    ps._WORLD = _stand_in_group(tp * pp, "world")
    if hasattr(ps, "_ETP"):
        # 0.30+: the Engram tensor-parallel group (Qwen4-Exp's PLE n-gram embedding, DeepSeek-V4.1's
        # Engram), vLLM's TP group unless --engram-config widens it across data parallelism
        engram = getattr(cfg, "engram_config", None)
        size = engram.get_parallel_size(pc) if engram is not None else tp
        ps._ETP = ps._TP if size == tp else _stand_in_group(size, "etp")


# --------------------------------------------------------------------------- log capture


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self) -> list[str]:
        out, self.records = self.records, []
        msgs = []
        for r in out:
            try:
                msgs.append(r.getMessage())
            except Exception:  # a malformed record must not sink the case
                msgs.append(str(r.msg))
        return msgs


def _vllm_caches() -> list[Any]:
    """Every ``functools`` cache in vLLM's loaded modules (module functions and class methods)."""
    found: dict[int, Any] = {}

    def take(obj: Any) -> None:
        if isinstance(obj, (classmethod, staticmethod)):
            obj = obj.__func__
        if isinstance(obj, functools._lru_cache_wrapper):  # @cache / @lru_cache
            found.setdefault(id(obj), obj)

    for name, mod in list(sys.modules.items()):
        if not (name == "vllm" or name.startswith("vllm.")) or mod is None:
            continue
        for obj in list(vars(mod).values()):
            take(obj)
            if isinstance(obj, type) and getattr(obj, "__module__", "") == name:
                for attr in list(vars(obj).values()):
                    take(attr)
    return list(found.values())


def _reset_per_process_caches() -> None:
    """Make each case start like a fresh engine process: vLLM memoises per process (the
    attention backend chosen per selector config, whose answer also depends on the current
    config; the *_once log helpers; the KV cache layout ...), and a real boot has one config per
    process. Every functools cache of vLLM's modules is cleared before each case, and the
    device buffers vLLM keeps in module globals across models (FlashInfer attention's shared
    multi-CTA KV counter, ``_fi_multi_ctas_kv_counter``, allocated while the model is built) are
    dropped, so each case allocates them anew as a fresh process does; the modules that allocate
    when imported (:data:`IMPORT_ALLOCATING_MODULES`) are dropped from ``sys.modules`` likewise."""
    for fn in _vllm_caches():
        with contextlib.suppress(Exception):
            fn.cache_clear()
    for name in PROCESS_BUFFER_MODULES:
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "_fi_multi_ctas_kv_counter", None) is not None:
            setattr(mod, "_fi_multi_ctas_kv_counter", None)  # noqa: B010  (vLLM's module global)
    for name in IMPORT_ALLOCATING_MODULES:  # imported anew by the case that needs it
        sys.modules.pop(name, None)


#: vLLM's modules that keep a device buffer in a module global for the whole process
PROCESS_BUFFER_MODULES = (
    "vllm.v1.attention.backends.flashinfer",
    "vllm.v1.attention.backends.mla.flashinfer_mla",
)


# --------------------------------------------------------------------------- one case


class _Failed(Exception):
    def __init__(self, stage: str, error: str) -> None:
        super().__init__(error)
        self.stage = stage
        self.error = error


def _fmt_exc(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _where(e: BaseException) -> str:
    """`` at FILE:LINE`` of the tree's code that failed: a syntax error's own file and line (its
    traceback ends in the importer, this file), else the last frame outside this file and the
    import machinery."""
    if isinstance(e, SyntaxError) and e.filename:
        return f" at {e.filename}:{e.lineno}"
    frames = [
        f
        for f in traceback.extract_tb(e.__traceback__)
        if f.filename != __file__ and not f.filename.startswith("<frozen")
    ]
    return f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def _parse(model: str, argv: list[str]) -> Any:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return V.parser.parse_args(["--model", model, *argv])
    except SystemExit as e:
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        raise _Failed("parse", f"SystemExit: {lines[-1] if lines else e.code}") from None


def _make_drafter(cfg: Any, device: Any) -> Any:
    """The proposer ``GPUModelRunner.__init__`` builds, chosen by the speculative config's own
    predicates (only proposers that own a model; ngram and suffix decoding have no layers)."""
    sc = cfg.speculative_config
    if sc is None:
        return None
    if sc.method in ("ngram", "suffix", "custom_class"):
        return None
    if sc.method == "extract_hidden_states":
        from vllm.v1.spec_decode.extract_hidden_states import ExtractHiddenStatesProposer

        return ExtractHiddenStatesProposer(vllm_config=cfg, device=device)
    if sc.uses_draft_model():
        from vllm.v1.spec_decode.draft_model import DraftModelProposer

        return DraftModelProposer(vllm_config=cfg, device=device, runner=None)
    if getattr(sc, "use_ngram_gpu", lambda: False)():
        return None
    if getattr(sc, "use_gemma4_mtp", lambda: False)():
        from vllm.v1.spec_decode.gemma4 import Gemma4Proposer

        return Gemma4Proposer(cfg, device, None)
    if getattr(sc, "use_step3p5_mtp", lambda: False)():
        from vllm.v1.spec_decode.step3p5 import Step3p5MTPProposer

        return Step3p5MTPProposer(cfg, device, None)
    if sc.use_dflash():
        from vllm.v1.spec_decode.dflash import DFlashProposer

        return DFlashProposer(cfg, device, None)
    if sc.use_eagle():
        from vllm.v1.spec_decode.eagle import EagleProposer

        return EagleProposer(cfg, device, None)
    if sc.method == "medusa":
        from vllm.v1.spec_decode.medusa import MedusaProposer

        return MedusaProposer(vllm_config=cfg, device=device)
    raise NotImplementedError(f"speculative method {sc.method!r} is not modelled by the oracle")


def _spec_type(spec: Any) -> str:
    name = type(spec).__name__
    return name[: -len("Spec")] if name.endswith("Spec") else name


#: The CUDA caching allocator's smallest block (bytes): every tensor takes a multiple of it.
ALLOCATOR_ROUND = 512


def _model_bytes(model: Any, drafter: Any) -> int:
    """What ``Model loading took`` would count for this rank: every parameter and buffer of the
    model (and of the drafter's own model) built on the meta device, each tensor once, as the
    caching allocator holds it while loading (:func:`_loaded_bytes`). ``process_weights_after_loading`` is not run, so a
    layout repacked after loading (Marlin, fp8 scales) is counted as constructed."""
    modules = [model]
    inner = getattr(drafter, "model", None)
    if isinstance(inner, V.torch.nn.Module):
        modules.append(inner)
    seen: set[int] = set()
    total = 0
    for module in modules:
        for tensor in [*module.parameters(), *module.buffers()]:
            if id(tensor) in seen:
                continue
            seen.add(id(tensor))
            total += _loaded_bytes(tensor.numel() * tensor.element_size())
    return total


def _import_allocated_bytes() -> int:
    """What the modules of :data:`IMPORT_ALLOCATING_MODULES` imported while this rank's model was
    built hold on the device (inside ``load_model``'s profiler, so in ``Model loading took``):
    the meta tensors their module globals keep (CUTLASS MLA's ``g_sm100_workspace``: 128 MiB, its
    module imported by the MLA selector on SM 10.x), each as :func:`_loaded_bytes` counts it."""
    total = 0
    for name in IMPORT_ALLOCATING_MODULES:
        mod = sys.modules.get(name)
        if mod is None:
            continue
        for obj in list(vars(mod).values()):
            held = [obj] if isinstance(obj, V.torch.Tensor) else list(getattr(obj, "__dict__", {}).values())
            for t in held:
                if isinstance(t, V.torch.Tensor) and t.device.type == "meta":
                    total += _loaded_bytes(t.numel() * t.element_size())
    return total


def _loaded_bytes(nbytes: int) -> int:
    """One tensor as ``Model loading took`` counts it: 512-byte blocks, or the whole 2 MiB-rounded
    segment where PyTorch's caching allocator does not split it under vLLM's load scope
    (``max_split_size_mb`` 20, 0.27.1-0.33): 20 MiB or more, or 10 MiB or more leaving at most
    1 MiB of its segment (the rule dryboot's weights model states as ``load_segment_bytes``)."""
    size = -(-nbytes // ALLOCATOR_ROUND) * ALLOCATOR_ROUND
    segment = -(-size // (2 << 20)) * (2 << 20)
    unsplit = size >= (10 << 20) and (size >= (20 << 20) or segment - size <= (1 << 20))
    return segment if unsplit else size


def _no_jit_warmup_registration(cfg: Any) -> None:
    """Build the model with ``kernel_config.enable_jit_warmup`` off (see the module docstring):
    with it on, layers import their JIT kernels' modules to register them for the warmup that
    runs after the KV cache is allocated (a no-op here: no warmup registry is active)."""
    kernel_config = getattr(cfg, "kernel_config", None)
    if kernel_config is not None and getattr(kernel_config, "enable_jit_warmup", False):
        kernel_config.enable_jit_warmup = False


def _worker_kv_cache_spec(cfg: Any, pp_rank: int, res: dict[str, Any]) -> dict[str, Any]:
    """What one GPU worker does up to ``get_kv_cache_spec``: build the drafter and the model
    (pipeline stage ``pp_rank``) on the meta device, then ``update_block_size_for_backend`` on
    its own config (each worker runs it after its load: ``multiproc_executor.py``)."""
    _set_parallel_groups(cfg, pp_rank)
    _no_jit_warmup_registration(cfg)
    V.current_platform.check_if_supports_dtype(cfg.model_config.dtype)
    meta = V.torch.device("meta")
    v2 = bool(cfg.use_v2_model_runner)
    res["model_runner"] = "v2" if v2 else "v1"
    # Worker.init_device: the workspace manager, before the model runner (the sparse MLA
    # backends reserve their prefill workspace at construction), on the meta device here.
    from vllm.v1.worker import gpu_worker
    from vllm.v1.worker.workspace import init_workspace_manager

    num_ubatches = 2 if cfg.parallel_config.enable_dbo else 1
    lanes = getattr(gpu_worker, "_num_workspace_lanes", None)
    if lanes is not None:
        init_workspace_manager(meta, num_ubatches, lanes(cfg, v2))
    else:
        init_workspace_manager(meta, num_ubatches)
    # both runners put the whole drafter on the last pipeline stage
    last_stage = pp_rank == cfg.parallel_config.pipeline_parallel_size - 1
    for name in IMPORT_ALLOCATING_MODULES:  # each stage's worker is a process of its own
        sys.modules.pop(name, None)
    with V.set_current_vllm_config(cfg):
        if v2:
            # vllm/v1/worker/gpu/model_runner.py: GPUModelRunner.__init__ / load_model
            from vllm.v1.worker.gpu.spec_decode import init_speculator
            from vllm.v1.worker.gpu.spec_decode.speculator import DraftModelSpeculator

            drafter = None
            if (
                last_stage
                and cfg.speculative_config is not None
                and cfg.speculative_config.method not in ("ngram", "suffix")
            ):
                import inspect

                if "req_states" in inspect.signature(init_speculator).parameters:
                    # 0.33.0: speculators get the runner's RequestState (token buffers, never
                    # read for the KV cache): a stand-in with its sizes.
                    sc = cfg.scheduler_config
                    req_states = types.SimpleNamespace(
                        max_num_reqs=sc.max_num_seqs,
                        max_model_len=cfg.model_config.max_model_len,
                        max_num_batched_tokens=sc.max_num_batched_tokens,
                        num_speculative_steps=cfg.speculative_config.num_speculative_tokens,
                        device=meta,
                    )
                    drafter = init_speculator(cfg, meta, req_states)
                else:
                    drafter = init_speculator(cfg, meta)
            model = V.get_model_loader(cfg.load_config).load_model(vllm_config=cfg, model_config=cfg.model_config)
            if isinstance(drafter, DraftModelSpeculator):
                drafter.load_model(model)
        else:
            # vllm/v1/worker/gpu_model_runner.py: GPUModelRunner.__init__ / load_model
            drafter = _make_drafter(cfg, meta) if last_stage else None
            model = V.get_model_loader(cfg.load_config).load_model(vllm_config=cfg, model_config=cfg.model_config)
            if drafter is not None and hasattr(drafter, "load_model"):
                drafter.load_model(model)
    res.setdefault("weights_bytes", []).append(_model_bytes(model, drafter) + _import_allocated_bytes())
    V.built_model = model  # the profile run's (stage "profile"), the last stage's worker's
    V.current_platform.update_block_size_for_backend(cfg)
    if v2:
        from vllm.v1.worker.gpu.attn_utils import get_kv_cache_spec

        # 0.33.0 has no VllmConfig.is_encoder_only (the V2 runner no longer checks it) and
        # keeps a replicated cache for a DCP=1 draft under a DCP target.
        specs = {} if getattr(cfg, "is_encoder_only", False) else get_kv_cache_spec(cfg)
        if (
            isinstance(drafter, DraftModelSpeculator)
            and getattr(drafter, "dcp_size", None) == 1
            and cfg.parallel_config.decode_context_parallel_size > 1
            and hasattr(drafter, "draft_attn_layer_names")
        ):
            import dataclasses

            for name in drafter.draft_attn_layer_names & specs.keys():
                specs[name] = dataclasses.replace(specs[name], dcp_sharded=False)
    else:
        runner = types.SimpleNamespace(vllm_config=cfg, shared_kv_cache_layers={})
        specs = V.GPUModelRunner.get_kv_cache_spec(runner)
    return dict(specs)


#: the keywords the profile run calls the model with (``GPUModelRunner._dummy_run``: ``self.model(
#: input_ids=..., positions=..., intermediate_tensors=..., inputs_embeds=..., **model_kwargs)``, the
#: model kwargs empty for a text model; the V2 runner's ``model_inputs`` holds the same four keys)
PROFILE_CALL_KEYWORDS = ("input_ids", "positions", "intermediate_tensors", "inputs_embeds")


def _profile_run_call(model: Any) -> None:
    """Whether the profile run's call of the model binds (``Worker.determine_available_memory``
    runs ``profile_run`` before the KV cache is planned, with ``--kv-cache-memory-bytes`` too).

    The oracle runs no forward; it checks only that the model's ``forward`` takes the dummy run's
    keywords (:data:`PROFILE_CALL_KEYWORDS`). A class that does not (the speculative-decoding
    drafters: an MTP / EAGLE module needs the target's ``hidden_states``, a DFlash / DSpark drafter
    takes no ``intermediate_tensors``) fails there on vLLM with Python's own ``TypeError``; here the
    forward is called with those keywords only when they do not bind, so Python raises that same
    error before any of its body runs."""
    import inspect

    kwargs = dict.fromkeys(PROFILE_CALL_KEYWORDS)
    try:
        inspect.signature(model.forward).bind(**kwargs)
    except TypeError:
        model.forward(**kwargs)


def _set_gpu(g: dict[str, Any]) -> None:
    """Answer as GPU ``g`` (``--gpu``'s JSON, or a case's ``gpu``) from now on: the stand-in
    platform and ``torch.cuda.get_device_properties`` read these fields at each call."""
    GPU.name = str(g.get("name", GPU.name))
    GPU.capability = tuple(int(x) for x in g.get("capability", GPU.capability))  # type: ignore[assignment]
    GPU.total_memory = int(g.get("total_memory", GPU.total_memory))
    GPU.sm_count = int(g.get("sm_count", GPU.sm_count))


def run_case(case: dict[str, Any], capture: _Capture) -> dict[str, Any]:
    t0 = time.perf_counter()
    # a case may name its own GPU (one process serves several GPUs; the caches that could hold
    # the last GPU's answers are cleared just below); without one, the process's --gpu
    saved_gpu = dataclasses.asdict(GPU)
    if case.get("gpu"):
        _set_gpu(case["gpu"])
    _reset_per_process_caches()
    capture.take()
    res: dict[str, Any] = {"id": case.get("id"), "ok": False}
    stage = "parse"
    env = {str(k): str(v) for k, v in (case.get("env") or {}).items()}
    saved_env = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # vllm.envs reads the environment when asked (no cache here)
    try:
        args = _parse(str(case["model"]), [str(a) for a in case.get("argv", [])])

        stage = "config"
        engine_args = V.AsyncEngineArgs.from_cli_args(args)
        cfg = engine_args.create_engine_config(usage_context=V.UsageContext.OPENAI_API_SERVER)

        stage = "model"
        pp = cfg.parallel_config.pipeline_parallel_size
        # pipeline parallelism: one worker per stage, each with its own copy of the config
        # (made before any worker mutates it), building that stage's layers
        import copy

        stage_cfgs = [cfg] + [copy.deepcopy(cfg) for _ in range(pp - 1)]
        kv_cache_specs = []
        for pp_rank, stage_cfg in enumerate(stage_cfgs):
            kv_cache_specs.append(_worker_kv_cache_spec(stage_cfg, pp_rank, res))
        res["block_size"] = cfg.cache_config.block_size
        if pp > 1:
            res["stage_layers"] = [len(s) for s in kv_cache_specs]

        stage = "profile"
        model, V.built_model = V.built_model, None
        _profile_run_call(model)

        stage = "plan"
        V.register_all_kvcache_specs(cfg)
        kv_bytes = cfg.cache_config.kv_cache_memory_bytes
        budget = case.get("budget")
        per_stage = None
        if not kv_bytes and budget:
            # no --kv-cache-memory-bytes: Worker.determine_available_memory's
            # requested - non_kv - cudagraph estimate, with this tree's own weights per rank
            # (counted on the meta device) and the caller's other terms (low, estimate, high)
            requested = int(budget["requested"])
            other_low, other_est, other_high = (int(x) for x in budget["other"])
            weights = res["weights_bytes"]
            per_stage = [requested - w - other_est for w in weights]
            res["budget"] = {
                "requested": requested,
                "weights_bytes": weights,
                "other": [other_low, other_est, other_high],
                "available": [requested - weights[0] - other_high, per_stage[0], requested - weights[0] - other_low],
            }
            kv_bytes = per_stage[0]
        if not kv_bytes:
            raise _Failed("plan", "OracleError: the oracle needs --kv-cache-memory-bytes (no profile run)")
        available = V.reserve_mm_ipc_gpu_memory(
            kv_bytes,
            cfg.model_config.multimodal_config,
            getattr(cfg.parallel_config, "_api_process_count", 1),
        )
        extra_args: list[Any] = []
        if V.resolve_kv_cache_layout is not None:
            # 0.29.0+ EngineCore._initialize_kv_caches: one layout from the workers' backends
            # (WorkerBase.get_supported_kv_cache_layouts), adopted via set_kv_cache_layout.
            # (one list per pipeline stage's worker: resolve_kv_cache_layout asserts they agree)
            worker = types.SimpleNamespace(vllm_config=cfg)
            supported = [
                V.WorkerBase.get_supported_kv_cache_layouts(types.SimpleNamespace(vllm_config=c)) for c in stage_cfgs
            ]
            layout = V.resolve_kv_cache_layout(cfg, supported, [s for d in kv_cache_specs for s in d.values()])
            if hasattr(V.planning, "get_global_kv_cache_groups"):
                # 0.33.0: global groups first (also fixes the DCP interleave size), passed on
                global_groups = V.planning.get_global_kv_cache_groups(cfg, kv_cache_specs)
                if hasattr(cfg, "adjust_dcp_kv_cache_interleave_size"):
                    cfg.adjust_dcp_kv_cache_interleave_size(global_groups)
                V.WorkerBase.set_kv_cache_layout(worker, layout.name, cfg.parallel_config.cp_kv_cache_interleave_size)
                extra_args = [global_groups]
            else:
                V.WorkerBase.set_kv_cache_layout(worker, layout.name)
        # EngineCore._initialize_kv_caches: every worker reports its budget when any has a KV
        # cache layer (a pipeline stage without one still gets the budget), else all get 0
        has_kv_cache = any(kv_cache_specs)
        if per_stage is not None:  # each stage's rank: its own weights
            ipc = kv_bytes - available  # reserve_mm_ipc_gpu_memory's reservation
            available_memory = [(s - ipc) if has_kv_cache else 0 for s in per_stage]
        else:
            available_memory = [available if has_kv_cache else 0 for _ in kv_cache_specs]
        configs = V.planning.get_kv_cache_configs(cfg, kv_cache_specs, available_memory, *extra_args)
        sched = V.kcu.generate_scheduler_kv_cache_config(configs)
        cfg.cache_config.num_gpu_blocks = sched.num_blocks
        if sched.kv_cache_groups:
            if VLLM_MINOR >= 30:
                # 0.30.0+: groups that opt out of prefix caching do not set the block size
                part = [g.kv_cache_spec.block_size for g in sched.kv_cache_groups if g.kv_cache_spec.prefix_cacheable]
                cfg.cache_config.block_size = min(part or [g.kv_cache_spec.block_size for g in sched.kv_cache_groups])
            else:
                cfg.cache_config.block_size = min(g.kv_cache_spec.block_size for g in sched.kv_cache_groups)
            if hasattr(V.kcu, "update_kv_cache_capacity"):
                V.kcu.update_kv_cache_capacity(cfg, sched)
            else:  # 0.27.1: the engine core stores get_kv_cache_capacity's answer itself
                tokens, conc = V.kcu.get_kv_cache_capacity(cfg, sched)
                cfg.cache_config.kv_cache_size_tokens = tokens
                cfg.cache_config.kv_cache_max_concurrency = conc
        cfg.validate_block_size()
        sbs, hbs = V.kcu.resolve_kv_cache_block_sizes(sched, cfg)

        res.update(
            ok=True,
            groups=[
                [
                    _spec_type(g.kv_cache_spec),
                    g.kv_cache_spec.block_size,
                    g.kv_cache_spec.page_size_bytes,
                    len(g.layer_names),
                ]
                for g in sched.kv_cache_groups
            ],
            group_layers=[list(g.layer_names) for g in sched.kv_cache_groups],
            num_blocks=sched.num_blocks,
            tokens=cfg.cache_config.kv_cache_size_tokens,
            concurrency=cfg.cache_config.kv_cache_max_concurrency,
            max_model_len=cfg.model_config.max_model_len,
            final_block_size=cfg.cache_config.block_size,
            scheduler_block_size=sbs,
            hash_block_size=hbs,
            available_memory=available,
        )
    except _Failed as f:
        res.update(stage=f.stage, error=f.error)
    except BaseException as e:  # isolate every failure (SystemExit/AssertionError included)
        if isinstance(e, KeyboardInterrupt):
            raise
        res.update(stage=stage, error=_fmt_exc(e))
        if os.environ.get("E2E_ORACLE_TRACEBACKS"):
            res["traceback"] = "".join(traceback.format_exception(type(e), e, e.__traceback__)[-6:])
    finally:
        _set_gpu(saved_gpu)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    log = capture.take()
    res["kv_log"] = [m for m in log if any(k in m for k in KV_LOG_MARKERS)]
    res["log"] = log[-60:]
    res["seconds"] = round(time.perf_counter() - t0, 4)
    return res


def _read_cases(stream: Any) -> Any:
    text_iter = iter(stream)
    first = ""
    for line in text_iter:
        if line.strip():
            first = line
            break
    if not first:
        return
    stripped = first.lstrip()
    if stripped.startswith("{") and '"cases"' in stripped[:20]:
        doc = json.loads(first + "".join(text_iter))
        yield from doc["cases"]
        return
    yield json.loads(first)
    for line in text_iter:
        if line.strip():
            yield json.loads(line)


def _options(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="engine_start.py")
    ap.add_argument("--tree", help="directory holding the vllm package to import (put first on sys.path)")
    ap.add_argument("--gpu", help='JSON: {"name", "capability": [9, 0], "total_memory", "sm_count"}')
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    opts = _options(sys.argv[1:] if argv is None else argv)
    # This file's own directory (sys.path[0] when run by path) holds dryboot's modules, which
    # must not shadow anything the tree imports; the tree under test goes first instead.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    if opts.tree:
        sys.path.insert(0, os.path.abspath(opts.tree))
    if opts.gpu:
        _set_gpu(json.loads(opts.gpu))
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # anything vLLM prints must not corrupt the JSON lines
    t0 = time.perf_counter()
    try:
        _install()
    except BaseException as e:  # a tree that does not import: one line saying what failed
        if isinstance(e, KeyboardInterrupt):
            raise
        failed = {"stage": "import", "error": _fmt_exc(e) + _where(e)}
        real_stdout.write(json.dumps({"meta": failed}) + "\n")
        real_stdout.flush()
        return 3
    import_seconds = time.perf_counter() - t0
    ready = {
        "stage": "ready",
        "vllm_version": V.vllm.__version__,
        "vllm_file": V.vllm.__file__,
        "import_seconds": round(import_seconds, 3),
        "gpu": dataclasses.asdict(GPU),
    }
    real_stdout.write(json.dumps({"meta": ready}) + "\n")
    real_stdout.flush()

    capture = _Capture()
    root = logging.getLogger("vllm")
    root.addHandler(capture)
    root.setLevel(logging.DEBUG if os.environ.get("E2E_ORACLE_DEBUG_LOGS") else logging.INFO)
    root.propagate = False

    n = 0
    case_seconds = 0.0
    for case in _read_cases(sys.stdin):
        res = run_case(case, capture)
        n += 1
        if n % GC_EVERY == 0:
            gc.collect()  # a full collection costs seconds with vLLM loaded: not after every case
        case_seconds += res["seconds"]
        real_stdout.write(json.dumps(res, default=str) + "\n")
        real_stdout.flush()
    meta: dict[str, Any] = {
        "vllm_version": V.vllm.__version__,
        "cases": n,
        "import_seconds": round(import_seconds, 3),
        "case_seconds": round(case_seconds, 3),
        "total_seconds": round(time.perf_counter() - t0, 3),
    }
    real_stdout.write(json.dumps({"meta": meta}) + "\n")
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
