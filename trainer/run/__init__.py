"""The run-folder contract: what a run folder holds and how to read and write it.

Standard library (with platformdirs and psutil) only, so the desktop app can
import it without torch. `files` names every run file; `config` declares every setting
(with `declare`'s setting() helper) and `training_presets` the beginner presets
of them; `status`, `progress`, `checks` and `reader` read what the trainer writes
and say what is damaged; `lock` keeps one trainer per folder; `procs` finds and
stops processes; `settings`, `presets` (models), `launch`, `share` and
`resources` are the app-wide pieces the app and the command line share.
"""
