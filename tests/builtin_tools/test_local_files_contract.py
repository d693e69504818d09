"""LocalFileOperations passes the FileOperations contract suite (pi_core.file_contract)."""

from __future__ import annotations

import pytest

from pi_builtin_tools.local_files import LocalFileOperations
from pi_core.file_contract import FileOperationsContract
from pi_core.operations import FileOperations


class TestLocalFileOperationsContract(FileOperationsContract):
    @pytest.fixture
    def file_operations(self) -> FileOperations:
        return LocalFileOperations()
