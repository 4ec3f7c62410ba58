"""``python -m pipeline.cli``: the ``litpath`` command without its installed script."""

from pipeline.cli import main

main()
