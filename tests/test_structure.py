"""The architecture, as tests: the public API, the import graph, module sizes and the package layout.

Everything here reads ``verify/**/*.py`` with ``ast`` (nothing but ``verify`` itself is imported), and
every failure lists *all* offenders with ``path:line`` so the message doubles as a to-do list.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "verify"
MAX_LINES = 420

# Today's verify/__init__.py __all__, written out: changing the public API means changing this list.
EXPORTED = [
    "Benchmark",
    "BenchmarkError",
    "ConfigError",
    "DeepJudgmentRubricCustomConfig",
    "DeepJudgmentTraitConfig",
    "ExcerptMatch",
    "GateResult",
    "ModelConfig",
    "ModelRetryConfig",
    "PresetError",
    "Question",
    "RunOutcome",
    "Summary",
    "ToolRetryConfig",
    "UserError",
    "VerificationConfig",
    "VerificationResult",
    "VerifyError",
    "load_benchmark",
    "load_preset",
    "match_excerpt",
    "read_results",
    "run_verification",
    "save_benchmark",
    "save_preset",
]

# The layers: the only modules allowed directly in verify/, and the only packages.
TOP_LEVEL_MODULES = {"verify", "verify.__main__", "verify.errors", "verify.files", "verify.secrets",
                     "verify.yaml_build"}
PACKAGES = {
    "verify.cli",
    "verify.config",
    "verify.benchmark",
    "verify.llm",
    "verify.llm.adapters",
    "verify.llm.simulated",
    "verify.judging",
    "verify.judging.excerpts",
    "verify.templates",
    "verify.testing",
    "verify.sandbox",
    "verify.stages",
    "verify.run",
    "verify.results",
    "verify.report",
}


# --------------------------------------------------------------------------- reading verify/


@dataclass(frozen=True)
class Import:
    """One import statement's target, resolved to a ``verify`` module."""

    source: str  # the importing module
    target: str  # the imported module (``from m import name`` -> ``m.name`` when that is a module, else ``m``)
    names: tuple[str, ...]  # the names taken by ``from m import ...`` (empty for ``import m``)
    line: int
    where: str  # "module level" or "in <function>"
    type_checking: bool  # inside ``if TYPE_CHECKING:``

    @property
    def location(self) -> str:
        return f"{path_of(self.source)}:{self.line}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of ``verify``, by dotted name."""
    return {
        module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts
    }


def path_of(module: str) -> str:
    return modules()[module].relative_to(ROOT).as_posix()


def is_package(module: str) -> bool:
    return modules()[module].name == "__init__.py"


def known_module(dotted: str) -> str | None:
    """The longest prefix of ``dotted`` that is a ``verify`` module (``None`` outside ``verify``)."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in modules():
            return candidate
    return None


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def from_base(module: str, node: ast.ImportFrom) -> str:
    """The absolute module named by ``from <base> import ...`` in ``module`` (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    package = module if is_package(module) else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


class _Imports(ast.NodeVisitor):
    """Collects every import of a module, noting whether it is deferred or only for type checkers."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.found: list[Import] = []
        self.functions: list[str] = []
        self.type_checking = 0

    def visit_If(self, node: ast.If) -> None:
        if is_type_checking(node.test):
            self.visit(node.test)
            self.type_checking += 1
            for child in node.body:
                self.visit(child)
            self.type_checking -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def _add(self, target: str, names: tuple[str, ...], node: ast.stmt) -> None:
        where = f"in {self.functions[-1]}()" if self.functions else "module level"
        self.found.append(Import(self.module, target, names, node.lineno, where, self.type_checking > 0))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            target = known_module(alias.name)
            if target is not None:
                self._add(target, (), node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = from_base(self.module, node)
        if known_module(base) is None:
            return
        plain: list[str] = []
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in modules():
                self._add(submodule, (), node)
            else:
                plain.append(alias.name)
        if plain:
            target = known_module(base)
            assert target is not None
            self._add(target, tuple(plain), node)


@cache
def tree(module: str) -> ast.Module:
    path = modules()[module]
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@cache
def imports() -> tuple[Import, ...]:
    found: list[Import] = []
    for module in modules():
        visitor = _Imports(module)
        visitor.visit(tree(module))
        found.extend(visitor.found)
    return tuple(found)


def runtime_graph() -> dict[str, dict[str, list[Import]]]:
    """module -> imported module -> the import statements, without ``if TYPE_CHECKING:`` imports."""
    graph: dict[str, dict[str, list[Import]]] = {m: {} for m in modules()}
    for imp in imports():
        if not imp.type_checking:
            graph[imp.source].setdefault(imp.target, []).append(imp)
    return graph


def strongly_connected(graph: dict[str, dict[str, list[Import]]]) -> list[list[str]]:
    """Tarjan's strongly connected components, each sorted, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def describe(imp: Import) -> str:
    names = f" ({', '.join(imp.names)})" if imp.names else ""
    return f"{imp.source} -> {imp.target}{names}  {imp.location} {imp.where}"


# --------------------------------------------------------------------------- a. exported members
# (``verify`` is imported here only, so the ast-based checks below run even when it does not import)



def test_all_is_the_documented_public_api() -> None:
    import verify

    assert verify.__all__ == EXPORTED


def test_every_exported_name_exists() -> None:
    import verify

    missing = [name for name in verify.__all__ if not hasattr(verify, name)]
    assert not missing, f"in verify.__all__ but not attributes of verify: {missing}"


def test_every_public_attribute_is_exported() -> None:
    import verify

    public = {
        name for name, value in vars(verify).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    unexported = sorted(public - set(verify.__all__))
    assert not unexported, f"public attributes of verify missing from __all__: {unexported}"


# --------------------------------------------------------------------------- b. import cycles


def test_the_import_graph_sees_every_module() -> None:
    """Guards the checks below: the parser finds the package and resolves its imports."""
    assert {"verify", "verify.cli", "verify.run.runner", "verify.judging.excerpts.match"} <= set(modules())
    graph = runtime_graph()
    assert "verify.run.runner" in graph["verify.cli"]  # from verify.run.runner import ...
    assert any("verify.errors" in targets for module, targets in graph.items() if module != "verify")
    assert sum(len(targets) for targets in graph.values()) > len(modules())


def test_no_import_cycles() -> None:
    graph = runtime_graph()
    problems: list[str] = []
    for module in sorted(graph):
        for imp in graph[module].get(module, []):
            problems.append(f"self-import: {describe(imp)}")
    cycles = [c for c in strongly_connected(graph) if len(c) > 1]
    for n, component in enumerate(cycles, start=1):
        members = set(component)
        problems.append(f"cycle {n} ({len(component)} modules): {', '.join(component)}")
        for source in component:
            for target in sorted(set(graph[source]) & members - {source}):
                problems.extend(f"    {describe(imp)}" for imp in graph[source][target])
    assert not problems, (
        f"{len(cycles)} import cycle(s) among verify modules (imports under `if TYPE_CHECKING:` are not "
        "counted; every edge inside each cycle is listed):\n" + "\n".join(problems)
    )


# --------------------------------------------------------------------------- c. private cross-module imports


def _module_aliases(module: str) -> dict[str, str]:
    """Local names bound to ``verify`` modules by imports anywhere in ``module``."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree(module)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in modules():
                    aliases[alias.asname] = alias.name
                elif not alias.asname and alias.name.split(".")[0] == "verify":
                    aliases["verify"] = "verify"
        elif isinstance(node, ast.ImportFrom):
            base = from_base(module, node)
            for alias in node.names:
                if f"{base}.{alias.name}" in modules():  # from verify.x import y  (y a module)
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
    return aliases


def _dotted(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def private_uses() -> Iterator[str]:
    for imp in imports():
        for name in imp.names:
            if is_private(name) and imp.target != imp.source:
                yield f"{imp.location}: {imp.source} imports {name} from {imp.target}"
        if not imp.names and is_private(imp.target.rpartition(".")[2]):
            yield f"{imp.location}: {imp.source} imports private module {imp.target}"
    for module in modules():
        aliases = _module_aliases(module)
        for node in ast.walk(tree(module)):
            if not isinstance(node, ast.Attribute) or not is_private(node.attr):
                continue
            dotted = _dotted(node.value)
            if not dotted or dotted[0] not in aliases:
                continue
            owner = ".".join([aliases[dotted[0]], *dotted[1:]])
            if owner in modules() and owner != module:
                yield f"{path_of(module)}:{node.lineno}: {module} uses {owner}.{node.attr}"


def test_no_private_names_cross_modules() -> None:
    offenders = sorted(set(private_uses()), key=lambda s: (s.split(":")[0], int(s.split(":")[1])))
    assert not offenders, (
        f"{len(offenders)} use(s) of another module's private name (make it public or move it):\n"
        + "\n".join(offenders)
    )


# --------------------------------------------------------------------------- d. module size


def test_modules_are_at_most_420_lines() -> None:
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in modules().items()}
    offenders = sorted(((n, m) for m, n in sizes.items() if n > MAX_LINES), reverse=True)
    assert not offenders, f"{len(offenders)} module(s) over {MAX_LINES} lines:\n" + "\n".join(
        f"{path_of(m)}: {n} lines (+{n - MAX_LINES})" for n, m in offenders
    )


# --------------------------------------------------------------------------- e. layers


def test_every_module_lives_in_a_known_package() -> None:
    stray = sorted(
        path_of(m) for m in modules()
        if m not in TOP_LEVEL_MODULES and (m if is_package(m) else m.rpartition(".")[0]) not in PACKAGES
    )
    assert not stray, (
        f"modules outside the layers (top level allows {sorted(TOP_LEVEL_MODULES)}, packages "
        f"{sorted(PACKAGES)}):\n" + "\n".join(stray)
    )


def test_every_layer_is_a_package() -> None:
    missing = sorted(p for p in PACKAGES if p not in modules() or not is_package(p))
    assert not missing, f"packages without an __init__.py: {missing}"


def test_no_python_outside_packages() -> None:
    """A directory holding .py files but no __init__.py would be skipped by the wheel's package finder."""
    orphans = sorted(
        p.parent.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py")
        if "__pycache__" not in p.parts and not (p.parent / "__init__.py").exists()
    )
    assert not orphans, f"directories with .py files but no __init__.py: {sorted(set(orphans))}"
