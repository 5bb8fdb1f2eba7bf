"""``dryboot matrix``: models × GPUs × flag sets × arms, each cell dryboot's plan and every arm's
own dry boot compared line by line (issue 36).

Layers: :mod:`dryboot.matrix.model` (the types and the :class:`~dryboot.matrix.model.Backend`
protocol), ``spec`` (MATRIX.toml), ``worker`` (one task in any process, warm boot sessions),
``cache``, ``local`` (the process pool), ``run`` (dispatch and assembly), ``table`` (the terminal
table and progress bar); ``ray_backend``, ``report_html`` and ``report_junit`` build on them.
This package sits above :mod:`dryboot.boot` and :mod:`dryboot.checklog` and below :mod:`dryboot.cli`.
"""
