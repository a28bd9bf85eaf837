"""The package's rules of layout, read from the code: one name per module, no import circles, no private name
imported across modules, packages without faces, every exception in `errors.py`, short module docstrings, and
an ARCHITECTURE.md and a README that match the code."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import spotlab

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "spotlab"
DOCSTRING_LINES = 40
README_BYTES = 12 * 1024


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name, from the files (not from what imports happen to load)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(node: ast.ImportFrom, module: str, path: Path) -> str | None:
    if node.level == 0:
        return node.module
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports() -> tuple[dict[str, set[str]], list[str]]:
    """Module -> the spotlab modules it imports (every import statement, also inside functions), and the
    private names imported from another module."""
    edges: dict[str, set[str]] = defaultdict(set)
    private = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                source = _resolve(node, module, path)
                if not source or not source.startswith("spotlab"):
                    continue
                for alias in node.names:
                    target = f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source
                    if target != module:
                        edges[module].add(target)
                        if alias.name.startswith("_") and not alias.name.startswith("__"):
                            private.append(f"{module}: {alias.name} from {source}")
            elif isinstance(node, ast.Import):
                edges[module].update(a.name for a in node.names if a.name.startswith("spotlab"))
    return edges, private


def test_every_module_imports_and_is_known_under_one_name():
    for info in pkgutil.walk_packages(spotlab.__path__, "spotlab."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    names: dict[int, list[str]] = defaultdict(list)
    for name, module in list(sys.modules.items()):
        if name == "spotlab" or name.startswith("spotlab."):
            names[id(module)].append(name)
            assert module.__name__ == name, f"sys.modules[{name!r}] is module {module.__name__}: an alias"
    assert not [n for n in names.values() if len(n) > 1]
    assert set(MODULES) - {"spotlab.__main__"} <= {n for ns in names.values() for n in ns}


def test_no_import_circles_and_no_private_names_across_modules():
    edges, private = _imports()
    assert not private, "private names imported across modules:\n" + "\n".join(private)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_the_circle_check_can_fail(monkeypatch, tmp_path):
    """The check above finds a circle when there is one (two modules that import each other)."""
    fake = {"spotlab.a": "from .b import x\n", "spotlab.b": "from .a import y\n"}
    paths = {}
    for name, text in fake.items():
        path = tmp_path / f"{name.split('.')[-1]}.py"
        path.write_text(text)
        paths[name] = path
    monkeypatch.setattr(sys.modules[__name__], "MODULES", paths)
    with pytest.raises(AssertionError, match="import circles"):
        test_no_import_circles_and_no_private_names_across_modules()


def test_packages_have_no_faces():
    """An `__init__.py` says what its package is; names are imported from the module that defines them."""
    for module, path in MODULES.items():
        if path.name != "__init__.py" or module == "spotlab":
            continue
        body = ast.parse(path.read_text()).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr), f"{path}: an __init__ holds its docstring only"


def test_every_exception_is_in_errors():
    for module, path in MODULES.items():
        if module == "spotlab.errors":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
                assert not (bases & {"Exception", "KeyboardInterrupt", "ValueError", "TypeError", "RuntimeError"}
                            or any(b.endswith("Error") for b in bases)), \
                    f"{path}: exception {node.name} belongs in spotlab/errors.py"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_docstrings_say_what_and_why_briefly(module):
    doc = ast.get_docstring(ast.parse(MODULES[module].read_text()), clean=False)
    assert doc, f"{module} has no docstring"
    assert len(doc.strip().splitlines()) <= DOCSTRING_LINES, f"{module}: measurements go to docs/, not the docstring"


def test_architecture_names_only_what_exists():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    paths = set(re.findall(r"`((?:spotlab|notebooks|tests|benchmarks|docs)/[\w/.<>-]*)`", text))
    for p in paths:
        if "<" in p:
            continue
        assert (ROOT / p.rstrip("/")).exists(), f"ARCHITECTURE.md names {p}, which does not exist"
    for dotted in set(re.findall(r"`(spotlab(?:\.\w+)+)`", text)):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            if ".".join(parts[:cut]) in MODULES:
                obj = importlib.import_module(".".join(parts[:cut]))
                for attr in parts[cut:]:
                    assert hasattr(obj, attr), f"ARCHITECTURE.md names {dotted}: no {attr}"
                    obj = getattr(obj, attr)
                break
        else:
            pytest.fail(f"ARCHITECTURE.md names {dotted}, which is no module")
    missing = [p for p in sorted(PACKAGE.iterdir()) if p.is_dir() and (p / "__init__.py").exists()
               and f"spotlab/{p.name}/" not in text]
    assert not missing, f"ARCHITECTURE.md says nothing of {missing}"


def test_readme_is_a_guide():
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) <= README_BYTES
    text = readme.decode()
    first = next(p for p in text.split("\n\n") if p.strip() and not p.startswith("#"))
    assert "spotlab" in first and "GPU" in first and "spot" in first
    assert "make reproduce" in text and "make test" in text
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), f"README.md links to {target}, which does not exist"
