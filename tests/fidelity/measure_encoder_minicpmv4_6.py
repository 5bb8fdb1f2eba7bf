"""The live bytes of vLLM's own MiniCPM-V 4.6 vision forward at its widest, on the meta device.

    $DRYBOOT_VLLM_PYTHON tests/fidelity/measure_encoder_minicpmv4_6.py < cases.json

Runs inside a boot environment's interpreter (no dryboot import), as ``record_lora.py``: the
stand-ins of ``src/dryboot/boot/engine_start.py`` (faked H200, kernels absent, distributed groups),
``create_engine_config`` on the tiny ``MiniCPMV4_6ForConditionalGeneration`` config of
``data/architectures/`` (its 2 vision blocks, ``insert_layer_id`` set to 0 so that one block runs
before the window merger and one after), the model built on the meta device by vLLM's loader, then
its own ``embed_multimodal`` over one dummy video item. Each case on stdin is ``[crops, source
(h, w) patches, slice (h, w) patches, slices a crop group, window merger on]``: ``crops`` groups of
one source and its slices, as the image processor cuts a frame, padded to the longest (as
``process_videos`` pads them). Every tensor an op creates is tracked (a ``TorchDispatchMode``);
after each op the distinct live storages are summed, and the largest sum is the peak, with the
float32 pixel values given to the forward (their storage is reached through the slices' views).
Prints one JSON line: ``[[peak bytes, embedding elements, padded positions], ...]``.

What is faked: the device (meta: no allocator rounding, no caching), the attention with a mask
(``F.scaled_dot_product_attention`` in ``idefics2_vision_model`` returns its output only: the
memory-efficient kernel, whose log-sum-exp workspace is not counted), ``torch.any`` of the meta
padding mask (True: the crops differ in length), and tensors made from Python data (the target
sizes) stay on the host.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import oracle_stand_ins

ARCH = Path(__file__).resolve().parent / "data" / "architectures" / "MiniCPMV4_6ForConditionalGeneration.json"


def main() -> int:
    es, real_stdout = oracle_stand_ins.start()
    import torch
    import vllm.model_executor.models.idefics2_vision_model as idefics2
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    V = es.V
    model_dir = Path(tempfile.mkdtemp(prefix="measure-minicpmv-"))
    config = json.loads(ARCH.read_text())
    config["insert_layer_id"] = 0
    (model_dir / "config.json").write_text(json.dumps(config))
    args = es._parse(str(model_dir), ["--max-model-len", "4096"])
    cfg = V.AsyncEngineArgs.from_cli_args(args).create_engine_config(usage_context=V.UsageContext.OPENAI_API_SERVER)
    es._set_parallel_groups(cfg, 0)
    with V.set_current_vllm_config(cfg):
        model = V.get_model_loader(cfg.load_config).load_model(vllm_config=cfg, model_config=cfg.model_config)

    class Live(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.refs: list[weakref.ref[Any]] = []
            self.peak = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            self.refs += [weakref.ref(t) for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            alive = [(r, t) for r in self.refs if (t := r()) is not None and t.device.type == "meta"]
            self.refs = [r for r, _ in alive]
            storages = {t.untyped_storage()._cdata: t.untyped_storage().nbytes() for _, t in alive}
            self.peak = max(self.peak, sum(storages.values()))
            return out

    def sdpa(q: Any, k: Any, v: Any, **kwargs: Any) -> Any:
        return torch.empty_like(q)

    idefics2.F = type("F", (), {"scaled_dot_product_attention": staticmethod(sdpa)})
    real_any, real_tensor = torch.any, torch.tensor

    def meta_any(x: Any, *a: Any, **k: Any) -> Any:
        return True if isinstance(x, torch.Tensor) and x.device.type == "meta" else real_any(x, *a, **k)

    def host_tensor(data: Any, *a: Any, device: Any = None, **k: Any) -> Any:
        return real_tensor(data, *a, device=None if str(device) == "meta" else device, **k)

    torch.any, torch.tensor = meta_any, host_tensor  # type: ignore[assignment]
    out = []
    patch = int(config["vision_config"]["patch_size"])
    for crops, src, piece, n, merger in json.load(sys.stdin):
        longest = max(src[0] * src[1], piece[0] * piece[1])
        tgt = real_tensor([src] + [piece] * n, dtype=torch.long).repeat(crops, 1)
        pixels = torch.empty(crops * (1 + n), 3, patch, longest * patch, device="meta", dtype=torch.float32)
        live = Live()
        with torch.inference_mode(), live:
            emb = model.embed_multimodal(
                video_pixel_values=[pixels], video_tgt_sizes=[tgt], video_use_vit_merger=[real_tensor([merger])]
            )
        out.append([live.peak, sum(e.numel() for e in emb), crops * (1 + n) * longest])
        del emb
    real_stdout.write(json.dumps(out) + "\n")
    shutil.rmtree(model_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
