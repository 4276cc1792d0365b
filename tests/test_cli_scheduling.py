"""What a scheduler sees: JSON log lines and distinct exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.cli import EXIT_ERROR, EXIT_INTERNAL, EXIT_OK, main

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True,
                          text=True, cwd=ROOT, check=False)


def test_json_logs_are_one_object_per_line(tmp_path: Path) -> None:
    records = tmp_path / "in.jsonl"
    records.write_text(json.dumps({"id": "1", "question": "q", "reference": "Paris",
                                   "response": "Paris", "model": "m"}) + "\n")
    done = run_cli("--log-format", "json", "evaluate", "--input", str(records), "--out",
                   str(tmp_path / "out"), "--metrics", "answer", "--no-progress",
                   "--resamples", "10")
    assert done.returncode == EXIT_OK, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert lines and all(set(e) >= {"time", "level", "logger", "message"} for e in lines)
    assert any("1 rows read, 1 valid" in e["message"] for e in lines)


def test_bad_input_in_json_mode_is_a_logged_error(tmp_path: Path) -> None:
    done = run_cli("--log-format", "json", "evaluate", "--input", str(tmp_path / "missing.jsonl"),
                   "--out", str(tmp_path / "out"))
    assert done.returncode == EXIT_ERROR
    entries = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert entries[-1]["level"] == "ERROR" and "missing.jsonl" in entries[-1]["message"]


def test_internal_error_has_its_own_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(_: object) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli.metrics, "run", broken)
    assert main(["metrics"]) == EXIT_INTERNAL
    assert "internal error" in capsys.readouterr().err
