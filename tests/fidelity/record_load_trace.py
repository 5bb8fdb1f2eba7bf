"""Record the order in which vLLM allocates and frees device storages while it loads one quantized config.

    RECORD_GPU="RTX 3090" $DRYBOOT_VLLM_PYTHON tests/fidelity/record_load_trace.py NAME [TP]

Runs *inside* a boot environment's interpreter (no dryboot import), with ``record_quant_weights.py``'s
stand-ins (the GPU faked, kernels absent, the repack kernels' shape functions registered) for the
config ``data/weights/quant-configs/NAME``: vLLM builds the model on the meta device with its own
loader, then runs its own ``process_weights_after_loading``. A ``TorchDispatchMode`` sees every
operator's outputs: each new meta storage is an allocation (its bytes, the operator's name), and a
``weakref.finalize`` on the storage records its release. vLLM's bookkeeping copies that hold no GPU
memory (``quant_fakes.SHADOWS``) are left out. Nothing here comes from dryboot.

``Model loading took`` is the CUDA caching allocator's count of the blocks held once loading is done
(``docs/weights.md``, "What the log line measures"): a block taken whole is counted whole, so the
same tensors can count more than their 512-byte blocks when a freed block of the load is reused.
dryboot's ``model_loader/allocator.py`` replays a trace through a model of that allocator
(``test_load_trace.py``), and ``model_loader/load_order.py`` emits the same order from a config.

``RECORD_CONFIGS``: another folder of configs (an unquantized one is traced as well); ``RECORD_OUT``:
write elsewhere. Writes ``data/weights/load-trace-<vllm version>-<NAME>-<GPU>-tp<TP>.json``:
``{"vllm", "config", "gpu", "tp", "built_at", "events": [[op index or -1 (free), storage id, bytes],
...], "ops": [operator names]}`` (a storage id is its allocation's place in the raw trace, unique
although addresses are reused; ``built_at``: the index of the first event after the model is built
and loaded, before the post-load step).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
sys.path.insert(0, str(HERE))

import record_quant_weights as rq  # noqa: E402

#: name, capability, SM count (record_quant_weights.GPUS)
GPUS = {name: (cap, sms) for name, cap, sms in rq.GPUS}


def main() -> int:
    name = sys.argv[1]
    tp = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    gpu = os.environ.get("RECORD_GPU", "RTX 3090")
    cap, sms = GPUS[gpu]
    qf = rq._load("quant_fakes", HERE / "quant_fakes.py")
    qf.define_ops()
    es = rq._load("engine_start", rq.ENGINE_START)
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    es._install()
    qf.route_ops()
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    from vllm.model_executor.model_loader.utils import process_weights_after_loading

    V = es.V
    configs = Path(os.environ.get("RECORD_CONFIGS") or rq.QUANT_CONFIGS)
    mdir = rq.checkpoint_dir(configs / name, Path(tempfile.mkdtemp(prefix="record-load-trace-")))
    es.GPU.name, es.GPU.capability, es.GPU.sm_count = f"NVIDIA {gpu}", cap, sms
    es._reset_per_process_caches()
    raw: list[tuple[str, int, int, str]] = []  # (a / f, storage address, bytes, operator)
    live: dict[int, int] = {}

    def released(key: int) -> None:
        if live.pop(key, None) is not None:
            raw.append(("f", key, 0, ""))

    class Trace(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and t.device.type == "meta":
                    st = t.untyped_storage()
                    key, nbytes = st._cdata, st.nbytes()
                    if nbytes and key not in live:  # an empty tensor takes no block
                        live[key] = nbytes
                        raw.append(("a", key, nbytes, str(func)))
                        weakref.finalize(st, released, key)
            return out

    args = es._parse(str(mdir), ["--max-model-len", "4096", "--tensor-parallel-size", str(tp)])
    cfg = V.AsyncEngineArgs.from_cli_args(args).create_engine_config(usage_context=V.UsageContext.OPENAI_API_SERVER)
    es._set_parallel_groups(cfg, 0)
    with V.set_current_vllm_config(cfg), Trace():
        model = V.get_model_loader(cfg.load_config).load_model(vllm_config=cfg, model_config=cfg.model_config)
        built_at = len(raw)
        process_weights_after_loading(model, cfg.model_config, torch.device("meta"))
    shadows = set(qf.SHADOWS)
    ids: dict[int, int] = {}  # a storage address may be reused after its release: renumber per allocation
    ops: list[str] = []
    events: list[list[int]] = []
    built = 0
    for i, (kind, key, nbytes, op) in enumerate(raw):
        if i == built_at:
            built = len(events)
        if key in shadows:
            continue
        if kind == "a":
            ids[key] = i
            if op not in ops:
                ops.append(op)
            events.append([ops.index(op), ids[key], nbytes])
        elif key in ids:
            events.append([-1, ids.pop(key), 0])
    doc = {"vllm": V.vllm.__version__, "config": name, "gpu": gpu, "tp": tp, "built_at": built, "ops": ops}
    doc["events"] = events
    default = DATA / f"load-trace-{doc['vllm']}-{name}-{gpu.replace(' ', '')}-tp{tp}.json"
    out = Path(os.environ.get("RECORD_OUT") or default)
    out.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    real_stdout.write(f"{out}: {len(events)} events\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
