"""Checkpoints from Python (docs/how-to/undo.md): an agent session writes a file, its
checkpoints are listed, the write is rewound and the rewind undone; then the same record is read
from outside the session. ``python docs/snippets/undo_api.py DIR`` runs it in DIR."""

from __future__ import annotations

import sys

import trio

from pi_core import (
    AssistantMessage,
    ToolCall,
    build_session,
    list_checkpoints,
    make_plugin_manager,
    rewind,
)
from pi_core.providers import ScriptedProvider


async def main(workspace: str) -> None:
    provider = ScriptedProvider(  # a model that writes one file
        [
            AssistantMessage(
                content=[
                    ToolCall(
                        id="c1", name="write", arguments={"path": "notes.md", "content": "hi\n"}
                    )
                ],
                stop_reason="toolUse",
            )
        ]
    )
    session = build_session(make_plugin_manager(), workspace, host="agent", checkpoints=True)
    assert session.checkpoints is not None
    async with session.agent(provider) as agent:
        await agent.prompt("write the notes")
        for checkpoint in await session.checkpoints.list():
            print(checkpoint.call_id, [change.label() for change in checkpoint.changes])
        result = await session.checkpoints.rewind(to="c1")
        print("rewound:", [change.label() for change in result.changes])
        await session.checkpoints.rewind(undo=True)

    # later, from any process: the latest session recorded in the folder
    info, checkpoints = list_checkpoints(workspace)
    print(info.host, [c.call_id for c in checkpoints])
    result = await rewind(workspace, to="c1", dry_run=True)
    print("would:", [change.label() for change in result.changes])


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
