#!/usr/bin/env bash
# Debian's Chromium for the HTML report's browser tests (tests/e2e/test_html_report_browser.py).
# Under CI=true it must be there, so a failed install stops the job; as root elsewhere it
# is installed if missing; otherwise nothing is installed and the browser tests skip.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "${CI:-}" != "true" ] && [ "$(id -u)" != "0" ]; then
    echo "browser.sh: no chromium (apt-get install chromium); the browser tests will skip" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; then
    exit 0
fi
if [ "${CI:-}" = "true" ]; then
    echo "browser.sh: could not install chromium, which CI needs for the browser tests" >&2
    exit 1
fi
echo "browser.sh: could not install chromium; the browser tests will skip" >&2
