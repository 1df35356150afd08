#!/usr/bin/env bash
# Every string the window translates is in translations/checkpoint-studio_zh_CN.ts: lupdate runs
# over app/ and model/layout/ (the families' words, layout/words.h; as the update_translations
# target does) into a copy of the committed file and must
# find nothing new and nothing obsolete. tst_gui's chineseTranslationIsComplete then proves each
# entry is translated. Usage: tests/translations_check.sh LUPDATE SOURCE_DIR
set -euo pipefail
lupdate=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src/translations/checkpoint-studio_zh_CN.ts" "$tmp/zh_CN.ts"
out=$("$lupdate" -no-obsolete "$src"/app/*.cpp "$src"/app/*.h "$src"/model/layout/*.cpp "$src"/model/layout/*.h \
  "$src"/model/layout/*/*.cpp -ts "$tmp/zh_CN.ts" 2>&1)
echo "$out"
new=$(sed -n 's/.*(\([0-9]*\) new and.*/\1/p' <<<"$out")
obsolete=$(sed -n 's/.*Removed \([0-9]*\) obsolete.*/\1/p' <<<"$out")
if [[ ${new:-x} != 0 || ${obsolete:-0} != 0 ]]; then
  echo "translations out of date (${new:-?} new, ${obsolete:-0} obsolete): run" \
       "cmake --build build/ci --target update_translations && python3 tools/i18n/fill_zh_CN.py"
  exit 1
fi
