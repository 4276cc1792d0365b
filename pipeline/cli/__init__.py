"""Command line: ``evaluate``, ``validate``, ``query``, ``checkout``, ``export``,
``ingest-rgb``, ``stats``, ``compare``, ``report`` and ``metrics``, one module each (its
arguments and its ``run``), over the Python API (:mod:`pipeline.api`).

Exit codes (the table of README.md, "Exit codes"):

* 0 success (a stdout whose reader goes away, ``| head``, changes no code: the command
  finishes its work and exits as it would have);
* 1 ``evaluate`` scored no row or rejected more than ``--max-rejected`` of them (its outputs
  are written), ``validate`` found rows that would be rejected, or ``ingest-rgb`` set output
  rows aside;
* 2 a user or environment error: bad input, bad configuration or option, a failing query, an
  output path that cannot be written, a full disk or file-size limit (one line that names the
  file, path or key and the cause);
* 3 ``compare``'s regression gate failed;
* 4 internal error, a bug (logged with its traceback);
* 5 a results store is locked by another run;
* 130 interrupted (Ctrl-C): one line; earlier outputs are whole, temporary files removed.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from pipeline.cli._guard import EARLY, deferred_interrupts

with deferred_interrupts():  # Ctrl-C while importing: exit 130 in main, not a traceback
    import _thread
    import argparse
    import atexit
    import contextlib
    import gc
    import os
    import signal
    import sys
    import threading
    from collections.abc import Iterator, Sequence
    from types import ModuleType
    from typing import Any

    # Before numpy loads: its OpenBLAS would start a thread per core whose spin-wait after each
    # matrix product (the statistics' bootstrap) took 0.4 CPU-seconds of a 1M-row run on two
    # cores, beside the run's own threads (docs/benchmarks.md). A value the user set stays.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

    from pipeline import __version__
    from pipeline.cli.errors import (  # noqa: F401 - the exit codes are re-exported
        EXIT_BUSY,
        EXIT_ERROR,
        EXIT_GATE,
        EXIT_INTERNAL,
        EXIT_INTERRUPTED,
        EXIT_OK,
        EXIT_REJECTED,
        environment_error,
        interrupted,
        log,
        output_target,
        print_error,
    )
    from pipeline.cli.options import COMMAND_HELP, HelpFormatter
    from pipeline.cli.streams import flush_standard_streams, tolerate_closed_stdout
    from pipeline.logs import LOG_FORMATS, configure_logging

#: The commands in the order ``--help`` lists them: the module of each. A command's module is
#: imported only when that command runs (or shows its own help), by :func:`command_module`: the
#: one dynamic import of the command line, so that ``--version``, ``--help`` and ``query`` do not
#: load polars, the metric registry or the drivers (docs/benchmarks.md, start-up).
COMMANDS: dict[str, str] = {
    "evaluate": "pipeline.cli.evaluate",
    "validate": "pipeline.cli.validate",
    "query": "pipeline.cli.query",
    "checkout": "pipeline.cli.checkout",
    "export": "pipeline.cli.export",
    "ingest-rgb": "pipeline.cli.ingest_rgb",
    "stats": "pipeline.cli.stats",
    "compare": "pipeline.cli.compare",
    "report": "pipeline.cli.report",
    "metrics": "pipeline.cli.metrics",
}
#: Run as the program, rag-eval collects the youngest generation every this many allocations
#: (CPython's default: 700) and freezes the imported modules' objects out of later collections
#: (:func:`gc.freeze`). A 1M-row run set off about 360 collections with the
#: defaults, 95 ms under the interpreter lock; about 20 so (30-40 ms). The run's data are
#: Arrow and numpy buffers, not Python objects, and a cycle is still freed within a fraction
#: of a second.
YOUNG_COLLECTION_OBJECTS = 20_000
#: ``--help`` examples of the program (each command's are its module's ``EXAMPLES``).
EXAMPLES = """\
  rag-eval evaluate --input answers.jsonl --out out
  rag-eval query out "select * from by_model"
  rag-eval report out --out report.html
  rag-eval compare baseline_out out"""
#: Exception classes that mean a user or environment error (exit 2), by the module that defines
#: them; a store locked by another run (exit 5) and polars' Rust panic are looked up the same way.
USER_ERRORS = (
    ("pipeline.errors", "InputError"),
    ("pipeline.config", "ConfigError"),
    ("pipeline.metrics.registry", "UnknownMetricError"),
    ("pipeline.embed.backends", "EmbeddingBackendError"),
    ("pipeline.errors", "OutputPathError"),
)
BUSY_ERRORS = (("pipeline.store", "StoreBusyError"),)
PANICS = (("polars.exceptions", "PanicException"),)


def command_module(name: str) -> ModuleType:
    """The module of command ``name`` (its ``add_arguments`` and ``run``), imported now."""
    return importlib.import_module(COMMANDS[name])


def loaded(classes: Iterable[tuple[str, str]]) -> tuple[type[BaseException], ...]:
    """Those of ``classes`` (module, name) whose module is imported. An exception of a module
    that was never imported cannot have been raised, so the handlers of :func:`_main` name the
    classes this way instead of importing the metric registry, DuckDB or polars to catch them."""
    return tuple(getattr(sys.modules[module], name) for module, name in classes
                 if module in sys.modules)


def failures() -> tuple[type[BaseException], ...]:
    """Every exception a command may end with: ``Exception`` and a Rust panic of polars (a
    ``BaseException``) once polars is loaded."""
    return (Exception, *loaded(PANICS))


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names (its first word that is one), or None (``--version``,
    ``--help``, a misspelt command)."""
    return next((word for word in argv if word in COMMANDS), None)


def _parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The parser of the program with the arguments of ``commands`` (default: every command);
    the others have their name and one-line help only, which is all ``rag-eval --help``
    shows."""
    full = set(COMMANDS) if commands is None else set(commands)
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
    for name in COMMANDS:
        if name not in full:
            sub.add_parser(name, help=COMMAND_HELP[name])
            continue
        module = command_module(name)
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
    """Run one command; return its exit code (the table in the module docstring).

    Ctrl-C anywhere (SIGINT) ends the command with one line and 130, once the main thread's
    cleanup has run; an interrupt that Python would drop (raised inside a finalizer) is raised
    again on the main thread. Run as the program (``argv`` None), the process then ends with
    ``os._exit``, so that a background thread or a native pool still working can neither hold
    the interpreter's shutdown nor abort it (exit 134). A command that ends normally runs the
    exit handlers (:mod:`atexit`, logging's among them) and flushes the standard streams
    before ``os._exit`` too: its outputs are closed and in place by then, and tearing down
    every module and freeing every buffer one by one (0.3 s after a 1M-row run) would only
    delay the exit."""
    interrupted_run = False
    if argv is None:
        gc.set_threshold(YOUNG_COLLECTION_OBJECTS)
    with tolerate_closed_stdout(), interrupts_kept():
        try:
            if EARLY:  # Ctrl-C while the modules were imported
                raise KeyboardInterrupt
            code = _main(argv)
        except KeyboardInterrupt:
            code = _interrupted(restore=argv is not None)
            interrupted_run = True
    if argv is None and not (observed() and not interrupted_run):
        if not interrupted_run:
            run_exit_handlers()
        flush_standard_streams()
        os._exit(code)
    return code


def observed() -> bool:
    """Whether a profiler or tracer runs (``python -m cProfile``, a debugger): it writes its
    results after the program returns, so a normal end returns rather than ending the
    process."""
    return sys.getprofile() is not None or sys.gettrace() is not None


def run_exit_handlers() -> None:
    """The :mod:`atexit` functions, as the interpreter's shutdown would run them (logging
    flushes and closes its handlers there). Threads are not waited for: a command's own
    threads have ended when it returns, and an idle pool's would wait for ever."""
    atexit._run_exitfuncs()


def _main(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    chosen = chosen_command(words)
    args = _parser(() if chosen is None else (chosen,)).parse_args(words)
    if argv is None:  # the command's modules are imported: their objects live to the end
        gc.freeze()
    configure_logging(verbosity=args.verbose, fmt=args.log_format)
    try:
        return command_module(args.command).run(args)
    except loaded(BUSY_ERRORS) as exc:
        log.error("%s", exc)
        return EXIT_BUSY
    except loaded(USER_ERRORS) as exc:
        if interrupted(exc):  # a DuckDB interrupt wrapped as a view that failed to build
            raise KeyboardInterrupt from exc
        # a write that did not fit is told as such, not as the step it stopped
        print_error(args, environment_error(exc, output_target(args), writes_only=True)
                    or str(exc))
        return EXIT_ERROR
    except failures() as exc:  # a Rust panic is no Exception
        if interrupted(exc):  # DuckDB turns Ctrl-C into its own exception
            raise KeyboardInterrupt from exc
        problem = environment_error(exc, output_target(args))
        if problem is not None:  # a full disk, a file-size limit, a path that is a directory
            print_error(args, problem)
            return EXIT_ERROR
        # a bug: a distinct code for schedulers
        log.exception("internal error (please report it with this traceback)")
        return EXIT_INTERNAL


def _interrupted(*, restore: bool) -> int:
    """One line for an interrupt (Ctrl-C, SIGINT); the code 128 + SIGINT. Further interrupts
    are ignored from here on (until the end, unless ``restore``), so that they cannot break
    the line or the exit."""
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    EARLY.clear()
    with contextlib.suppress(Exception):
        print("interrupted: stopped before the command finished; earlier outputs are as they "
              "were and this command's temporary files are removed", file=sys.stderr)
    if restore and previous is not None:
        signal.signal(signal.SIGINT, previous)
    return EXIT_INTERRUPTED


@contextlib.contextmanager
def interrupts_kept() -> Iterator[None]:
    """Meanwhile, a ``KeyboardInterrupt`` raised where Python can only report it as
    "Exception ignored" (a generator or object finalized during the cleanup of a thread's
    queue, say) is raised again on the main thread instead of being lost."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _thread.interrupt_main()
            return
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
