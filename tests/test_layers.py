"""The layers of docs/architecture.md ("Layers"), checked on the source: every import runs downward.

Imports are read with `ast`, all of them: at module level, inside functions and under
`TYPE_CHECKING` (an import that only a type checker runs still ties the two modules together). A
module imports another when it names it (`import a.b`, `from a import b` for a module `a.b`) or
takes a name from it (`from a.b import name`), and when a string in it spells the module's dotted
name (`"a.b"` or `"a.b:name"`), as lazy exports and registries of writers do for `importlib`.
Three rules: no circle among the modules of `vision_bench`, no import from a lower layer into a
higher one, and `render` never imports torch or `vision_bench` (`render.torch_backend`, which
callers import explicitly to draw on a torch device, is its one module that imports torch, and no
other `render` module imports it).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "vision_bench"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("render",),
    (f"{PACKAGE}=", "vision_bench.errors", "vision_bench.threads", "vision_bench.interrupts", "vision_bench.io"),
    ("vision_bench.registry", "vision_bench.config_base", "vision_bench.config_files"),
    ("vision_bench.weights",),
    ("vision_bench.tasks",),
    ("vision_bench.data",),
    ("vision_bench.metrics",),
    ("vision_bench.models",),
    ("vision_bench.train", "vision_bench.scoring"),
    ("vision_bench.evaluation",),
    ("vision_bench.bench",),
    ("vision_bench.quickstart",),
    ("vision_bench.commands",),
    ("vision_bench.cli", "vision_bench.__main__"),
)
"""From the ground up, by module prefix (the longest prefix decides; a trailing `=` matches that module
alone); one layer may import its own and every lower layer's modules."""

TORCH_DOOR = "render.torch_backend"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of `render` and `vision_bench` by dotted name."""
    return {
        module_name(path): path for package in ("render", "vision_bench") for path in (ROOT / package).rglob("*.py")
    }


def imported_names(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) for every import in the file, resolved to the most specific module named."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                yield node.lineno, submodule if submodule in modules() else base
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            spelled = node.value.partition(":")[0]
            if spelled in modules():
                yield node.lineno, spelled


@cache
def imports() -> dict[str, list[tuple[int, str]]]:
    """Per module, its imports of other modules of `render` and `vision_bench` (line, module)."""
    return {
        name: [(line, target) for line, target in imported_names(path) if target in modules() and target != name]
        for name, path in modules().items()
    }


def layer(module: str) -> int:
    matches = [
        (len(prefix), number)
        for number, prefixes in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix.removesuffix("=") or (not prefix.endswith("=") and module.startswith(prefix + "."))
    ]
    assert matches, f"{module} belongs to no layer: add it to LAYERS (and to docs/architecture.md)"
    return max(matches)[1]


def where(module: str, line: int, target: str) -> str:
    return f"{modules()[module].relative_to(ROOT)}:{line} -> {target}"


def circles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    graph = {name: sorted({target for _, target in targets}) for name, targets in imports().items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer(name)


def test_no_import_circle() -> None:
    problems = []
    for component in circles():
        members = set(component)
        ties = sorted({where(name, line, target) for name in component for line, target in imports()[name]
                       if target in members})
        problems.append(f"circle of {len(component)} modules:\n  " + "\n  ".join(ties))
    assert not problems, "\n".join(problems)


def test_imports_run_downward() -> None:
    upward = [
        f"{where(name, line, target)} (layer {layer(name)} imports layer {layer(target)})"
        for name, targets in imports().items()
        for line, target in targets
        if layer(target) > layer(name)
    ]
    assert not upward, "imports from a lower layer into a higher one:\n  " + "\n  ".join(upward)


@pytest.mark.parametrize("forbidden", ["torch", "vision_bench", TORCH_DOOR])
def test_render_stays_below_torch_and_vision_bench(forbidden: str) -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line} -> {target}"
        for name, path in modules().items()
        if name.split(".")[0] == "render"
        for line, target in imported_names(path)
        if (target == forbidden or target.startswith(forbidden + ".")) and name != TORCH_DOOR
    ]
    assert not found, f"render imports {forbidden}:\n  " + "\n  ".join(found)
