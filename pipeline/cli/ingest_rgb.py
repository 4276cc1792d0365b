"""``rag-eval ingest-rgb``: evaluation records from RGB benchmark data and model outputs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline.cli.errors import EXIT_OK, EXIT_REJECTED
from pipeline.cli.leftovers import remove_leftovers
from pipeline.cli.options import COMMAND_HELP, AppendSource, Label, finite
from pipeline.ingest_rgb import OutputsFile, ingest_rgb
from pipeline.schema import RGB_TASKS

NAME = "ingest-rgb"
EXAMPLES = """\
  rag-eval ingest-rgb --data en.json --outputs outputs.jsonl --out records.parquet
  rag-eval ingest-rgb --data en.json --task noise_robustness --out rgb.parquet \\
      --outputs prediction_en_chatgpt_temp0.7_noise0.4_passage5_correct0.0.json \\
          --model chatgpt --noise-rate 0.4 \\
      --outputs prediction_en_qwen_temp0.7_noise0.4_passage5_correct0.0.json --model qwen
  rag-eval evaluate --input rgb.parquet --out out"""


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    rg: argparse.ArgumentParser = subparsers.add_parser(
        NAME, help=COMMAND_HELP[NAME]
    )
    rg.add_argument("--data", required=True, type=Path, metavar="FILE",
                    help="RGB data file (JSON lines: id, query, answer, positive, negative, ...)")
    rg.add_argument("--outputs", required=True, action=AppendSource, type=Path,
                    metavar="FILE",
                    help="model outputs (.jsonl, .json lines or .parquet): id, model, "
                         "noise_rate, task, response (or the RGB script's prediction and docs); "
                         "repeatable")
    rg.add_argument("--model", action=Label, metavar="NAME",
                    help="model of the rows of the --outputs just before it (the RGB script's "
                         "files have no model field)")
    rg.add_argument("--noise-rate", action=Label, type=finite, metavar="R",
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
    return rg


def run(args: argparse.Namespace) -> int:
    remove_leftovers(args)
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
