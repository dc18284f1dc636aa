"""The worked example of doc/command_line.rst, run as the page shows it.

The commands between ``.. begin-tested-example`` and ``.. end-tested-example``
run in a fresh folder, one after the other, through the installed console
script (or ``python -m sksparse_struct`` when it is not on the PATH). Each
must succeed, and print what the page shows: the same lines, except that
numbers (scores, seconds) may differ, since the kernels compile for the host
CPU and the last bits of a fit differ between machines.
"""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sksparse_struct.datasets import read_conllu

PAGE = Path(__file__).resolve().parents[1] / "doc" / "command_line.rst"
NUMBER = re.compile(r"\d+(?:\.\d+)?")


def example():
    """``[(command, [expected output lines])]`` of the page's tested example."""
    text = PAGE.read_text(encoding="utf-8")
    block = text.split(".. begin-tested-example", 1)[1].split(".. end-tested-example", 1)[0]
    steps = []
    for line in block.splitlines():
        line = line.strip()
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif line and steps:
            steps[-1][1].append(line)
    return steps


def test_the_page_has_the_example():
    commands = [command.split()[1] for command, _ in example()]
    assert commands == ["samples", "train", "predict", "evaluate"]


def _shape(line):
    """A line with its numbers blanked out."""
    return NUMBER.sub("#", line)


def test_worked_example(tmp_path):
    script = shutil.which("sksparse-struct")
    prefix = [script] if script else [sys.executable, "-m", "sksparse_struct"]
    for command, expected in example():
        argv = shlex.split(command)
        assert argv[0] == "sksparse-struct"
        done = subprocess.run(prefix + argv[1:], cwd=tmp_path, capture_output=True,
                              text=True, timeout=900)
        assert done.returncode == 0, (command, done.stderr)
        shown = done.stdout.splitlines()
        assert [_shape(line) for line in shown] == [_shape(line) for line in expected], command
    # The raw text became CoNLL-U: sentences with their text, tagged and parsed.
    X, heads = read_conllu(tmp_path / "ewt-test.conllu", return_metadata=False)
    lines = (tmp_path / "ewt-test.conllu").read_text(encoding="utf-8").splitlines()
    texts = [line for line in lines if line.startswith("# text = ")]
    assert len(texts) == len(X) > 50
    assert all(token["upos"] != "_" and token["xpos"] != "_" for s in X for token in s)
    raw = (tmp_path / "data" / "ewt-test.txt").read_text(encoding="utf-8")
    assert "".join(t[len("# text = "):] for t in texts).replace(" ", "") == \
        raw.replace(" ", "").replace("\n", "")


@pytest.mark.parametrize("line, shape", [("UAS 72.08", "UAS #"), ("trained in 4.1 s",
                                                                 "trained in # s")])
def test_shape(line, shape):
    assert _shape(line) == shape
