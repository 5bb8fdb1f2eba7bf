"""``dryboot check-log``: a real vLLM boot log, predicted and compared line by line."""

from __future__ import annotations

import click

from dryboot.cli.plan_cmd import policy_options


@click.command("check-log")
@click.argument("log", metavar="LOG")
@click.option("--model", "model_path", metavar="PATH", help="The model's config.json (default: found from the log).")
@click.option("--vllm-version", metavar="X", help="Rules to plan with (default: the logged version's).")
@policy_options(" of the tree that wrote the log")
@click.option(
    "--custom-kv-cache-dtype",
    "custom_dtypes",
    multiple=True,
    metavar="SPEC",
    help="Declare a custom KV cache dtype the logged kv_cache_dtype names (as for dryboot plan).",
)
@click.option("--speculative-model", "spec_model", metavar="PATH", help="The drafter's config.json.")
@click.option(
    "--gpu-memory", metavar="SIZE", help="The GPU's total memory (vLLM's defaults depend on it; default H200)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def check_log(
    log: str,
    model_path: str | None,
    vllm_version: str | None,
    grouping: str,
    unification: str,
    custom_dtypes: tuple[str, ...],
    spec_model: str | None,
    gpu_memory: str | None,
    as_json: bool,
) -> None:
    """Read a vLLM boot LOG ('-' for stdin), predict its KV lines and say whether each matches.

    The log may carry (EngineCore pid=...) / (Worker_TP0 ...) prefixes, colours and timestamps.
    Flags come from its 'non-default args' line, the model's config.json from --model, a local
    path in the args or the Hugging Face cache (offline). Exit 0: every KV line matches; 1: some
    differ (each with the most likely reason); 2: the log or config cannot be read.
    """
    import json

    from dryboot.checklog.check import check_log as run_check
    from dryboot.checklog.check import read_log_file
    from dryboot.checklog.render import render_text, to_dict
    from dryboot.errors import InputError
    from dryboot.planner.plan import Policies
    from dryboot.units import parse_human_int

    gpu_bytes = None
    if gpu_memory is not None:
        try:
            gpu_bytes = parse_human_int(gpu_memory)
        except ValueError as exc:
            raise InputError("--gpu-memory", None, str(exc)) from None
    text, source = read_log_file(log)
    report = run_check(
        text,
        source=source,
        model_path=model_path,
        vllm_version=vllm_version,
        policies=Policies(grouping, unification),
        custom_dtypes=custom_dtypes,
        speculative_model=spec_model,
        gpu_memory_bytes=gpu_bytes,
    )
    if as_json:
        click.echo(json.dumps(to_dict(report), indent=2, default=str))
    else:
        click.echo(render_text(report), nl=False)
    raise SystemExit(0 if report.ok else 1)
