#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Brings translations/tessera_*.ts up to date with the sources (Qt Linguist's lupdate): strings
# added since are added unfinished, strings gone are marked vanished. Translate the unfinished
# ones (Qt Linguist, or any editor), then rebuild: ui.test_translations fails until every shipped
# language has every string.
#   scripts/update-translations.sh            all languages
#   scripts/update-translations.sh fr         adds a language (translations/tessera_fr.ts)
set -euo pipefail
cd "$(dirname "$0")/.."
lupdate=$(command -v lupdate || echo /usr/lib/qt6/bin/lupdate)
files=(translations/tessera_*.ts)
[[ $# -gt 0 ]] && files+=("translations/tessera_$1.ts")
# The app's user-visible strings live in ui/, core/manager/ and app/tessera/; -I lets lupdate
# see each class's namespace (its context must be the runtime class name).
"$lupdate" -locations none -no-obsolete -I core -I ui ui core/manager app/tessera -ts "${files[@]}"
