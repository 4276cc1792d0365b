"""Command line: ``evaluate``, ``validate``, ``query``, ``export``, ``ingest-rgb`` and ``metrics``.

Exit codes: 0 success; 1 ``evaluate`` scored no row or rejected more than ``--max-rejected``
of them (its outputs are written), ``validate`` found rows that would be rejected, or
``ingest-rgb`` set output rows aside; 2 bad input, bad configuration, an output path that cannot
be written or a failing query (one line that says which file and why); 3 ``compare``'s
regression gate failed; 4 internal error (logged with its traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl
from tqdm import tqdm

from pipeline import __version__
from pipeline.compare import (
    DEFAULT_MAX_DROP,
    DELTAS_FILE,
    MISSING_FILE,
    NEW_FILE,
    REGRESSED_FILE,
    Gate,
    compare,
    write_comparison,
)
from pipeline.config import Config, ConfigError, load_config
from pipeline.embed.backends import EmbeddingBackendError
from pipeline.evaluate import (
    DEFAULT_BATCH_ROWS,
    evaluate,
    evaluate_spark,
    evaluate_to_store,
    rejection_reasons,
)
from pipeline.export import export
from pipeline.ingest_rgb import OutputsFile, ingest_rgb
from pipeline.io.atomic import (
    OutputPathError,
    check_output_dir,
    check_output_file,
    output_dir,
    record_output,
)
from pipeline.io.layout import EXTRA_OUTPUTS_FILE
from pipeline.io.readers import record_count
from pipeline.logs import LOG_FORMATS, configure_logging
from pipeline.metrics.registry import REGISTRY, UnknownMetricError, markdown_table
from pipeline.metrics.registry import resolve as resolve_metrics
from pipeline.phases import phase
from pipeline.schema import RGB_TASKS, InputError
from pipeline.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, write_stats
from pipeline.store import StoreBusyError, checkout_run
from pipeline.validate import load_inputs
from pipeline.views import build_views, query_views, run_query

log = logging.getLogger("pipeline")

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_ERROR = 2
EXIT_GATE = 3
EXIT_INTERNAL = 4
EXIT_BUSY = 5
#: Kinds of rejection reason the line of an ``evaluate`` run lists, most rows first.
TOP_REASONS = 5
#: What ``compare`` writes (recorded in RUN_B when written inside it, for the next run there).
COMPARE_FILES = (DELTAS_FILE, REGRESSED_FILE, NEW_FILE, MISSING_FILE)
#: Metrics ``compare`` prints (every metric is in its Parquet output).
HEADLINE_DELTAS = ("answer_em", "answer_f1", "citation_f1_macro", "faithfulness", "overlap",
                   "abstain_rate", "rgb_correct")


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

    def add_stats_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--resamples", type=_non_negative, default=DEFAULT_RESAMPLES,
                       help=f"bootstrap resamples (default {DEFAULT_RESAMPLES}; 0: no intervals)")
        p.add_argument("--seed", type=int, default=DEFAULT_SEED,
                       help=f"seed of the resampling (default {DEFAULT_SEED})")

    def add_inputs(p: argparse.ArgumentParser) -> None:
        p.add_argument("--input", action=_AppendSource, default=[], type=Path, metavar="PATH",
                       help="records file: .parquet .jsonl .json .csv .tsv (repeatable); "
                            "RAGAS and Hugging Face datasets layouts are read as they are "
                            "(docs/input-formats.md)")
        p.add_argument("--model", action=_Label, metavar="NAME",
                       help="model of every row of the --input just before it (for files "
                            "without a model column; a row whose own model differs is "
                            "rejected)")
        p.add_argument("--run-label", dest="run", action=_Label, metavar="NAME",
                       help="`run` column (seed, prompt version) of every row of the --input "
                            "just before it, as --model; not the store's --run-id")
        p.add_argument("--pair", action=_AppendSource, default=[], nargs=2, type=Path,
                       metavar=("PREDICTIONS", "REFERENCES"),
                       help="legacy predictions + references/gold JSON files (repeatable)")
        p.add_argument("--column", action="append", default=[], metavar="CANONICAL=NAME",
                       help="read canonical column CANONICAL from the files' column NAME, e.g. "
                            "response=answer (repeatable; over the config's [columns])")
        p.add_argument("--config", type=Path, help="TOML configuration file")

    ev = sub.add_parser("evaluate", help="score records and build the DuckDB views")
    add_inputs(ev)
    target = ev.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", type=Path, help="output directory of this run")
    target.add_argument("--store", type=Path, metavar="DIR",
                        help="results store: add this run to it (docs/results-store.md)")
    ev.add_argument("--run-id", metavar="NAME",
                    help="name of the run in the store (default: UTC start time + random)")
    ev.add_argument("--force", action="store_true",
                    help="store: score every row again instead of reusing unchanged rows")
    ev.add_argument("--lock-wait", type=float, default=0.0, metavar="SECONDS",
                    help="store: wait this long for another run's lock (default 0: fail at once)")
    ev.add_argument("--engine", choices=("local", "spark"), default="local",
                    help="local (default, streaming on this machine) or spark (with --store)")
    ev.add_argument("--spark-master", default="local[2]", metavar="URL",
                    help="Spark master for --engine spark (default local[2])")
    ev.add_argument("--no-stats", action="store_true",
                    help="skip bootstrap intervals and paired comparisons (docs/statistics.md)")
    ev.add_argument("--stats-by", action="append", default=[], metavar="COLUMN[,COLUMN...]",
                    help="also intervals and comparisons per these columns, e.g. "
                         "question_type,noise_level (repeatable; as `rag-eval stats --by`)")
    ev.add_argument("--metrics", help="comma-separated metric or family names (default: all)")
    ev.add_argument("--batch-rows", type=_positive, default=None,
                    help="most rows scored per batch (fewer for long texts)")
    ev.add_argument("--max-rejected", type=_fraction, metavar="FRACTION",
                    help="exit 1 when more than this share (0 to 1) of the rows read is "
                         "rejected (default: no limit; a run that scores no row always exits "
                         "1); the outputs are written either way, to inspect")
    ev.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    ev.add_argument("--embedding-backend", metavar="SPEC",
                    help="minilm (default), static (fast screening, docs/embeddings.md), hashed, "
                         "or sentence-transformers:<name or path>")
    ev.add_argument("--cache-dir", type=Path, metavar="DIR",
                    help="embedding cache (default: $XDG_CACHE_HOME/rag-eval/embeddings)")
    add_stats_options(ev)
    ev.add_argument("--report", type=Path, metavar="FILE",
                    help="also write the HTML report to FILE")

    va = sub.add_parser("validate", help="check input files without scoring them")
    add_inputs(va)

    qu = sub.add_parser("query", help="run SQL against the views of an output directory",
                        description="Run one read-only SQL statement against the views of DIR. "
                        "It reads only the files under DIR and writes nothing: COPY, ATTACH, "
                        "INSTALL, LOAD, writes, settings and several statements are refused "
                        "with exit 2 (docs/query-security.md).")
    qu.add_argument("dir", type=Path, help="output directory of an evaluate run, or a store")
    qu.add_argument("sql", help='one SQL statement, e.g. "select * from by_model"')
    qu.add_argument("--run", metavar="RUN",
                    help="store: the run every view reads ('all': every run; default: latest)")
    qu.add_argument("--format", choices=("table", "csv", "json"), default="table")

    co = sub.add_parser("checkout", help="copy a run of a results store into an output "
                        "directory (for report, compare, export, stats)")
    co.add_argument("store", type=Path, help="results store (evaluate --store)")
    co.add_argument("--run", metavar="RUN", help="the run (default: the latest)")
    co.add_argument("--out", required=True, type=Path, help="output directory to write")

    ex = sub.add_parser("export", help="write the per-row results with texts as one table")
    ex.add_argument("dir", type=Path, help="output directory of an evaluate run")
    ex.add_argument("--format", choices=("tsv", "csv", "parquet"), default="tsv")
    ex.add_argument("--out", type=Path, help="target file (default: DIR/export.FORMAT)")
    ex.add_argument("--layout", choices=("wide", "enhanced-framework"), default="wide",
                    help="wide: every column of the run (default); enhanced-framework: the "
                         "51-column TSV of the enhanced text evaluation framework "
                         "(docs/compat.md)")
    ex.add_argument("--no-neutralize-formulas", dest="neutralize_formulas",
                    action="store_false",
                    help="csv/tsv: write text cells that start with = + - @ tab or carriage "
                         "return unchanged (default: put ' before them so a spreadsheet shows "
                         "them as text instead of running them as formulas)")

    rg = sub.add_parser("ingest-rgb", help="build evaluation records from RGB benchmark files")
    rg.add_argument("--data", required=True, type=Path, metavar="FILE",
                    help="RGB data file (JSON lines: id, query, answer, positive, negative, ...)")
    rg.add_argument("--outputs", required=True, action=_AppendSource, type=Path,
                    metavar="FILE",
                    help="model outputs (.jsonl, .json lines or .parquet): id, model, "
                         "noise_rate, task, response (or the RGB script's prediction and docs); "
                         "repeatable")
    rg.add_argument("--model", action=_Label, metavar="NAME",
                    help="model of the rows of the --outputs just before it (the RGB script's "
                         "files have no model field)")
    rg.add_argument("--noise-rate", action=_Label, type=float, metavar="R",
                    help="noise rate of the rows of the --outputs just before it, where they "
                         "give none; a row whose own rate differs is set aside")
    rg.add_argument("--out", required=True, type=Path, metavar="PATH",
                    help="records file to write (.parquet)")
    rg.add_argument("--response-column", metavar="NAME",
                    help="column of the outputs that holds the response (default: response, "
                         "else prediction)")
    rg.add_argument("--task", choices=RGB_TASKS,
                    help="task of every output row when the outputs have no task column")
    rg.add_argument("--language", default="auto",
                    help="auto (zh when the query has Han characters, else en) or a fixed code")
    rg.add_argument("--id-prefix", metavar="TEXT",
                    help="prefix of record ids (default: the data file's stem and ':')")

    st = sub.add_parser(
        "stats", help="bootstrap intervals and paired model comparisons of a run",
        description="Recompute intervals.parquet and comparisons.parquet of DIR: per model over "
        "all rows, each noise level and category (comparisons: also each RGB task), plus each "
        "--by slice, and rebuild its views (docs/statistics.md).",
        epilog="example: rag-eval stats out --by question_type,noise_level, then rag-eval "
        "query out \"select model, mean, ci_low, ci_high from intervals where question_type = "
        "'multi-hop' and noise_level = 0.4 and metric = 'answer_f1' order by mean desc\"",
    )
    st.add_argument("dir", type=Path, help="output directory of an evaluate run")
    st.add_argument("--by", action="append", default=[], metavar="COLUMN[,COLUMN...]",
                    help="also a slice of these columns of the scores, e.g. "
                         "question_type,noise_level (repeatable: one slice each)")
    add_stats_options(st)

    co = sub.add_parser("compare", help="compare run B against baseline run A; gate regressions")
    co.add_argument("run_a", type=Path, help="baseline run directory")
    co.add_argument("run_b", type=Path, help="new run directory")
    co.add_argument("--out", type=Path, metavar="DIR",
                    help="write deltas and item lists as Parquet here (default: RUN_B/compare)")
    co.add_argument("--max-drop", action="append", default=[], metavar="METRIC=X",
                    help="gate: fail when a model's mean METRIC falls by more than X with its "
                         "95%% interval below 0 (repeatable; default answer_f1=0.02, "
                         "answer_em=0.02)")
    co.add_argument("--max-regressed-items", type=_non_negative, metavar="N",
                    help="gate: fail when more than N items regressed")
    co.add_argument("--force", action="store_true",
                    help="compare even when the runs' signatures differ")
    add_stats_options(co)

    rp = sub.add_parser("report", help="write a self-contained HTML report of a run")
    rp.add_argument("dir", type=Path, help="output directory of an evaluate run")
    rp.add_argument("--out", type=Path, required=True, metavar="FILE", help="report.html")
    rp.add_argument("--compare", type=Path, metavar="OTHER_DIR",
                    help="baseline run: add a run comparison section")
    rp.add_argument("--force", action="store_true",
                    help="compare even when the runs' signatures differ")

    me = sub.add_parser("metrics", help="list the registered metrics")
    me.add_argument("--format", choices=("table", "markdown"), default="table")
    for name, command in sub.choices.items():
        command.formatter_class = _HelpFormatter
        if name in EXAMPLES:
            examples = "examples:\n" + EXAMPLES[name]
            command.epilog = examples if command.epilog is None else (
                f"{command.epilog}\n\n{examples}"
            )
    parser.formatter_class = _HelpFormatter
    parser.epilog = "examples (rag-eval COMMAND --help shows more):\n" + EXAMPLES["rag-eval"]
    return parser


#: ``--help`` examples of each command (its epilog), and of the program.
EXAMPLES: dict[str, str] = {
    "rag-eval": """\
  rag-eval evaluate --input answers.jsonl --out out
  rag-eval query out "select * from by_model"
  rag-eval report out --out report.html
  rag-eval compare baseline_out out""",
    "evaluate": """\
  rag-eval evaluate --input runs/answers.jsonl --out out
  rag-eval evaluate --input gpt4o.csv --model gpt-4o --input llama.csv --model llama-3 --out out
  rag-eval evaluate --input ragas.parquet --model m1 --out out   # RAGAS / HF datasets export
  rag-eval evaluate --input data.csv --column response=answer --column id=qid --out out
  rag-eval evaluate --input a.parquet --out out --report report.html
  rag-eval evaluate --input a.parquet --store store --run-id baseline
  rag-eval -v evaluate --input a.jsonl --out out --metrics answer,citation   # with info logs""",
    "validate": """\
  rag-eval validate --input runs/answers.jsonl
  rag-eval validate --input ragas.csv --model m1 --column reference=gold""",
    "query": """\
  rag-eval query out "select * from headline"
  rag-eval query out "select id, suggestions from scores limit 5" --format csv
  rag-eval query store "select * from runs" --run all""",
    "checkout": """\
  rag-eval checkout store --out run1
  rag-eval checkout store --run 20240101T120000Z-ab12 --out run1""",
    "export": """\
  rag-eval export out
  rag-eval export out --format csv --out results.csv""",
    "ingest-rgb": """\
  rag-eval ingest-rgb --data en.json --outputs outputs.jsonl --out records.parquet
  rag-eval ingest-rgb --data en.json --task noise_robustness --out rgb.parquet \\
      --outputs prediction_en_chatgpt_temp0.7_noise0.4_passage5_correct0.0.json \\
          --model chatgpt --noise-rate 0.4 \\
      --outputs prediction_en_qwen_temp0.7_noise0.4_passage5_correct0.0.json --model qwen
  rag-eval evaluate --input rgb.parquet --out out""",
    "stats": """\
  rag-eval stats out --by question_type,noise_level
  rag-eval stats out --resamples 2000 --seed 7""",
    "compare": """\
  rag-eval compare baseline_out new_out
  rag-eval compare baseline_out new_out --max-drop answer_f1=0.01 --max-regressed-items 5""",
    "report": """\
  rag-eval report out --out report.html
  rag-eval report new_out --out report.html --compare baseline_out""",
    "metrics": """\
  rag-eval metrics
  rag-eval metrics --format markdown""",
}


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """:class:`argparse.RawDescriptionHelpFormatter` by paragraph (blank-line separated): a
    paragraph with line breaks (the examples) is kept as written, a one-line paragraph (a
    description) is wrapped as by the default formatter."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for paragraph in text.split("\n\n"):
            if "\n" in paragraph:
                paragraphs.append(super()._fill_text(paragraph, width, indent))
            else:
                paragraphs.append(argparse.HelpFormatter._fill_text(self, paragraph, width, indent))
        return "\n\n".join(paragraphs)


class _AppendSource(argparse.Action):
    """``--input``, ``--pair``, ``--outputs``: appended, and remembered as the input that a
    following label (``--model``, ``--run-label``, ``--noise-rate``) belongs to."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        items = [*(getattr(namespace, self.dest, None) or []), values]
        setattr(namespace, self.dest, items)
        namespace.last_source = (self.dest, len(items) - 1)


class _Label(argparse.Action):
    """``--model NAME`` and the like: a label of the input given just before it, kept in
    ``labels[(option dest, index)][column]``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        last = getattr(namespace, "last_source", None)
        if last is None:
            parser.error(f"{option_string} labels the input given just before it: write it "
                         "after that input's path (--input PATH --model NAME)")
        labels = dict(getattr(namespace, "labels", None) or {})
        entry = dict(labels.get(last, {}))
        if self.dest in entry:
            parser.error(f"{option_string} is given twice for the same input")
        entry[self.dest] = values
        labels[last] = entry
        namespace.labels = labels


def _input_labels(args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """``--model`` / ``--run-label`` of each ``--input``, by the path as given."""
    found: dict[str, dict[str, str]] = {}
    for (dest, index), entry in (getattr(args, "labels", None) or {}).items():
        if dest != "input":
            flags = ", ".join(f"--{name.replace('run', 'run-label')}" for name in entry)
            raise ConfigError(
                f"{flags} labels an --input; a --pair takes its model from the predictions' "
                "model field or file name"
            )
        path = os.fspath(args.input[index])
        if found.get(path, entry) != entry:
            raise ConfigError(f"{path} is given twice with different labels")
        found[path] = entry
    return found


def _column_mapping(items: Sequence[str]) -> dict[str, str]:
    """``--column CANONICAL=NAME`` entries as a mapping."""
    mapping: dict[str, str] = {}
    for item in items:
        canonical, sep, name = item.partition("=")
        if not sep or not canonical.strip() or not name:
            raise ConfigError(
                f"--column expects CANONICAL=NAME (e.g. response=answer), got {item!r}"
            )
        mapping[canonical.strip()] = name
    return mapping


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(verbosity=args.verbose, fmt=args.log_format)
    try:
        if args.command == "evaluate":
            return _evaluate(args)
        if args.command == "validate":
            return _validate(args)
        if args.command == "query":
            return _query(args)
        if args.command == "export":
            return _export(args)
        if args.command == "checkout":
            print(f"run checked out -> {checkout_run(args.store, args.run, args.out)}")
            return EXIT_OK
        if args.command == "ingest-rgb":
            return _ingest_rgb(args)
        if args.command == "stats":
            return _stats(args)
        if args.command == "compare":
            return _compare(args)
        if args.command == "report":
            return _report(args)
        return _metrics(args.format)
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


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, got {text!r}")
    return value


def _config(args: argparse.Namespace) -> Config:
    metrics = None
    if getattr(args, "metrics", None):
        metrics = tuple(m for m in args.metrics.split(",") if m.strip())
    config = load_config(
        args.config,
        metrics=metrics,
        embedding_backend=getattr(args, "embedding_backend", None),
        embedding_cache_dir=getattr(args, "cache_dir", None),
        columns=_column_mapping(getattr(args, "column", [])),
        input_labels=_input_labels(args) or None,
    )
    resolve_metrics(config.metrics)  # fail before reading anything
    return config


def _require_inputs(args: argparse.Namespace) -> None:
    if not args.input and not args.pair:
        raise ConfigError("give at least one --input PATH or --pair PREDICTIONS REFERENCES")


def _evaluate(args: argparse.Namespace) -> int:
    _require_inputs(args)
    config = _config(args)
    if args.cache_dir is not None:
        check_output_dir(args.cache_dir)
    if args.engine == "spark" or args.store is not None:
        return _evaluate_store(args, config)
    if args.run_id or args.force or args.lock_wait:
        raise ConfigError("--run-id, --force and --lock-wait apply to --store runs only")
    if args.report is not None:  # before the run, which checks --out itself
        check_output_file(args.report)
    with _progress_bars(args.no_progress, _input_rows(args)) as progress:
        summary = evaluate(
            args.input, args.out, config,
            pairs=[tuple(p) for p in args.pair],
            batch_rows=args.batch_rows or DEFAULT_BATCH_ROWS,
            on_progress=progress,
            resamples=args.resamples,
            seed=args.seed,
            stats=not args.no_stats,
            stats_by=args.stats_by,
        )
    print(
        f"read {summary.n_read} rows: scored {summary.n_scored}, rejected {summary.n_rejected} "
        f"-> {summary.out_dir}"
    )
    if summary.n_rejected:
        _print_rejections(summary.rejected_files)
    _print_headline(summary.out_dir)
    if args.report is not None:
        from pipeline.report import write_report

        with phase("report"):
            report = write_report(summary.out_dir, args.report)
        record_output(summary.out_dir, EXTRA_OUTPUTS_FILE, [report])
        print(f"\nreport: {report}")
    return _run_outcome(args, summary.n_read, summary.n_scored, summary.n_rejected)


def _print_rejections(files: str | Path) -> None:
    """The kinds of rejection reason with the most rows (values masked), and where the rows
    and their full reasons are."""
    reasons = rejection_reasons(files)
    print("rejected rows by reason:")
    for reason, rows in reasons.head(TOP_REASONS).iter_rows():
        print(f"{rows:>9}  {reason}")
    rest = reasons.slice(TOP_REASONS)
    if rest.height:
        kinds = "1 other reason" if rest.height == 1 else f"{rest.height} other reasons"
        print(f"{rest['rows'].sum():>9}  ({kinds})")
    print(f"rejected rows and reasons: {files}")


def _run_outcome(args: argparse.Namespace, n_read: int, n_results: int, n_rejected: int) -> int:
    """EXIT_REJECTED (with one line on stderr) when a run has no row with scores
    (``n_results``) or rejected more than ``--max-rejected`` of the rows it read."""
    if n_results == 0:
        failure = f"no row was scored ({n_rejected} of {n_read} rows rejected)"
    elif args.max_rejected is not None and n_rejected / n_read > args.max_rejected:
        failure = (
            f"{n_rejected} of {n_read} rows rejected ({n_rejected / n_read:.2%}), more than "
            f"--max-rejected {args.max_rejected:g}"
        )
    else:
        return EXIT_OK
    _print_error(args, f"{failure}; the outputs are written")
    return EXIT_REJECTED


def _print_error(args: argparse.Namespace, message: str) -> None:
    if args.log_format == "json":
        log.error("%s", message)
    else:
        print(f"error: {message}", file=sys.stderr)


def _input_rows(args: argparse.Namespace) -> int | None:
    """The rows the inputs hold when the metadata tells (Parquet files only), else None."""
    counts = [record_count(path) for path in args.input]
    if args.pair or any(count is None for count in counts):
        return None
    return sum(count for count in counts if count is not None)


@contextlib.contextmanager
def _progress_bars(
    hidden: bool, total: int | None = None
) -> Iterator[Callable[[str, int], None]]:
    """One tqdm bar per stage of a run (reading, scoring) on stderr, shown on a terminal only.

    ``total``: the rows of the inputs, when known, for both bars; rejected rows are never
    scored, so the scoring bar's total becomes the rows it counted when the run ends."""
    bars: dict[str, Any] = {}

    def update(stage: str, rows: int) -> None:
        if stage not in bars:
            bars[stage] = tqdm(unit="rows", desc=stage, disable=True if hidden else None,
                               file=sys.stderr, unit_scale=True, total=total)
        bars[stage].update(rows)

    try:
        yield update
    finally:
        for bar in bars.values():
            if bar.total is not None and bar.n < bar.total:
                bar.total = bar.n
                bar.refresh()
            bar.close()


#: Printed under the headline table when it shows faithfulness: what its 0.6 baseline means.
FAITHFULNESS_NOTE = (
    "faithfulness = min(1, 0.6 + 0.4 x overlap): an answer with no supported sentence still "
    "scores 0.6 (a baseline); overlap is the share of supported sentences. 0.0 marks no answer "
    "(an abstention, or by default an empty response) to an answerable question."
)


def _print_headline(directory: Path) -> None:
    print()
    frames = query_views(directory, {"headline": "select * from headline order by model",
                                     "rgb": "select * from rgb_summary order by model",
                                     "tokenless": "select * from tokenless_rows"})
    headline, rgb = frames["headline"], frames["rgb"]
    shown = _without_empty_columns(headline.drop("signature"), keep=("model",))
    _print_frame(shown, "table")
    if "faithfulness" in shown.columns:
        print(FAITHFULNESS_NOTE)
    for note in tokenless_notes(frames["tokenless"]):
        log.info("tokenless rows: %s", note)
        print(note)
    for signature in headline["signature"].unique(maintain_order=True):
        print(f"signature: {signature}")
    if rgb.height:
        print("\nRGB robustness (%, docs/rgb.md):")
        _print_frame(rgb.drop("signature"), "table")


def tokenless_notes(tokenless: pl.DataFrame) -> list[str]:
    """One line per metric whose tokenizer found no token in some rows (view tokenless_rows).

    >>> tokenless_notes(pl.DataFrame({"metric": ["rouge", "bleu"], "n_rows": [30, 30],
    ...     "n_without_tokens": [23, 0], "n_reference_without_tokens": [20, 0],
    ...     "n_response_without_tokens": [5, 0]}))
    ['ROUGE: 23 of 30 rows without tokens (reference 20, response 5); scores 0 there']
    """
    return [
        f"{row['metric'].upper()}: {row['n_without_tokens']} of {row['n_rows']} rows without "
        f"tokens (reference {row['n_reference_without_tokens']}, response "
        f"{row['n_response_without_tokens']}); scores 0 there"
        for row in tokenless.iter_rows(named=True) if row["n_without_tokens"]
    ]


def _without_empty_columns(frame: pl.DataFrame, keep: Sequence[str] = ()) -> pl.DataFrame:
    """``frame`` without the columns that are null on every row (the RAG columns of a run
    without passages, ``overall_score`` when the composites did not run), except ``keep``."""
    if frame.height == 0:
        return frame
    return frame.select(
        c for c in frame.columns if c in keep or frame[c].null_count() < frame.height
    )


def _evaluate_store(args: argparse.Namespace, config: Config) -> int:
    if args.store is None:
        raise ConfigError("--engine spark writes a results store: give --store DIR")
    if args.report is not None:
        raise ConfigError("--report needs an --out directory; for a store run use "
                          "`rag-eval report` on an --out run")
    check_output_dir(args.store)
    if args.engine == "spark":
        if args.pair:
            raise ConfigError("--engine spark reads Parquet --input files only, not --pair")
        if config.input_labels:
            raise ConfigError("--model and --run-label apply to the local engine; with "
                              "--engine spark give the files a model (or run) column")
        if args.stats_by:
            raise ConfigError("--stats-by needs statistics, which --engine spark runs do not "
                              "write; run `rag-eval stats` on a checkout of the run")
        summary = evaluate_spark(
            args.input, args.store, config, master=args.spark_master, run_id=args.run_id,
            lock_wait=args.lock_wait, force=args.force,
        )
    else:
        with _progress_bars(args.no_progress, _input_rows(args)) as progress:
            summary = evaluate_to_store(
                args.input, args.store, config, run_id=args.run_id, force=args.force,
                lock_wait=args.lock_wait, pairs=[tuple(p) for p in args.pair],
                batch_rows=args.batch_rows or DEFAULT_BATCH_ROWS, on_progress=progress,
                resamples=args.resamples, seed=args.seed, stats=not args.no_stats,
                stats_by=args.stats_by,
            )
    print(
        f"run {summary.run_id}: read {summary.n_read} rows: scored {summary.n_scored}, "
        f"reused {summary.n_reused}, rejected {summary.n_rejected} -> {summary.run_dir}"
    )
    if summary.n_rejected:
        _print_rejections(summary.rejected_files)
    _print_headline(args.store)
    return _run_outcome(args, summary.n_read, summary.n_scored + summary.n_reused,
                        summary.n_rejected)


def _stats(args: argparse.Namespace) -> int:
    summary = write_stats(args.dir, resamples=args.resamples, seed=args.seed, by=args.by)
    build_views(args.dir)
    print(
        f"{summary.intervals} intervals -> {summary.intervals_path}\n"
        f"{summary.comparisons} paired comparisons ({summary.significant} significant after "
        f"Holm) -> {summary.comparisons_path}\n"
        f"slices: {'; '.join(summary.slices)}\n"
        f"resamples {summary.resamples}, seed {summary.seed}"
    )
    return EXIT_OK


def _gate(args: argparse.Namespace) -> Gate:
    drops = dict(DEFAULT_MAX_DROP)
    if args.max_drop:
        drops = {}
        for item in args.max_drop:
            metric, sep, value = item.partition("=")
            try:
                drops[metric.strip()] = float(value)
            except ValueError:
                sep = ""
            if not sep or metric.strip() not in REGISTRY:
                raise ConfigError(
                    f"--max-drop expects METRIC=NUMBER with a known metric, got {item!r}"
                )
    return Gate(max_drop=drops, max_regressed_items=args.max_regressed_items)


def _compare(args: argparse.Namespace) -> int:
    check_output_dir(args.out or args.run_b / "compare")
    comparison = compare(args.run_a, args.run_b, gate=_gate(args), force=args.force,
                         resamples=args.resamples, seed=args.seed)
    out = output_dir(args.out or args.run_b / "compare")
    write_comparison(comparison, out)
    record_output(args.run_b, EXTRA_OUTPUTS_FILE, [out / name for name in COMPARE_FILES])
    overall = comparison.deltas.filter(pl.col("slice") == "all")
    headline = overall.filter(pl.col("metric").is_in(list(HEADLINE_DELTAS))).sort("model", "metric")
    _print_frame(headline.select("model", "metric", "n_pairs", "mean_a", "mean_b", "delta",
                                 "ci_low", "ci_high", "p_adjusted"), "table")
    print(
        f"{comparison.regressed.select('id', 'model', 'noise_level', 'task').unique().height} "
        f"items regressed, {comparison.new_items.height} new, "
        f"{comparison.missing_items.height} missing -> {out}"
    )
    if comparison.regressed.height:
        _print_frame(comparison.regressed.head(20), "table")
    if comparison.failures:
        print("regression gate FAILED:\n  " + "\n  ".join(comparison.failures))
        return EXIT_GATE
    print("regression gate passed")
    return EXIT_OK


def _report(args: argparse.Namespace) -> int:
    from pipeline.report import write_report

    check_output_file(args.out)
    diff = regressed = None
    if args.compare is not None:
        comparison = compare(args.compare, args.dir, force=args.force)
        diff, regressed = comparison.deltas, comparison.regressed
    report = write_report(args.dir, args.out, diff=diff, regressed=regressed)
    record_output(args.dir, EXTRA_OUTPUTS_FILE, [report])
    print(f"report: {report}")
    return EXIT_OK


def _validate(args: argparse.Namespace) -> int:
    _require_inputs(args)
    config = _config(args)
    validated = load_inputs(args.input, [tuple(p) for p in args.pair], config)
    print(
        f"read {validated.n_read} rows: {validated.records.height} valid, "
        f"{validated.rejected.height} would be rejected"
    )
    if validated.rejected.height:
        reasons = (
            validated.rejected.group_by("source", "reason")
            .len("rows")
            .sort("rows", descending=True)
        )
        _print_frame(reasons, "table")
        return EXIT_REJECTED
    return EXIT_OK


def _query(args: argparse.Namespace) -> int:
    try:
        result = run_query(args.dir, args.sql, run=args.run)
    except InputError:
        raise
    except Exception as exc:  # DuckDB reports SQL errors with their own exception types
        print(f"error: query failed: {exc}", file=sys.stderr)
        return EXIT_ERROR
    _print_frame(result, args.format)
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    target = args.out or args.dir / f"export.{args.format}"
    rows = export(args.dir, target, args.format, neutralize=args.neutralize_formulas,
                  layout=args.layout)
    print(f"wrote {rows} rows to {target}")
    return EXIT_OK


def _ingest_rgb(args: argparse.Namespace) -> int:
    labels = getattr(args, "labels", None) or {}
    outputs = [
        OutputsFile(path, model=labels.get(("outputs", index), {}).get("model"),
                    noise_rate=labels.get(("outputs", index), {}).get("noise_rate"))
        for index, path in enumerate(args.outputs)
    ]
    summary = ingest_rgb(
        args.data, outputs, args.out,
        response_column=args.response_column, task=args.task, language=args.language,
        id_prefix=args.id_prefix,
    )
    print(
        f"{summary.n_outputs} output rows over {summary.n_items} items: "
        f"{summary.n_records} records -> {summary.records_path}"
    )
    if summary.rejected_path is not None:
        print(f"{summary.n_rejected} output rows set aside, with reasons: {summary.rejected_path}")
        return EXIT_REJECTED
    return EXIT_OK


def _json_nested(frame: pl.DataFrame) -> pl.DataFrame:
    """List and struct columns as JSON text (``["a","b"]``), which CSV can hold; null stays
    null."""
    nested = [name for name, dtype in frame.schema.items() if dtype.is_nested()]
    return frame.with_columns(
        pl.when(pl.col(name).is_not_null())
        .then(pl.struct(pl.col(name).alias("v")).struct.json_encode()
              .str.strip_prefix('{"v":').str.strip_suffix("}"))
        .alias(name)
        for name in nested
    )


def _metrics(fmt: str) -> int:
    if fmt == "markdown":
        print(markdown_table())
        return EXIT_OK
    table = pl.DataFrame(
        {
            "metric": list(REGISTRY),
            "family": [s.family for s in REGISTRY.values()],
            "dtype": [str(s.dtype) for s in REGISTRY.values()],
            "description": [s.description for s in REGISTRY.values()],
        }
    )
    _print_frame(table, "table")
    return EXIT_OK


def _print_frame(frame: pl.DataFrame, fmt: str) -> None:
    if fmt == "csv":
        sys.stdout.write(_json_nested(frame).write_csv())
    elif fmt == "json":
        sys.stdout.write(frame.write_ndjson())
    else:
        with pl.Config(
            tbl_rows=-1, tbl_cols=-1, tbl_width_chars=240, tbl_hide_dataframe_shape=True,
            fmt_str_lengths=80, float_precision=4, tbl_hide_column_data_types=True,
        ):
            print(frame)
