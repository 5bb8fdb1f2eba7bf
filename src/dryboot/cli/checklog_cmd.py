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
@click.option(
    "--gpu",
    "gpu_name",
    metavar="NAME",
    help="The GPU the log was written on, as for dryboot plan (a name of dryboot's table or smXY:SIZE; default H200).",
)
@click.option(
    "--kv-cache-dtype",
    metavar="DTYPE",
    help="vLLM's flag, when the log does not show it (a known fact: not searched).",
)
@click.option("--tensor-parallel-size", type=int, metavar="N", help="vLLM's flag, as --kv-cache-dtype.")
@click.option(
    "--enable-prefix-caching/--no-enable-prefix-caching",
    "prefix_caching",
    default=None,
    help="vLLM's flag, as --kv-cache-dtype.",
)
@click.option(
    "--speculative-config",
    "spec_config",
    metavar="JSON",
    help="vLLM's flag, as --kv-cache-dtype (e.g. a post states MTP with 8 tokens the log does not show).",
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
    gpu_name: str | None,
    kv_cache_dtype: str | None,
    tensor_parallel_size: int | None,
    prefix_caching: bool | None,
    spec_config: str | None,
    as_json: bool,
) -> None:
    """Read a vLLM boot LOG ('-' for stdin), predict its KV lines and say whether each matches.

    The log may carry (EngineCore pid=...) / (Worker_TP0 ...) prefixes, colours and timestamps.
    Flags come from its 'non-default args' line, the model's config.json from --model, a local
    path in the args or the Hugging Face cache (offline). vLLM's --kv-cache-dtype,
    --tensor-parallel-size, --[no-]enable-prefix-caching and --speculative-config given here are
    known facts the log does not show (a post states them): never searched, refused when the
    log's args say otherwise. The log is read in bounded chunks;
    several boots in one file are checked one by one. Exit 0: at least one KV line checked and
    every checked line matches; 1: some differ (each with the most likely reason); 2: the log,
    a config or a flag cannot be read or modelled; 3: nothing could be checked (no KV line, or
    only lines of releases before 0.8); 4: the args line is missing or cut, or the log states no
    KV budget, and the lines are explained only by the flag combinations or the budget listed.
    """
    # at call: `dryboot --help` and other commands never load check-log (test_help_does_not_import_checklog)
    import json

    # at call: as above
    from dryboot.checklog.check import iter_check_stream, open_log
    from dryboot.checklog.render import stream_log
    from dryboot.errors import InputError
    from dryboot.inputs import check_regular
    from dryboot.planner.plan import Policies
    from dryboot.textout import fit, terminal_width
    from dryboot.units import parse_human_int
    from dryboot.vllm.gpus import parse_gpu

    gpu_bytes = None
    if gpu_memory is not None:
        try:
            gpu_bytes = parse_human_int(gpu_memory)
        except ValueError as exc:
            raise InputError("--gpu-memory", None, str(exc)) from None
    gpu = parse_gpu(gpu_name) if gpu_name is not None else None
    given: dict[str, object] = {}
    if kv_cache_dtype is not None:
        given["kv_cache_dtype"] = kv_cache_dtype
    if tensor_parallel_size is not None:
        if tensor_parallel_size < 1:
            raise InputError("--tensor-parallel-size", str(tensor_parallel_size), "must be a positive integer")
        given["tensor_parallel_size"] = tensor_parallel_size
    if prefix_caching is not None:
        given["enable_prefix_caching"] = prefix_caching
    if spec_config is not None:
        try:
            spec = json.loads(spec_config)
        except json.JSONDecodeError as exc:
            raise InputError("--speculative-config", f"column {exc.colno}", f"invalid JSON: {exc.msg}") from None
        if not isinstance(spec, dict):
            raise InputError("--speculative-config", None, "must be a JSON object")
        given["speculative_config"] = spec
    for path in (model_path, spec_model):  # refused before the log is read, whichever is read first
        if path is not None:
            check_regular(path, path, allow_dir=True)
    stream, source = open_log(log)
    with stream:
        boots = iter_check_stream(
            stream,
            source=source,
            model_path=model_path,
            vllm_version=vllm_version,
            policies=Policies(grouping, unification),
            custom_dtypes=custom_dtypes,
            speculative_model=spec_model,
            gpu_memory_bytes=gpu_bytes,
            gpu=gpu,
            given=given or None,
        )
        # each boot is printed once checked, then dropped: memory does not grow with the boots
        width = terminal_width()
        code = stream_log(
            boots,
            source,
            # text fits the terminal as plan's does; vLLM's line after "matches:" stays whole
            lambda text: click.echo(text if as_json else fit(text, width, (": matches: ",)), nl=False),
            as_json=as_json,
        )
    raise SystemExit(code)
