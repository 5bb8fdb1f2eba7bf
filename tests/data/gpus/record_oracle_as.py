"""Record engine starts of published architectures as each GPU, with one release's e2e oracle.

    python3 tests/data/gpus/record_oracle_as.py /work/venvs/vllm-0.28.0/bin/python \
        > tests/data/gpus/oracle-as-gpu/vllm-0.28.0.jsonl

For every GPU of ``gpus.toml`` (FlashInfer arm ``cubin``) it runs ``run_oracle_as.py`` over the
same cases: each configuration of ``CASES`` (copied from ``tests/fidelity/data/architectures``
into a temporary model directory) with ``--max-model-len 4096 --kv-cache-memory-bytes 4G`` and
each of ``--kv-cache-dtype auto`` / ``fp8``. One compact JSON line per GPU and case: the oracle's
answer (ok, stage, the error's first line, block size, groups, blocks, tokens) — vLLM's answer on
that GPU, nothing from dryboot.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCHS = HERE.parents[1] / "fidelity" / "data" / "architectures"

#: Architectures whose engine start depends on the GPU in different ways: hybrid (Gated DeltaNet,
#: Mamba-2), sinks + sliding window, plain GQA, MLA, DSA sparse MLA, interleaved sliding window,
#: a head size FlashInfer lacks (Phi-3: 96).
CASES = [
    "Qwen3NextForCausalLM",
    "NemotronHForCausalLM",
    "GptOssForCausalLM",
    "LlamaForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM",
    "Gemma3ForCausalLM",
    "Phi3ForCausalLM",
]
KV_DTYPES = ["auto", "fp8"]
KEEP = ("ok", "stage", "block_size", "groups", "num_blocks", "tokens", "max_model_len")


def main() -> int:
    python = sys.argv[1]
    gpus = sys.argv[2:]
    if not gpus:
        sys.path.insert(0, str(HERE))
        import record_backend_matrix as matrix

        gpus = [g["name"] for g in matrix._gpus()]
    with tempfile.TemporaryDirectory(prefix="oracle-as-gpu-") as tmp:
        lines = []
        for arch in CASES:
            model = Path(tmp) / arch
            model.mkdir()
            (model / "config.json").write_text((ARCHS / f"{arch}.json").read_text(encoding="utf-8"), encoding="utf-8")
            for kv in KV_DTYPES:
                argv = ["--max-model-len", "4096", "--kv-cache-memory-bytes", "4G", "--kv-cache-dtype", kv]
                lines.append(json.dumps({"id": f"{arch}/{kv}", "model": str(model), "argv": argv}))
        stdin = "\n".join(lines) + "\n"
        for gpu in gpus:
            done = subprocess.run(
                [python, str(HERE / "run_oracle_as.py"), gpu], input=stdin, capture_output=True, text=True, check=False
            )
            answers = [json.loads(ln) for ln in done.stdout.splitlines() if ln.startswith("{")]
            meta = next((a["meta"] for a in answers if "meta" in a), None)
            if done.returncode != 0 or meta is None:
                print(f"{gpu}: the oracle failed\n{done.stderr[-2000:]}", file=sys.stderr)
                return 1
            for a in answers:
                if "meta" in a:
                    continue
                row = {"gpu": gpu, "vllm_version": meta["vllm_version"], "id": a["id"]}
                row.update({k: a.get(k) for k in KEEP if a.get(k) is not None})
                if a.get("error"):
                    row["error"] = str(a["error"]).splitlines()[0][:400]
                sys.stdout.write(json.dumps(row, sort_keys=True, separators=(",", ":")) + "\n")
            print(f"{gpu}: {len(answers) - 1} cases", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
