#!/usr/bin/env bash
# The end-to-end tests drive Debian's Chromium through Playwright (Playwright's own browser
# download cannot work offline). Install it when missing and we are allowed to.
set -euo pipefail
if [ -x "${MDTBOARD_CHROMIUM:-/usr/bin/chromium}" ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "Installing Chromium for the end-to-end tests (apt-get install -y chromium)..."
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  exit 0
fi
cat >&2 <<'MSG'
The end-to-end tests need Chromium at /usr/bin/chromium.
Install it as root:   apt-get install -y chromium
(or set MDTBOARD_CHROMIUM to another Chromium/Chrome binary).
MSG
exit 1
