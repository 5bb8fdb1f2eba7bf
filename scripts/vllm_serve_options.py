"""Write src/dryboot/data/vllm-<version>-serve-options.json: every option of the ``vllm serve``
parser of the installed vLLM, with its destination and arity, and the names of vLLM's
environment variables (``vllm/envs.py``). Run it with a vLLM venv's python (never imported by
dryboot; the JSON is what dryboot reads):

    /work/venvs/vllm-0.28.0/bin/python scripts/vllm_serve_options.py src/dryboot/data
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> None:
    # torchvision on PyPI is a CUDA build whose ops cannot load next to CPU torch (as in
    # tests/fidelity): declare them so transformers' image processors import
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fidelity"))
    from venv_shims import declare_torchvision_ops

    keep = declare_torchvision_ops()  # noqa: F841 - the registration lives as long as this
    import vllm
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    # no GPU here: the options of the parser do not depend on the platform
    platforms._current_platform = CpuPlatform()  # type: ignore[attr-defined]
    import vllm.envs as envs
    from vllm.entrypoints.openai.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    options = []
    for action in parser._actions:  # argparse keeps no public list
        if not action.option_strings:
            options.append({"dest": action.dest, "positional": True, "nargs": action.nargs})
            continue
        if isinstance(action, argparse._HelpAction):
            continue
        kind = "value"
        if isinstance(action, argparse.BooleanOptionalAction):
            kind = "bool-optional"
        elif action.nargs == 0:
            kind = "flag"
        options.append(
            {
                "dest": action.dest,
                "options": sorted(action.option_strings),
                "kind": kind,
                "nargs": action.nargs if isinstance(action.nargs, str | int) else None,
                "const": action.const if isinstance(action.const, bool | int | str) else None,
            }
        )
    out = Path(sys.argv[1]) / f"vllm-{vllm.__version__}-serve-options.json"
    doc = {"vllm": vllm.__version__, "options": options, "environment": sorted(envs.environment_variables)}
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(out, len(options), "options", len(doc["environment"]), "variables")


if __name__ == "__main__":
    main()
