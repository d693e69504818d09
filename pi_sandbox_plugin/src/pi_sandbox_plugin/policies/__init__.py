"""The policies: the command policy (``command_policy``) over every simple command the bash
parser finds (``bash_parser``), with the options each program's grammar knows (``grammars``) and
the text bash evaluates again judged as code (``shell_eval``); the path policy
(``path_policy``), files judged by identity (``file_identity``) and the ``FileOperations``
wrapper that enforces them (``guarded_files``)."""
