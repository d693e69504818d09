"""The ``pi policy`` command (``commands``) and what ``pi policy check`` prints
(``policy_check``)."""
