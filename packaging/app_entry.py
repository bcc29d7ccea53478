"""The frozen app's entry point (PyInstaller runs this file as __main__).

Everything lives in dragonfarm_gui.app:main, including `--self-test`.
"""
import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    from dragonfarm_gui.app import main

    sys.exit(main())
