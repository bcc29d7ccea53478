"""The Python API: read (and start) runs without importing torch.

    from trainer.api import Run, list_runs, verdict
    run = Run("runs/my-run")
    run.state, run.config.model, run.progress()[-1]["loss"], run.eval()

A stable facade over trainer.run.reader, which the app and the CLI use.
"""
from trainer.run.reader import ConfigError, Run, is_run_dir, list_runs, perplexity, verdict

__all__ = ["Run", "list_runs", "verdict", "perplexity", "is_run_dir", "ConfigError"]
