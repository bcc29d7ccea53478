#!/usr/bin/env bash
# Build the frozen app with PyInstaller and prove it works, on Linux (or a Mac):
#   bash packaging/build_and_selftest.sh
# Starts the bundle offscreen with --self-test: it opens the main window, checks
# its bundled files (resources, trainer sources, uv) and runs the device check
# (`python -m trainer check --json`) in the trainer's Python. DRAGONFARM_PYTHON
# points at a small test venv that reuses the developer venv's packages, so
# nothing is downloaded. Prints the bundle size and the times taken.
# Env: PYTHON (the build interpreter, default: .venv/bin/python or python3),
#      SKIP_BUILD=1 (test the existing bundle), SKIP_INSTALL=1 (no pip install).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
DIST=$ROOT/build/dist
WORK=$ROOT/build/pyinstaller
APP_DIR=$DIST/DragonFarm
APP=$APP_DIR/DragonFarm
export PYTHONDONTWRITEBYTECODE=1

t0=$(date +%s)
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  if [ "${SKIP_INSTALL:-0}" != 1 ]; then
    "$PYTHON" -m pip install --quiet -r packaging/requirements-build.txt
  fi
  rm -rf "$APP_DIR"
  "$PYTHON" -m PyInstaller --noconfirm --log-level WARN --distpath "$DIST" --workpath "$WORK" packaging/dragonfarm.spec
fi
t1=$(date +%s)
[ -x "$APP" ] || { echo "build_and_selftest: no app at $APP" >&2; exit 1; }

# The test trainer environment: a venv whose .pth points at the developer
# venv's packages (torch and friends). The trainer itself is not in it: the
# frozen app puts its bundled trainer sources on the child's PYTHONPATH.
TESTENV=$ROOT/build/selftest-venv
if [ ! -x "$TESTENV/bin/python" ]; then
  "$PYTHON" -m venv --without-pip "$TESTENV"
fi
SITE=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
TSITE=$("$TESTENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n' "$SITE" > "$TSITE/dragonfarm-selftest.pth"

SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
REPORT=$ROOT/build/selftest-report.json
rm -f "$REPORT"
set +e
# From a scratch folder, so `python -m trainer` cannot pick the checkout up from the working directory.
cd "$SCRATCH"
env -u PYTHONPATH -u VIRTUAL_ENV QT_QPA_PLATFORM=offscreen \
  DRAGONFARM_PYTHON="$TESTENV/bin/python" \
  DRAGONFARM_CONFIG_DIR="$SCRATCH/config" DRAGONFARM_RUNS_DIR="$SCRATCH/runs" \
  DRAGONFARM_ENV_DIR="$SCRATCH/env" DRAGONFARM_SELFTEST_REPORT="$REPORT" \
  DRAGONFARM_SELFTEST_SCREENSHOT="$ROOT/build/selftest-window.png" \
  OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
  timeout 600 "$APP" --self-test
rc=$?
set -e
cd "$ROOT"
t2=$(date +%s)

size_mb=$(du -sm "$APP_DIR" | cut -f1)
files=$(find "$APP_DIR" -type f | wc -l)
echo "bundle: $APP_DIR  ${size_mb} MB in ${files} files"
if find "$APP_DIR" -ipath '*torch*' -name '*.so*' | grep -q .; then
  echo "build_and_selftest: torch found inside the bundle" >&2; rc=1
fi
echo "time: build $((t1 - t0)) s, self-test $((t2 - t1)) s"
echo "self-test exit code: $rc (report: $REPORT)"
exit $rc
