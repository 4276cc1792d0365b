"""How the command-line process ends (pipeline.cli.main run as the program): a command that
finishes runs the exit handlers and flushes its streams, then ends with ``os._exit`` (no
teardown of every module); under a profiler or tracer it returns, so the profile is written."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

#: Runs ``rag-eval metrics`` as the program would, with an exit handler and a logging handler
#: that write files only when the interpreter's exit steps run.
PROGRAM = textwrap.dedent("""
    import atexit, logging, sys
    from pathlib import Path

    out = Path(sys.argv[1])
    atexit.register(lambda: (out / "atexit").write_text("ran"))

    class Buffered(logging.Handler):  # writes its records when closed, as at shutdown
        def __init__(self):
            super().__init__()
            self.lines = []
        def emit(self, record):
            self.lines.append(record.getMessage())
        def close(self):
            (out / "log").write_text("\\n".join(self.lines))
            super().close()

    logging.getLogger("probe").addHandler(Buffered())
    logging.getLogger("probe").warning("kept")
    sys.argv = ["rag-eval", "metrics"]
    from pipeline.cli import main
    main()
    (out / "returned").write_text("main returned")  # never: the process ends inside main
""")


def test_a_finished_command_runs_exit_handlers_and_ends_in_main(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "answer_f1" in done.stdout  # the listing was flushed before the end
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "log").read_text() == "kept"
    assert not (tmp_path / "returned").exists()


def test_under_a_profiler_the_command_returns_and_the_profile_is_written(tmp_path: Path) -> None:
    profile = tmp_path / "run.prof"
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "pipeline", "metrics"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert profile.stat().st_size > 0
