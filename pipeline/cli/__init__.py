"""Command line: ``evaluate``, ``validate``, ``query``, ``checkout``, ``export``,
``ingest-rgb``, ``stats``, ``compare``, ``report`` and ``metrics``, one module each (its
arguments and its ``run``), over the Python API (:mod:`pipeline.api`).

Exit codes: 0 success; 1 ``evaluate`` scored no row or rejected more than ``--max-rejected``
of them (its outputs are written), ``validate`` found rows that would be rejected, or
``ingest-rgb`` set output rows aside; 2 bad input, bad configuration, an output path that cannot
be written or a failing query (one line that says which file and why); 3 ``compare``'s
regression gate failed; 4 internal error (logged with its traceback); 5 a results store is
locked by another run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pipeline import __version__
from pipeline.cli import (
    checkout,
    compare,
    evaluate,
    export,
    ingest_rgb,
    metrics,
    query,
    report,
    stats,
    validate,
)
from pipeline.cli.common import (  # noqa: F401 - the exit codes are re-exported
    EXIT_BUSY,
    EXIT_ERROR,
    EXIT_GATE,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_REJECTED,
    HelpFormatter,
    log,
)
from pipeline.config import ConfigError
from pipeline.embed.backends import EmbeddingBackendError
from pipeline.io.atomic import OutputPathError
from pipeline.logs import LOG_FORMATS, configure_logging
from pipeline.metrics.registry import UnknownMetricError
from pipeline.schema import InputError
from pipeline.store import StoreBusyError

#: The commands in the order ``--help`` lists them.
COMMANDS = (evaluate, validate, query, checkout, export, ingest_rgb, stats, compare, report,
            metrics)
#: ``--help`` examples of the program (each command's are its module's ``EXAMPLES``).
EXAMPLES = """\
  rag-eval evaluate --input answers.jsonl --out out
  rag-eval query out "select * from by_model"
  rag-eval report out --out report.html
  rag-eval compare baseline_out out"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rag-eval", description="Offline, vectorized evaluation of LLM and RAG answers."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more log lines on stderr: -v info, -vv debug (default: warnings "
                             "only; --log-format json: info)")
    parser.add_argument("--log-format", choices=LOG_FORMATS, default="text",
                        help="logs on stderr as text (default) or one JSON object per line")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        command = module.add_arguments(sub)
        command.formatter_class = HelpFormatter
        examples = "examples:\n" + module.EXAMPLES
        command.epilog = examples if command.epilog is None else (
            f"{command.epilog}\n\n{examples}"
        )
    parser.formatter_class = HelpFormatter
    parser.epilog = "examples (rag-eval COMMAND --help shows more):\n" + EXAMPLES
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(verbosity=args.verbose, fmt=args.log_format)
    command = next(module for module in COMMANDS if args.command == module.NAME)
    try:
        return command.run(args)
    except StoreBusyError as exc:
        log.error("%s", exc)
        return EXIT_BUSY
    except (InputError, ConfigError, UnknownMetricError, EmbeddingBackendError,
            OutputPathError) as exc:
        if args.log_format == "json":
            log.error("%s", exc)
        else:
            print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception:  # a bug or an environment failure: a distinct code for schedulers
        log.exception("internal error (please report it with this traceback)")
        return EXIT_INTERNAL
