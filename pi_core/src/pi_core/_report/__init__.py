"""What a session did, for a person: the HTML session report (``pi export``, ``--report FILE``)
and OpenTelemetry spans of every tool call (``[telemetry]``).

Floor: above ``_plugins`` (telemetry observes hook calls), below ``_cli``. Nothing here is
imported at start-up: the commands import it when asked, and :mod:`pi_core._report.telemetry`
imports ``opentelemetry`` only when telemetry is on.
"""
