"""Command line of suica: ``suica reproduce [--quick]``."""

from __future__ import annotations

from collections.abc import Sequence

from icml25.cli_helpers import ReproduceOptions, method_main, reproduce_command

from suica.registry import METHOD


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {"reproduce": (ReproduceOptions, reproduce_command(METHOD))}, argv=argv)
