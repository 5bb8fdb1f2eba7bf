"""Probe: CUDA totals and non-torch memory growth of one process, as vLLM's profiler sees it.

non-torch = (total - free) - torch.cuda.memory_reserved(), measured after each step.
"""

import json
import os
import subprocess
import time

import torch

out = {}


def snap(tag):
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    res = torch.cuda.memory_reserved()
    out.setdefault("steps", []).append(
        {
            "step": tag,
            "free": free,
            "total": total,
            "reserved": res,
            "used": total - free,
            "non_torch": total - free - res,
        }
    )


def smi(q):
    try:
        return subprocess.run(
            ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except Exception as e:
        return repr(e)


out["torch"] = torch.__version__
out["cuda"] = torch.version.cuda
out["smi"] = smi("name,driver_version,memory.total,memory.used,memory.reserved,pci.device_id,power.limit")
p = torch.cuda.get_device_properties(0)
out["props"] = {"name": p.name, "cc": [p.major, p.minor], "sm": p.multi_processor_count, "total_memory": p.total_memory}
snap("context")
x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
snap("tensor")
y = x @ x
snap("bf16_gemm")
a = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
y = a @ x
snap("bf16_gemm_small")
try:
    xf = x.to(torch.float8_e4m3fn)
    s = torch.ones((), device="cuda")
    y = torch._scaled_mm(xf, xf.t(), scale_a=s, scale_b=s, out_dtype=torch.bfloat16)
    snap("fp8_scaled_mm")
except Exception as e:
    out["fp8_err"] = repr(e)
q = torch.randn(1, 32, 2048, 128, device="cuda", dtype=torch.bfloat16)
o = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
snap("sdpa")
try:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    import torch.distributed as dist

    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
    t = torch.ones(1024, device="cuda")
    dist.all_reduce(t)
    snap("nccl_ws1")
except Exception as e:
    out["nccl_err"] = repr(e)
try:
    f = torch.compile(lambda z: torch.nn.functional.silu(z) * z + 1.0)
    t0 = time.time()
    y = f(x)
    out["compile_s"] = time.time() - t0
    snap("triton_compiled")
except Exception as e:
    out["compile_err"] = repr(e)[:500]
print("PROBE " + json.dumps(out))
