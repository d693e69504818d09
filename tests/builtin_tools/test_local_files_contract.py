"""LocalFileOperations passes the FileOperations contract suite (pi_core.testing.file_contract)."""

from __future__ import annotations

import pytest

from pi_builtin_tools.files.local import LocalFileOperations
from pi_core._backend_kit.operations import FileOperations
from pi_core.testing.file_contract import FileOperationsContract


class TestLocalFileOperationsContract(FileOperationsContract):
    @pytest.fixture
    def file_operations(self) -> FileOperations:
        return LocalFileOperations()
