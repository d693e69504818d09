"""The ``sandbox`` plugin. Without a ``[sandbox]`` section it changes nothing; it implements no
hook yet (policies and backends arrive with their own issue)."""

from __future__ import annotations
