"""The installation page, the README and examples/README.txt agree with the files they describe."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def setup_extras():
    """``extras_require`` of setup.py, read without running it."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "extras_require":
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py has no extras_require")


def install_page_extras():
    """The extras table of doc/install.rst: ``{extra: [package, ...]}``."""
    text = (ROOT / "doc" / "install.rst").read_text(encoding="utf-8")
    table = text[text.index("Optional extras:"):]
    rows = re.findall(r"^   \* - ``(\w+)``\n     - ([^\n]+)\n", table, re.M)
    assert rows, "no extras table in doc/install.rst"
    return {extra: [p.strip() for p in packages.split(",")] for extra, packages in rows}


def normalise(name):
    # Package names as pip compares them (PEP 503), without version specifiers.
    return re.sub(r"[-_.]+", "-", re.split(r"[<>=!~\[; ]", name)[0]).lower()


def test_install_page_lists_the_extras_of_setup_py():
    extras = setup_extras()
    page = install_page_extras()
    assert sorted(page) == sorted(extras)
    for extra, packages in extras.items():
        assert sorted(map(normalise, page[extra])) == sorted(map(normalise, packages)), extra


def test_the_test_extra_installs_what_the_tests_import():
    # Every module a test skips without (pytest.importorskip) comes with the
    # test extra, but pandas (large; sklearn's own estimator checks skip their
    # pandas cases too).
    installs = {"lbfgs": "pylbfgs", "distributed": "dask"}  # module: package
    extra = {normalise(p) for p in setup_extras()["test"]}
    for path in sorted(ROOT.glob("tests/**/*.py")):
        for module in re.findall(r"importorskip\(\s*[\"']([\w.]+)[\"']", path.read_text()):
            if module == "pandas" or module.startswith("sksparse_struct"):
                continue
            assert installs.get(module, normalise(module)) in extra, (
                f"{path.name} skips without {module!r}, which the test extra of setup.py "
                "does not install: add it there, or write the test without it")


EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.py"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("document", ["README.rst", "examples/README.txt"])
def test_every_example_is_named(document):
    text = (ROOT / document).read_text(encoding="utf-8")
    missing = [name for name in EXAMPLES if name not in text]
    assert not missing, f"{document} does not name {missing}"


def test_examples_readme_says_what_each_shows_and_how_long_it_takes():
    text = (ROOT / "examples" / "README.txt").read_text(encoding="utf-8")
    # One entry per example: its name on a line, then a paragraph that says
    # what it shows and how long it runs.
    for name in EXAMPLES:
        entry = re.search(rf"^{re.escape(name)}\n((?:    \S.*\n)+)", text, re.M)
        assert entry, f"examples/README.txt has no entry for {name}"
        assert re.search(r"\d+ s\b|seconds|minute", entry.group(1)), name
