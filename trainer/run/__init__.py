"""The run-folder contract: what a run folder holds and how to read and write it.

Standard library (with platformdirs and psutil) only, so the desktop app can
import it without torch. `files` names every run file; `config` declares every setting;
`status`, `progress` and `reader` read what the trainer writes; `settings`,
`presets`, `launch` and `share` are the app-wide pieces the app and the
command line share.
"""
