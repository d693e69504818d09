"""One session's state: its context (``SessionContext``), its approvals and its audit log."""
