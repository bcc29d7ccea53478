#!/usr/bin/env bash
# Sign build/dist/DragonFarm.app with the Developer ID certificate, hardened
# runtime and our entitlements - only when the secrets are present:
#   MACOS_CERT_P12_BASE64, MACOS_CERT_PASSWORD  (the Developer ID Application certificate)
#   MACOS_SIGN_IDENTITY                         (e.g. "Developer ID Application: Name (TEAMID)")
# Without them it prints that signing was skipped and exits 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
APP=build/dist/DragonFarm.app
if [ -z "${MACOS_CERT_P12_BASE64:-}" ] || [ -z "${MACOS_SIGN_IDENTITY:-}" ]; then
  echo "sign_app: signing skipped (no certificate secrets)"
  exit 0
fi
KEYCHAIN=$RUNNER_TEMP/dragonfarm-signing.keychain-db
KEYCHAIN_PASSWORD=$(openssl rand -hex 16)
echo "$MACOS_CERT_P12_BASE64" | base64 --decode > "$RUNNER_TEMP/cert.p12"
security create-keychain -p "$KEYCHAIN_PASSWORD" "$KEYCHAIN"
security set-keychain-settings -lut 21600 "$KEYCHAIN"
security unlock-keychain -p "$KEYCHAIN_PASSWORD" "$KEYCHAIN"
security import "$RUNNER_TEMP/cert.p12" -P "${MACOS_CERT_PASSWORD:-}" -A -t cert -f pkcs12 -k "$KEYCHAIN"
security set-key-partition-list -S apple-tool:,apple: -k "$KEYCHAIN_PASSWORD" "$KEYCHAIN"
security list-keychains -d user -s "$KEYCHAIN" $(security list-keychains -d user | tr -d '"')
rm -f "$RUNNER_TEMP/cert.p12"
ENT=packaging/macos/entitlements.plist
# Inside out: every Mach-O file (libraries, Qt plugins, the bundled uv), then the app.
find "$APP/Contents" -type f \( -perm -u+x -o -name '*.dylib' -o -name '*.so' \) -print0 |
  while IFS= read -r -d '' file; do
    if file "$file" | grep -q 'Mach-O'; then
      codesign --force --timestamp --options runtime --entitlements "$ENT" --sign "$MACOS_SIGN_IDENTITY" "$file"
    fi
  done
codesign --force --timestamp --options runtime --entitlements "$ENT" --sign "$MACOS_SIGN_IDENTITY" "$APP"
codesign --verify --deep --strict --verbose=2 "$APP"
echo "sign_app: signed $APP"
