"""An installed wheel carries the grammars and templates and finds them."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_wheel_contains_and_finds_grammars_and_templates(tmp_path):
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True)
    if build.returncode != 0:  # no hatchling in this environment: build in isolation
        build = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
            capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("roofreport-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "roofreport/_data/grammars/ncu.lark" in names
    assert "roofreport/py.typed" in names
    assert any(n.startswith("roofreport/_data/templates/") for n in names)
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True)
    probe = ("import roofreport.resources as r, roofreport.grammar as g; "
             "print(r.data_dir('grammars')); g.load('ncu'); print(r.template_dir())")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=tmp_path, env={"PYTHONPATH": str(target), "PATH": ""})
    assert out.returncode == 0, out.stderr
    assert str(target) in out.stdout.splitlines()[0]
    assert str(target) in out.stdout.splitlines()[1]
