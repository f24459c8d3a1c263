#!/usr/bin/env bash
# The PDF report tests rasterise page 1 with pdftoppm (poppler-utils), as a reader's viewer
# would. Install it when missing and we are allowed to.
set -euo pipefail
if command -v pdftoppm >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "Installing poppler-utils for the PDF report tests (apt-get install -y poppler-utils)..."
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq poppler-utils >/dev/null
  exit 0
fi
cat >&2 <<'MSG'
The PDF report tests need pdftoppm (poppler-utils).
Install it as root:   apt-get install -y poppler-utils
MSG
exit 1
