#!/usr/bin/env bash
# Installs Debian's chromium, which test/dashboard drives headless through chromedp.
# Does nothing when chromium is already installed; needs root (apt-get) otherwise.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends chromium
command -v chromium >/dev/null
