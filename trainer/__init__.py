"""DragonFarm's training engine and the run-folder contract.

The contract modules (config, status, progress, runs, presets, api) use the
standard library only, so the desktop app can read and write run folders
without importing torch. The engine modules import torch lazily.
"""
__version__ = "0.1.0"
