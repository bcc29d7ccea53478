#!/usr/bin/env bash
# OPT-IN (downloads about 1 GB): the real first-use setup, end to end, into a
# temporary folder, with the CPU torch build; then the device check runs in the
# new environment. Not part of the test suite.
#   bash packaging/selftest_real_setup.sh
# Env: DRAGONFARM_TORCH_INDEX  default "cpu"; "" for the default index; a URL;
#                              or a local folder of wheels (offline machines)
#      DRAGONFARM_BASE_PYTHON  use this Python instead of downloading one with uv
#      DRAGONFARM_UV           the uv to use (default: uv on PATH / in the venv)
#      KEEP=1                  keep the temporary folder afterwards
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
export DRAGONFARM_TORCH_INDEX=${DRAGONFARM_TORCH_INDEX-cpu}
TMP=$(mktemp -d)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$TMP"' EXIT
ENV_DIR=$TMP/DragonFarm/env
t0=$(date +%s)
env -u PYTHONPATH -u VIRTUAL_ENV "$PYTHON" -m dragonfarm_gui.envsetup --env-dir "$ENV_DIR"
t1=$(date +%s)
env -u PYTHONPATH DRAGONFARM_ENV_DIR="$ENV_DIR" "$PYTHON" - <<'PY'
import json
from trainer import launch
marker = launch.read_env_marker()
assert launch.managed_env_ready(), "the environment is not marked complete"
print("marker:", json.dumps(marker["versions"]))
PY
ENV_PY=$("$PYTHON" -c "from trainer import launch; from pathlib import Path; print(launch.managed_env_python(Path('$ENV_DIR')))")
# The check runs from outside the checkout, so only the environment's own trainer copy can answer.
(cd "$TMP" && env -u PYTHONPATH "$ENV_PY" -m trainer check --json)
echo "environment: $(du -sm "$ENV_DIR" | cut -f1) MB; setup took $((t1 - t0)) s"
