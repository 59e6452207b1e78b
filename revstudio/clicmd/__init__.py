"""One module per ``revstudio`` subcommand: ``add_arguments(parser)`` and ``run(args) -> int``."""
