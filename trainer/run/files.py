"""Every name in a run folder, in one place (docs/run-folder.md says what each holds).

Paths are relative to the run folder and use "/" (join with Path / name).
Standard library only: the app, the CLI and the engine all take names from here.
"""
from __future__ import annotations

# Written by the app or the CLI
CONFIG_FILE = "config.json"
DATA_DIR = "data"
TRAIN_DATA = "data/train.jsonl"
EVAL_DATA = "data/eval.jsonl"
IMPORT_FILE = "data/import.json"
CANCEL_FILE = "cancel.request"

# Written by the trainer
STATUS_FILE = "status.json"
PROGRESS_FILE = "progress.jsonl"
EVAL_FILE = "eval.json"            # held-out loss before and after (not the data file: that is EVAL_DATA)
SAMPLES_FILE = "samples.json"
ADAPTER_DIR = "adapter"            # the adapter at the last step
ADAPTER_BEST_DIR = "adapter-best"  # the adapter at the best held-out point, when that is not the last
CHECKPOINTS_DIR = "checkpoints"
# One complete checkpoints/step-N/ holds exactly these (trainer/engine/checkpoint.py's COMPLETE; safetensors + JSON)
CHECKPOINT_FILES = ("adapter_model.safetensors", "adapter_config.json", "training_state.json",
                    "training_state.safetensors", "trainer_state.json")
PREVIOUS_DIR = "previous"          # a restarted run's old results, until its first new checkpoint
LOGS_DIR = "logs"
LOG_FILE = "logs/trainer.log"
LAUNCHER_LOG = "logs/launcher.log"  # the detached start's own output
LOCK_FILE = "trainer.lock"          # OS-locked for the one trainer's life (trainer/run/lock.py); never packed

# Written by merge and export
MERGED_DIR = "merged"
MERGE_INFO = "dragonfarm_merge.json"   # inside merged/
EXPORT_DIR = "export"
EXPORT_LOG = "logs/export.log"

# A packed run (.zip): the manifest at the top of the archive's run folder
PACK_MANIFEST = "dragonfarm-pack.json"
