"""The shell tools' room: bash and powershell, their output and its full-output files."""
