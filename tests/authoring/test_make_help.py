"""`make help` and plain `make` list every target of the Makefile, one line each, from its `## target:` lines."""
import re
import subprocess

from notebook_tools import ROOT

TARGET = re.compile(r"^([a-z][a-z-]*):", re.M)


def _listed(*args):
    out = subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[1]: line for line in out.splitlines()}


def test_help_lists_every_target_once_with_what_it_does():
    targets = set(TARGET.findall((ROOT / "Makefile").read_text()))
    listed = _listed("help")
    assert set(listed) == targets
    assert all(len(line.split(None, 2)) == 3 for line in listed.values())       # "make <target> <what it does>"


def test_plain_make_is_help():
    assert _listed() == _listed("help")
