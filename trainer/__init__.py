"""DragonFarm's trainer: the run-folder contract, the data import, the engine,
what to do with a result, and the `dragonfarm` command line.

    run/         the run-folder contract (standard library only; the app uses it)
    dataimport/  files people have -> chats, with located problems
    engine/      encoding, batching, the training loop, evaluation, checkpoints
    results/     generate, chat server, merge, export
    cli/         `dragonfarm` sub-commands
    resources/   the model preset table, icons, example data (package data)

Dependencies flow one way: cli -> results -> engine -> run (import-linter checks it).
"""
__version__ = "0.1.0"
