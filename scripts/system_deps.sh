#!/usr/bin/env bash
# Debian packages the test suite uses: Chromium for the real-browser test, R with the survey
# package to re-check the design-based estimates against R (the stored R reference values are checked
# either way), and Java 17 for Spark's local-mode tests (PySpark runs Spark in a JVM).
set -euo pipefail
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
if ! command -v Rscript >/dev/null 2>&1 || ! Rscript -e 'library(survey)' >/dev/null 2>&1; then
  need+=(r-base-core r-cran-survey)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "Installing Debian packages: ${need[*]} ..."
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
