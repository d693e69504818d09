"""The terminal approver of ``pi run`` and ``pi call``: a policy that asks a person (Claude Code
``ask``, Codex ``prompt``, ``pi_approve_tool_call``) asks here when stdin is a terminal.

The prompt goes to stderr (sanitised: the call's arguments cannot move the cursor or change the
terminal's colours), the answer is read from the terminal::

    pi: approval needed for bash {"command": "git push"}
      asked by: codex rule .codex/rules/default.rules:3
      reason: Pushing changes the remote.
    Allow? [y]es, [n]o, [a]lways for this session:

``y``/``yes`` allows, ``a``/``always`` allows and remembers the request's key for the session,
``n``/``no``, an empty line or the end of input denies; anything else asks again (three times,
then denies).
"""

from __future__ import annotations

from typing import IO, Any

import trio

from pi_core._cli.terminal import is_terminal, sanitise
from pi_core._session.approval import ApprovalRequest

ANSWERS = {
    "y": "allow",
    "yes": "allow",
    "a": "always",
    "always": "always",
    "n": "deny",
    "no": "deny",
}
"""What each typed answer means (case-insensitive, surrounding blanks ignored)."""

MAX_ANSWER_BYTES = 1024
"""The longest answer line read (the rest of a longer line is ignored)."""


class TerminalApprover:
    """Asks on ``stderr``, reads the answer from ``stdin`` (the terminal ``pi`` started on)."""

    def __init__(self, stdin: IO[bytes], stderr: IO[str]) -> None:
        self.stdin = stdin
        self.stderr = stderr

    def _write(self, text: str) -> None:
        self.stderr.write(text)
        self.stderr.flush()

    async def __call__(self, request: ApprovalRequest) -> str:
        self._write(
            f"pi: approval needed for {sanitise(request.describe())}\n"
            f"  asked by: {sanitise(request.source)}\n"
            f"  reason: {sanitise(request.reason)}\n"
        )
        for _ in range(3):
            self._write("Allow? [y]es, [n]o, [a]lways for this session: ")
            line = await trio.to_thread.run_sync(
                self.stdin.readline, MAX_ANSWER_BYTES, abandon_on_cancel=True
            )
            if not line:  # end of input
                self._write("\n")
                return "deny"
            word = line.decode("utf-8", "replace").strip().lower()
            if not word:
                return "deny"
            answer = ANSWERS.get(word)
            if answer is not None:
                return answer
        return "deny"


def terminal_approver(stdin: IO[bytes] | None, stderr: IO[str]) -> Any:
    """A :class:`TerminalApprover` when ``stdin`` is a terminal, else ``None`` (then the
    session's other approvers, or none, decide)."""
    if stdin is None or not is_terminal(stdin):
        return None
    return TerminalApprover(stdin, stderr)


__all__ = ["ANSWERS", "TerminalApprover", "terminal_approver"]
