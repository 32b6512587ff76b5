#!/usr/bin/env bash
# Installs the system data packages that loaders and their tests read (Fashion-MNIST IDX files
# from Debian's dataset-fashion-mnist). Needs root and apt; otherwise it says what to run.
set -u
if dpkg -s dataset-fashion-mnist >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist) >/dev/null 2>&1 \
    || echo "warning: could not install dataset-fashion-mnist; the Fashion-MNIST loader test will fail" >&2
else
  echo "note: run 'sudo apt-get install dataset-fashion-mnist' for the Fashion-MNIST loader" >&2
fi
exit 0
