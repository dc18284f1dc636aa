"""The package's layers: who may import whom, and no private names across packages.

Data flows down: estimators -> losses / learners -> inference -> structures
-> mappings -> utils (doc/developers.rst). Reading the import statements of
every module (including imports inside functions) keeps it that way.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sksparse_struct"

# What each subpackage may import from the others.
ALLOWED = {
    "utils": set(),
    "mappings": {"utils"},
    "structures": {"mappings", "utils"},
    "inference": {"structures", "mappings", "utils"},
    "losses": {"inference", "structures", "mappings", "utils"},
    "learners": {"utils"},
    "datasets": {"utils"},
    "metrics": {"utils"},
    "feature_extraction": {"utils"},
}
_BELOW_ESTIMATORS = {"feature_extraction", "losses", "learners", "inference", "structures",
                     "mappings", "metrics", "datasets", "utils"}
ESTIMATORS = ("linear_model", "tagging", "parsing", "argument_mining")
for _name in ESTIMATORS:
    ALLOWED[_name] = set(_BELOW_ESTIMATORS)


def _imports():
    """``(module path, source package, target package, [names])`` of every relative import."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if len(rel.parts) < 2:
            continue  # top-level modules (the public API, the quickstart) see everything
        source = rel.parts[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or node.level == 0:
                continue
            here = list(rel.parts[:-1])
            base = here[: len(here) - (node.level - 1)]
            target_path = base + (node.module.split(".") if node.module else [])
            if not target_path:
                continue
            target = target_path[0]
            if target != source:
                out.append((str(rel), source, target_path, [a.name for a in node.names]))
    return out


IMPORTS = _imports()


def test_the_scan_finds_the_imports():
    assert len(IMPORTS) > 50
    assert any(src == "parsing" and path[0] == "learners" for _, src, path, _ in IMPORTS)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_packages_import_only_the_layers_below(package):
    wrong = [(module, ".".join(path)) for module, src, path, _ in IMPORTS
             if src == package and path[0] not in ALLOWED[package]]
    assert not wrong, f"{package} imports from packages it may not: {wrong}"


def test_no_private_names_across_packages():
    # Kernel modules (_*_fast.py) are imported across packages for their
    # kernels, and utils' modules are the package's shared tools; but a name
    # with a leading underscore stays inside its package.
    wrong = [(module, ".".join(path), name) for module, _, path, names in IMPORTS
             for name in names if name.startswith("_")]
    assert not wrong, f"private names imported across packages: {wrong}"


def test_every_package_is_placed():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(ALLOWED)
