"""Record what ``--enable-lora`` allocates on one rank of vLLM, on the meta device.

    $DRYBOOT_VLLM_PYTHON tests/fidelity/record_lora.py

Runs inside the boot environment's interpreter (no dryboot import), as ``record_weights.py``:
``src/dryboot/boot/engine_start.py``'s stand-ins (faked H200, kernels absent, distributed groups
of the configured sizes), ``vllm serve``'s flags parsed, ``create_engine_config``, the model built
on the meta device by vLLM's loader, then vLLM's own ``LRUCacheWorkerLoRAManager`` (what
``GPUModelRunner.load_lora_model`` builds inside ``load_model``'s memory profiler) created with the
meta device. Every tensor created on the meta device while the manager is built is recorded
(a ``TorchDispatchMode``; the fused-MoE layers' ``process_weights_after_loading`` runs first, as
vLLM's loader runs it); those whose storage is still alive afterwards are what LoRA keeps
allocated, summed once per storage and rounded to the CUDA allocator's 512-byte blocks.

Cases: the tiny configs of ``data/architectures/`` named in ``CONFIGS`` (``RECORD_CONFIGS``: a
comma-separated subset) at TP 1 and 2, max-lora rank 8 and 64, max-loras 1 and 4 (one with
``--fully-sharded-loras``). Writes ``data/lora/recorded-<version>.json`` (``RECORD_OUT``:
elsewhere): ``{"vllm", "cases": {id: {"config", "argv", "ok",
"lora_allocated_bytes", "lora_storage_bytes", "tensors", "shapes", "max_num_batched_tokens",
"max_num_seqs", "punica", "error"}}}``. What is faked: the GPU (an H200 stand-in), the absent
CUDA/Triton kernels (vLLM's ``LoRAKernelMeta`` dataclass, which ``punica_gpu`` imports only with
Triton, is loaded from its file), the distributed groups. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import oracle_stand_ins

HERE = Path(__file__).resolve().parent
ARCHS = HERE / "data" / "architectures"
CONFIGS = (
    "LlamaForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "MistralForCausalLM",
    "Phi3ForCausalLM",
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "MixtralForCausalLM",
)
FLAG_SETS = [
    ["--tensor-parallel-size", "1", "--max-loras", "1", "--max-lora-rank", "8"],
    ["--tensor-parallel-size", "1", "--max-loras", "4", "--max-lora-rank", "64"],
    ["--tensor-parallel-size", "2", "--max-loras", "1", "--max-lora-rank", "8"],
    ["--tensor-parallel-size", "2", "--max-loras", "4", "--max-lora-rank", "64"],
    ["--tensor-parallel-size", "2", "--max-loras", "4", "--max-lora-rank", "64", "--fully-sharded-loras"],
]


def main() -> int:
    es, real_stdout = oracle_stand_ins.start()
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    from vllm.lora.layers import BaseLayerWithLoRA
    from vllm.lora.worker_manager import LRUCacheWorkerLoRAManager

    V = es.V
    # punica_gpu imports LoRAKernelMeta only with Triton (absent here): vLLM's own dataclass, loaded
    # by path (the package's __init__ imports the Triton kernels)
    import vllm.lora.punica_wrapper.punica_gpu as punica_gpu

    if not hasattr(punica_gpu, "LoRAKernelMeta"):
        meta_path = Path(punica_gpu.__file__).parents[1] / "ops" / "triton_ops" / "lora_kernel_metadata.py"
        mspec = importlib.util.spec_from_file_location("_lora_kernel_metadata", meta_path)
        assert mspec is not None and mspec.loader is not None
        mmod = importlib.util.module_from_spec(mspec)
        sys.modules["_lora_kernel_metadata"] = mmod
        mspec.loader.exec_module(mmod)
        punica_gpu.LoRAKernelMeta = mmod.LoRAKernelMeta  # type: ignore[attr-defined]

    class Record(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.made: list[tuple[weakref.ref[Any], tuple[int, ...], str]] = []

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            ins = {id(t.untyped_storage()) for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)}
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and t.device.type == "meta" and id(t.untyped_storage()) not in ins:
                    self.made.append((weakref.ref(t), tuple(t.shape), str(t.dtype)))
            return out

    scratch = Path(tempfile.mkdtemp(prefix="record-lora-"))
    out_path = Path(os.environ.get("RECORD_OUT") or HERE / "data" / "lora" / f"recorded-{V.vllm.__version__}.json")
    doc: dict[str, Any] = {"vllm": V.vllm.__version__, "cases": {}}
    for arch in [c for c in os.environ.get("RECORD_CONFIGS", "").split(",") if c] or CONFIGS:
        d = scratch / f"arch--{arch}"
        d.mkdir()
        shutil.copy(ARCHS / f"{arch}.json", d / "config.json")
        if (ARCHS / "files" / arch).is_dir():
            shutil.copytree(ARCHS / "files" / arch, d, dirs_exist_ok=True)
        for argv in FLAG_SETS:
            cid = f"{arch} " + " ".join(argv)
            es._reset_per_process_caches()
            row: dict[str, Any] = {"config": arch, "argv": argv, "ok": False}
            try:
                args = es._parse(str(d), ["--max-model-len", "4096", "--enable-lora", *argv])
                cfg = V.AsyncEngineArgs.from_cli_args(args).create_engine_config(
                    usage_context=V.UsageContext.OPENAI_API_SERVER
                )
                es._set_parallel_groups(cfg, 0)
                with V.set_current_vllm_config(cfg):
                    model = V.get_model_loader(cfg.load_config).load_model(
                        vllm_config=cfg, model_config=cfg.model_config
                    )
                    # vLLM's loader runs each quant method's process_weights_after_loading before
                    # LoRA wraps the model (the meta loader skips it): the fused-MoE layers' is what
                    # selects their modular kernel, which FusedMoEWithLoRA requires
                    for m in model.modules():
                        qm = getattr(m, "quant_method", None)
                        if "w13_weight" in m._parameters and getattr(qm, "moe_kernel", False) is None:
                            qm.process_weights_after_loading(m)
                    rec = Record()
                    with rec:
                        mgr = LRUCacheWorkerLoRAManager(cfg, torch.device("meta"), model.embedding_modules)
                        model = mgr.create_lora_manager(model, cfg)
                gc.collect()
                storages: dict[int, int] = {}
                tensors = []
                # tensors made from Python data (``torch.tensor(list, device=...)``: the TP logits
                # mapping) bypass dispatch modes: the LoRA layers' tensor attributes are read too
                attrs = []
                for m in model.modules():
                    if isinstance(m, BaseLayerWithLoRA):
                        for v in vars(m).values():
                            for t in v if isinstance(v, tuple) else (v,):
                                if isinstance(t, torch.Tensor) and t.device.type == "meta":
                                    attrs.append((weakref.ref(t), tuple(t.shape), str(t.dtype)))
                for ref, shape, dtype in [*rec.made, *attrs]:
                    t = ref()
                    if t is None:
                        continue
                    st = t.untyped_storage()
                    if st._cdata not in storages:
                        storages[st._cdata] = st.nbytes()
                        tensors.append([list(shape), dtype])
                row["shapes"] = tensors
                row.update(
                    ok=True,
                    lora_allocated_bytes=sum(-(-n // 512) * 512 for n in storages.values()),
                    lora_storage_bytes=sum(storages.values()),
                    tensors=len(tensors),
                    max_num_batched_tokens=cfg.scheduler_config.max_num_batched_tokens,
                    max_num_seqs=cfg.scheduler_config.max_num_seqs,
                    punica=type(mgr._adapter_manager.punica_wrapper_mapping["language_model"]).__name__,
                )
                del mgr, model
            except BaseException as e:  # recorded as vLLM's answer for that case
                if isinstance(e, KeyboardInterrupt):
                    raise
                import traceback

                traceback.print_exc()
                row["error"] = f"{type(e).__name__}: {e}"[:500]
            doc["cases"][cid] = row
            real_stdout.write(json.dumps({cid: row}) + "\n")
            real_stdout.flush()
    out_path.parent.mkdir(exist_ok=True)
    out_path.write_text(json.dumps(doc, indent=1) + "\n")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
