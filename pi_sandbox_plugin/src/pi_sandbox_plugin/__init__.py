"""pi's sandbox plugin: command and path policies, and bash/file backends elsewhere.

Loaded through the ``pi`` entry point ``sandbox``. Its hooks arrive with their own issue; until
then it is a registered plugin that implements no hook and changes nothing.
"""

from __future__ import annotations

__all__: list[str] = []
