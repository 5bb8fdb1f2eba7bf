"""The Ray tests' cluster: :func:`dryboot.matrix.ray_backend.local_head` (``ray start --head`` on
loopback, two CPUs, a 200 MB object store, its own process group ended at teardown).

Without Ray installed the tests skip, saying so, unless ``CI`` is set, where they fail (``.ci/run``
installs ``dryboot[ray]``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


def need_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        reason = "Ray is not installed (pip install -e '.[dev,ray]'; .ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


@contextmanager
def local_cluster(cpus: int = 2) -> Iterator[str]:
    """A running head node; yields its address (``127.0.0.1:PORT``)."""
    need_ray()
    from dryboot.matrix.ray_backend import local_head

    with local_head(cpus=cpus) as address:
        yield address
