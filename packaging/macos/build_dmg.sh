#!/usr/bin/env bash
# Make the .dmg from the PyInstaller app: build/dist/DragonFarm.app ->
# build/installer/DragonFarm-<version>-macos-arm64.dmg (the app and a link to
# /Applications, so a person drags one onto the other). Signs and notarizes the
# .dmg only when the secrets are present (see sign_and_notarize.sh).
#   bash packaging/macos/build_dmg.sh [version]
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=${1:-$(python3 -c 'import plistlib; print(plistlib.load(open("packaging/macos/Info.plist","rb"))["CFBundleShortVersionString"])')}
APP=build/dist/DragonFarm.app
OUT=build/installer/DragonFarm-${VERSION}-macos-arm64.dmg
[ -d "$APP" ] || { echo "build_dmg: $APP is missing; run pyinstaller packaging/dragonfarm.spec first" >&2; exit 1; }
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
cp -R "$APP" "$STAGE/"
ln -s /Applications "$STAGE/Applications"
mkdir -p build/installer
rm -f "$OUT"
hdiutil create -volname "DragonFarm" -srcfolder "$STAGE" -fs HFS+ -format UDZO -ov "$OUT"
if [ -n "${MACOS_SIGN_IDENTITY:-}" ]; then
  codesign --force --timestamp --sign "$MACOS_SIGN_IDENTITY" "$OUT"
fi
if [ -n "${APPLE_ID:-}" ] && [ -n "${APPLE_TEAM_ID:-}" ] && [ -n "${APPLE_APP_PASSWORD:-}" ] && [ -n "${MACOS_SIGN_IDENTITY:-}" ]; then
  xcrun notarytool submit "$OUT" --apple-id "$APPLE_ID" --team-id "$APPLE_TEAM_ID" \
    --password "$APPLE_APP_PASSWORD" --wait
  xcrun stapler staple "$OUT"
else
  echo "build_dmg: notarization skipped (no Apple ID secrets)"
fi
echo "dmg: $OUT ($(du -h "$OUT" | cut -f1))"
