"""The code checks of the style guide, run with the tests so that a change cannot land without them:
ruff (lint and format) on the whole repository, mypy on the engine's four layers (`[tool.mypy]`).

The Airflow faces (hooks, operators, the plugin, the virtual clusters) are not type-checked: Airflow's
and the kubernetes client's stubs are partial and would bury real findings in noise.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("check", [["ruff", "check", "."], ["ruff", "format", "--check", "."]], ids=["lint", "format"])
def test_ruff_finds_nothing(check: list[str]) -> None:
    result = _run(*check)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_engine_layers_type_check() -> None:
    result = _run("mypy")  # the files and settings of [tool.mypy] in pyproject.toml
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout
