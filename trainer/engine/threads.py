"""How the trainer's CPU threads wait for work, set before torch loads.

OpenMP threads that finish their share of an operation spin, waiting for the
next one. On a computer busy with other work (two cores shared with a browser,
a second run), spinning threads take turns with the work itself and the many
small operations before the first step crawl; sleeping at once (passive
waiting) fixes that but made each training step 15-20% slower on an idle
2-core machine. A short spin, then sleep, keeps both: measured with
bench/first_step.py on the pirate example while two other processes kept both
cores busy, the first step came after 26.2 s with the defaults, 20.0 s with a
short spin and 13.5 s passive; on the idle machine a training step took the
same time with a short spin as with the defaults.

GOMP_SPINCOUNT is read by GNU OpenMP (torch on Linux), KMP_BLOCKTIME (in
milliseconds; the default is 200) by Intel's and LLVM's OpenMP (torch on
Windows and macOS). A value the person set is kept.
"""
from __future__ import annotations

import os

SHORT_SPIN = {"GOMP_SPINCOUNT": "10000", "KMP_BLOCKTIME": "1"}


def wait_briefly() -> None:
    """Set the short spin for this process, unless set already (takes effect only before torch loads)."""
    for name, value in SHORT_SPIN.items():
        os.environ.setdefault(name, value)
