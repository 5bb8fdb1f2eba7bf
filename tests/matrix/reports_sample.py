"""A small matrix result built by hand for the report tests: every status, agreement and a hostile
name in each place a string from the input reaches the page (model, GPU, flag set, arm, vLLM's
lines and messages)."""

from __future__ import annotations

from pathlib import Path

from dryboot.matrix.model import PLAN_ARM, CellResult, MatrixResult, TaskResult

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;"\''
MODELS = ("Qwen3.5-27B", HOSTILE)
GPUS = ("RTX 3090", "H100 <b>")
FLAG_SETS = ("short", 'long "</td>')
ARMS = ("main", "PR #12 </template>")


def task(cell_id: str, arm: str, tokens: int | None, *, status: str = "ok", reason: str | None = None) -> TaskResult:
    lines = () if tokens is None else (f"GPU KV cache size: {tokens:,} tokens", "Maximum concurrency: 2.00x")
    return TaskResult(
        cell_id=cell_id,
        arm=arm,
        status=status,
        tokens=tokens,
        block_size=None if tokens is None else 448,
        num_blocks=None if tokens is None else tokens // 448,
        max_model_len=None if tokens is None else 32768,
        lines=lines,
        reason=reason,
        seconds=0.25,
        cached=False,
        worker="123@host",
    )


def cell(model: str, gpu: str, flag_set: str, a: TaskResult | int | None, b: TaskResult | int | None) -> CellResult:
    cid = f"{model}|{gpu}|{flag_set}"
    ta = a if isinstance(a, TaskResult) else task(cid, ARMS[0], a)
    tb = b if isinstance(b, TaskResult) else task(cid, ARMS[1], b)
    statuses = {ta.status, tb.status}
    if "error" in statuses:
        agreement, status, why = "error", "error", "the boot process failed: <killed> \x1b[31m"
    elif statuses == {"refused"}:
        agreement, status, why = "both refuse", "failed", "both arms refuse"
    elif ta.tokens == tb.tokens:
        agreement, status, why = "identical", "met", None
    else:
        agreement, status, why = "differs", "failed", f"tokens: {ta.tokens} vs {tb.tokens}"
    diff: tuple[str, ...] = ()
    if agreement == "differs":
        diff = (
            f"--- {ARMS[0]}",
            f"+++ {ARMS[1]}",
            "@@ -1 +1 @@",
            *(f"-{x}" for x in ta.lines[:1]),
            *(f"+{x}" for x in tb.lines[:1]),
        )
    return CellResult(
        id=cid,
        model=model,
        gpu=gpu,
        flag_set=flag_set,
        plan=task(cid, PLAN_ARM, ta.tokens),
        arms={ARMS[0]: ta, ARMS[1]: tb},
        agreement=agreement,
        diff=diff,
        expectation="identical",
        status=status,
        changes=() if why is None or agreement != "differs" else (why,),
        why=why,
    )


def sample() -> MatrixResult:
    """8 cells: identical, differing, both refusing, one in error (with an ANSI code in its
    reason), hostile names throughout; the second flag set lacks one model × GPU (an empty cell)."""
    m0, m1 = MODELS
    g0, g1 = GPUS
    f0, f1 = FLAG_SETS
    refused = 'max_model_len 65536 > 56000 <a href="http://example.invalid">'
    cells = (
        cell(m0, g0, f0, 68605, 68605),
        cell(m0, g1, f0, 136429, 140000),
        cell(m1, g0, f0, 57669, 57669),
        cell(
            m1,
            g1,
            f0,
            task(f"{m1}|{g1}|{f0}", ARMS[0], None, status="refused", reason=refused),
            task(f"{m1}|{g1}|{f0}", ARMS[1], None, status="refused", reason=refused),
        ),
        cell(m0, g0, f1, 1000, 2000),
        cell(m0, g1, f1, task(f"{m0}|{g1}|{f1}", ARMS[0], None, status="error", reason="worker died twice"), 5),
        cell(m1, g0, f1, 7, 7),
    )
    return MatrixResult(
        cells=cells,
        models=MODELS,
        gpus=GPUS,
        flag_sets=FLAG_SETS,
        arms=ARMS,
        exit_code=1,
        seconds=3.5,
        cache_hits=2,
        source="examples/<matrix>.toml",
    )


#: A real matrix for the CLI's reports: a small model every arm refuses at this length (failed,
#: "both refuse"), a hybrid one that vLLM 0.28.0 and 0.33.0 size alike on the RTX 3090 and differ on
#: the H100 (block 400 vs 448): met/identical, met/differs and failed cells, dryboot's modelled arms
#: (no boot environment needed). GPUs named explicitly.
CLI_MATRIX = '''
gpus = ["RTX 3090", "H100"]
[models]
small = "{configs}/Qwen--Qwen3-0.6B"
qwen35 = "{configs}/Qwen--Qwen3.5-27B"
[flags]
fast = """vllm serve --max-model-len 65536 --kv-cache-memory-bytes 5583457484 --max-num-batched-tokens 2048 \\
--mamba-ssm-cache-dtype float16 --enable-prefix-caching"""
[arms.main]
vllm-version = "0.28.0"
[arms.next]
vllm-version = "0.33.0"
'''


def cli_matrix(directory: Path) -> Path:
    """:data:`CLI_MATRIX` written to ``directory``."""
    configs = Path(__file__).resolve().parents[1] / "data" / "configs" / "public"
    path = directory / "matrix.toml"
    path.write_text(CLI_MATRIX.format(configs=configs), encoding="utf-8")
    return path


def run_cli(*args: str) -> tuple[int, str, str]:
    """``dryboot ARGS`` in this process: exit code, stdout, stderr."""
    from click.testing import CliRunner

    from dryboot.cli import cli

    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr
