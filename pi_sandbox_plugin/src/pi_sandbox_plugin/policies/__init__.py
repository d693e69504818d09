"""The policies: the command policy (``command_policy``) over every simple command the bash
parser finds (``bash_parser``), with the options each program's grammar knows (``grammars``); the
path policy (``path_policy``) and the ``FileOperations`` wrapper that enforces it
(``guarded_files``)."""
