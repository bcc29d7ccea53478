import os
import sys

# Before torch loads: ops that Apple's GPU lacks fall back to the CPU.
os.environ.setdefault("PYTORCH_ENABLE_MPS_FALLBACK", "1")

from trainer.cli import main  # noqa: E402

sys.exit(main())
