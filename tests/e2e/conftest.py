"""Fixtures of the end-to-end tests that build virtual environments."""

from __future__ import annotations

import os
import shutil

import pytest


@pytest.fixture(scope="session")
def uv() -> str:
    """The ``uv`` that runs the tests (skip without it, fail under ``CI=true``)."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found is None:  # pi's tests run with uv (`uv run pytest`): CI always has it
        if os.environ.get("CI") == "true":
            pytest.fail("uv is not installed, and CI must have it")
        pytest.skip("uv is not installed")
    return found
