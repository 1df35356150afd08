#!/usr/bin/env bash
# Builds the package from an already-configured build folder and proves it installs like a desktop
# application: installer/check-package.sh BUILD_DIR (test.sh: installer/check-package.sh build/ci).
#   1. its tools (apt-get, only what is missing), then `cmake --build BUILD_DIR --target package`
#   2. what the .deb holds: files, desktop entry (desktop-file-validate), AppStream metainfo
#      (appstreamcli validate), zh_CN for every translatable field, screenshots, MIME types, man
#      pages, computed Depends (no CUDA library, every NEEDED library from a package in Depends)
#   3. lintian: errors fail, warnings are printed
#   4. the .tar.gz runs from wherever it is unpacked
#   5. `apt-get install ./checkpoint-studio_*.deb` on this machine, then from /usr/bin in a clean
#      environment: ckpt --version, ckpt inspect, checkpoint-studio --screenshot (offscreen), man,
#      bash completion, MIME detection; then `apt-get purge` and nothing may be left behind.
# Why this machine and not a debootstrap chroot: installer/README.md. Ends with one line
# "package: N passed, M failed"; exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
src=$PWD
[ $# -eq 1 ] || { echo "usage: installer/check-package.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || { echo "check-package: no build folder $1" >&2; exit 2; }
[ -f "$build/CMakeCache.txt" ] || { echo "check-package: $1 is not a configured CMake build folder" >&2; exit 2; }

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
APT=(env DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 -y -qq)
passed=0 failed=0
t0=$SECONDS
ok() { passed=$((passed + 1)); echo "  ok    $*"; }
bad() { failed=$((failed + 1)); echo "  FAIL  $*"; }
# check NAME COMMAND...: one pass or one fail; the command's output is shown only when it fails
check() {
  local name=$1 out; shift
  if out=$("$@" 2>&1); then ok "$name"; else bad "$name"; printf '%s\n' "$out" | sed 's/^/        /' | tail -n 30; fi
}
section() { echo "== package: $* ($((SECONDS - t0)) s)"; }
finish() {
  echo "package: $passed passed, $failed failed"
  [ "$failed" -eq 0 ] && exit 0
  exit 1
}

section "tools"
need=(dpkg-dev fakeroot file help2man lintian desktop-file-utils appstream shared-mime-info
      libglib2.0-bin bash-completion man-db binutils)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "check-package: installing ${missing[*]}"
  "${APT[@]}" update && "${APT[@]}" install --no-install-recommends "${missing[@]}" >/dev/null \
    || { bad "install tools: ${missing[*]}"; finish; }
fi

section "build the package target of $1"
gui=yes
grep -q '^CKPT_BUILD_GUI:BOOL=OFF' "$build/CMakeCache.txt" && gui=no
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
# Configure again: a folder configured before help2man was installed picks it up now.
rm -f "$build"/checkpoint-studio_*.deb "$build"/checkpoint-studio-*.tar.gz
if cmake -S "$src" -B "$build" >"$build/check-package-configure.log" 2>&1 &&
   cmake --build "$build" --target package >"$build/check-package-build.log" 2>&1; then
  ok "cmake --build $1 --target package"
else
  bad "cmake --build $1 --target package (logs: $build/check-package-*.log)"
  tail -n 30 "$build/check-package-build.log" "$build/check-package-configure.log" 2>/dev/null | sed 's/^/        /'
  finish
fi
debs=("$build"/checkpoint-studio_"$version"-*_*.deb)
tgzs=("$build"/checkpoint-studio-"$version"-linux-*.tar.gz)
if [ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] && [ ${#tgzs[@]} -eq 1 ] && [ -f "${tgzs[0]}" ]; then
  ok "one .deb and one .tar.gz: $(basename "${debs[0]}") $(basename "${tgzs[0]}")"
else
  bad "expected one .deb and one .tar.gz of version $version in $1"; finish
fi
deb=${debs[0]} tgz=${tgzs[0]}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/deb
dpkg-deb -x "$deb" "$root"

section "contents of $(basename "$deb")"
expect=(usr/bin/ckpt usr/share/man/man1/ckpt.1.gz usr/share/bash-completion/completions/ckpt
        usr/share/doc/checkpoint-studio/copyright usr/share/doc/checkpoint-studio/changelog.Debian.gz
        usr/share/doc/checkpoint-studio/README.md usr/share/doc/checkpoint-studio/docs/cli.md
        usr/share/checkpoint-studio/examples/deepspeed-zero2-bf16-w2/latest)
if [ $gui = yes ]; then
  expect+=(usr/bin/checkpoint-studio usr/share/man/man1/checkpoint-studio.1.gz
           usr/share/applications/checkpoint-studio.desktop usr/share/mime/packages/checkpoint-studio.xml
           usr/share/icons/hicolor/scalable/apps/checkpoint-studio.svg)
  for s in 16 32 48 64 128 256; do expect+=("usr/share/icons/hicolor/${s}x$s/apps/checkpoint-studio.png"); done
fi
absent=()
for f in "${expect[@]}"; do [ -s "$root/$f" ] || absent+=("$f"); done
if [ ${#absent[@]} -eq 0 ]; then ok "${#expect[@]} expected files"; else bad "missing: ${absent[*]}"; fi
check "every path under /usr, no build-tree or /usr/local path" \
  bash -c "! dpkg-deb -c '$deb' | awk '{print \$6}' | grep -v '^\./usr/' | grep -v '^\./\$'"
check "binaries stripped and not linked against CUDA libraries" bash -c "
  for b in '$root'/usr/bin/*; do
    file -b \"\$b\" | grep -q 'not stripped' && { echo \"\$b not stripped\"; exit 1; }
    readelf -d \"\$b\" | grep -E 'NEEDED.*(cuda|cudart|nvidia)' && exit 1
    readelf -d \"\$b\" | grep -E '(RPATH|RUNPATH)' && exit 1
  done; true"
depends=$(dpkg-deb -f "$deb" Depends)
check "Depends computed by dpkg-shlibdeps: $depends" bash -c "[[ '$depends' == *libc6* && '$depends' == *libstdc++6* ]]"
# Every library a binary needs comes from a Debian package that Depends names: nothing that only
# this build machine has (a -dev package's files, /usr/local, a CUDA toolkit).
check "every NEEDED library is provided by a package in Depends" bash -c '
  deps=$(printf "%s" "$1" | tr "," "\n" | sed "s/^ *//; s/[ (].*//")
  for b in "$2"/usr/bin/*; do
    for lib in $(readelf -d "$b" | sed -n "s/.*NEEDED.*\[\(.*\)\]/\1/p"); do
      path=$(ldconfig -p | awk -v l="$lib" "\$1 == l && /x86-64|x86_64|64bit/ {print \$NF; exit}")
      [ -z "$path" ] && path=$(ldconfig -p | awk -v l="$lib" "\$1 == l {print \$NF; exit}")
      [ -n "$path" ] || { echo "$b: $lib not found"; exit 1; }
      real=$(readlink -f "$path")
      pkg=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$real" 2>/dev/null) || { echo "$b: $lib ($path) belongs to no package"; exit 1; }
      pkg=${pkg%%:*}
      grep -qx "$pkg" <<<"$deps" || { echo "$b: $lib comes from $pkg, which Depends does not name"; exit 1; }
    done
  done' _ "$depends" "$root"
check "version: package $version, ckpt --version, checkpoint-studio --version agree" bash -c "
  [ \"\$('$build/cli/ckpt' --version | head -n 1)\" = 'ckpt $version' ] || { echo \"ckpt says \$('$build/cli/ckpt' --version | head -n 1)\"; exit 1; }
  [ $gui = no ] || [ \"\$(QT_QPA_PLATFORM=offscreen '$build/app/checkpoint-studio' --version 2>/dev/null)\" = 'checkpoint-studio $version' ]"
check "man pages format without warnings" bash -c "
  for m in '$root'/usr/share/man/man1/*.1.gz; do
    err=\$(MANWIDTH=80 man --warnings -l \"\$m\" 2>&1 >/dev/null); [ -z \"\$err\" ] || { echo \"\$m: \$err\"; exit 1; }
    zcat \"\$m\" | grep -q '^\.SH OPTIONS' || { echo \"\$m has no OPTIONS section\"; exit 1; }
  done"
check "ckpt.1 documents every subcommand" bash -c "
  for sub in \$('$build/cli/ckpt' --help | sed -n '/^[Ss][Uu][Bb][Cc][Oo][Mm][Mm][Aa][Nn][Dd][Ss]:/,\$s/^  \([a-z][a-z-]*\)  .*/\1/p'); do
    zcat '$root/usr/share/man/man1/ckpt.1.gz' | grep -q \"ckpt \$sub \" || { echo \"no ckpt \$sub\"; exit 1; }
  done"
check "copyright is machine-readable (DEP-5)" grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
  "$root/usr/share/doc/checkpoint-studio/copyright"

if [ $gui = yes ]; then
  section "desktop entry, AppStream metainfo, MIME types, icons"
  desktop=$root/usr/share/applications/checkpoint-studio.desktop
  metainfo=$(ls "$root"/usr/share/metainfo/*.metainfo.xml 2>/dev/null | head -n 1)
  check "desktop-file-validate checkpoint-studio.desktop" bash -c "out=\$(desktop-file-validate '$desktop' 2>&1); echo \"\$out\"; [ -z \"\$out\" ]"
  check "desktop entry: Exec, Icon and MimeType point at what the package installs" bash -c "
    grep -qx 'Exec=checkpoint-studio %f' '$desktop' && grep -qx 'Icon=checkpoint-studio' '$desktop' &&
    for t in \$(sed -n 's/^MimeType=//p' '$desktop' | tr ';' ' '); do
      grep -q \"mime-type type=\\\"\$t\\\"\" '$root/usr/share/mime/packages/checkpoint-studio.xml' || { echo \"\$t not defined\"; exit 1; }
    done"
  check "desktop entry: zh_CN for every translatable key" bash -c "
    for k in Name GenericName Comment Keywords; do
      grep -q \"^\$k=\" '$desktop' || continue
      grep -q \"^\$k\\[zh_CN\\]=\" '$desktop' || { echo \"no \$k[zh_CN]\"; exit 1; }
    done"
  if [ -n "$metainfo" ]; then
    check "appstreamcli validate $(basename "$metainfo")" appstreamcli validate --no-net "$metainfo"
    check "metainfo: zh_CN for every translatable element" "$PY" - "$metainfo" <<'EOF'
import sys, xml.etree.ElementTree as ET
LANG = "{http://www.w3.org/XML/1998/namespace}lang"
root = ET.parse(sys.argv[1]).getroot()
bad = []
def twins(parent, tag):
    en = [e for e in parent.findall(tag) if LANG not in e.attrib]
    zh = [e for e in parent.findall(tag) if e.get(LANG) == "zh_CN"]
    if len(zh) < len(en):
        bad.append(f"{parent.tag}/{tag}: {len(en)} English, {len(zh)} zh_CN")
for tag in ("name", "summary", "developer_name"):
    twins(root, tag)
for desc in root.iter("description"):
    twins(desc, "p")
    for ul in desc.iter("ul"):
        twins(ul, "li")
for shot in root.iter("screenshot"):
    twins(shot, "caption")
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
    check "metainfo: every screenshot is a file in docs/screenshots" bash -c "
      n=0; for u in \$(sed -n 's:.*<image[^>]*>\(.*\)</image>.*:\1:p' '$metainfo'); do
        n=\$((n + 1)); [ -s '$src/docs/screenshots/'\"\$(basename \"\$u\")\" ] || { echo \"\$u: no docs/screenshots/\$(basename \"\$u\")\"; exit 1; }
      done; [ \$n -gt 0 ]"
    check "metainfo: launchable is the desktop entry, release is $version" bash -c "
      grep -q '<launchable type=\"desktop-id\">checkpoint-studio.desktop</launchable>' '$metainfo' &&
      grep -q '<release version=\"$version\"' '$metainfo'"
  else
    bad "no metainfo under /usr/share/metainfo"
  fi
  # The package's MIME types in a private database built with the system's: PyTorch files are
  # recognised by name and, for .bin and unnamed files, by content; other zips stay zips.
  check "MIME: update-mime-database, then .pt/.bin/.safetensors/zip detected as expected" bash -c "
    set -e
    mkdir -p '$work/xdg/mime/packages' '$work/files'
    cp /usr/share/mime/packages/freedesktop.org.xml '$root/usr/share/mime/packages/checkpoint-studio.xml' '$work/xdg/mime/packages/'
    update-mime-database '$work/xdg/mime'
    ex='$src/examples/deepspeed-zero2-bf16-w2/global_step2/mp_rank_00_model_states.pt'
    cp \"\$ex\" '$work/files/model.pt'; cp \"\$ex\" '$work/files/weights.bin'; cp \"\$ex\" '$work/files/noext'
    printf '\x08\x00\x00\x00\x00\x00\x00\x00{\"a\":1}\n' > '$work/files/model.safetensors'
    '$PY' -c \"import zipfile; z = zipfile.ZipFile('$work/files/other.bin', 'w'); z.writestr('readme.txt', 'x'); z.close()\"
    want='model.pt=application/x-pytorch weights.bin=application/x-pytorch noext=application/x-pytorch model.safetensors=application/x-safetensors other.bin=application/zip'
    for w in \$want; do
      got=\$(cd '$work/files' && XDG_DATA_HOME='$work/xdg' XDG_DATA_DIRS='$work/xdg' gio info -a standard::content-type \"\${w%%=*}\" | sed -n 's/.*standard::content-type: //p')
      [ \"\$got\" = \"\${w#*=}\" ] || { echo \"\${w%%=*}: \$got, expected \${w#*=}\"; exit 1; }
    done"
  check "icons: every SVG in resources/icons/src has its PNGs, and the .qrc lists them" bash -c "
    cd '$src/resources' || exit 1
    for svg in icons/src/kinds/*.svg; do n=\$(basename \"\$svg\" .svg)
      for png in icons/kinds/\$n.png icons/kinds/\$n@2x.png; do
        [ -s \"\$png\" ] || { echo \"\$png missing (icons/render-icons.sh)\"; exit 1; }
        grep -q \">\$png<\" checkpoint-studio.qrc || { echo \"\$png not in the .qrc\"; exit 1; }
      done
    done"
fi

section "lintian"
lint=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v '^running with root privileges')
if grep -q '^E: ' <<<"$lint"; then
  bad "lintian: $(grep -c '^E: ' <<<"$lint") errors"; grep '^[EW]: ' <<<"$lint" | sed 's/^/        /'
else
  ok "lintian: no errors, $(grep -c '^W: ' <<<"$lint") warnings"; grep '^W: ' <<<"$lint" | sed 's/^/        /'
fi

section "the .tar.gz, unpacked anywhere"
mkdir -p "$work/tgz" && tar -xzf "$tgz" -C "$work/tgz"
top=$(ls -d "$work"/tgz/*/ | head -n 1)
check "tar.gz: bin/ckpt --version and ckpt inspect of the example it carries" bash -c "
  '$top/bin/ckpt' --version | head -n 1 | grep -qx 'ckpt $version' &&
  '$top/bin/ckpt' inspect '$top/share/checkpoint-studio/examples/deepspeed-zero2-bf16-w2' >/dev/null"

section "install on this machine: apt-get install ./$(basename "$deb")"
if dpkg-query -W -f='${Status}' checkpoint-studio 2>/dev/null | grep -q "installed"; then
  echo "check-package: checkpoint-studio is installed already; purging it first"
  "${APT[@]}" purge checkpoint-studio >/dev/null
fi
# --no-install-recommends: the test needs no network (runtime libraries are those the build used)
if "${APT[@]}" install --no-install-recommends "$deb" >"$work/apt.log" 2>&1; then
  ok "apt-get install ./$(basename "$deb")"
  # A clean environment: only /usr/bin and /bin, a fresh HOME, no build-tree paths.
  home=$work/home; mkdir -p "$home"; chmod 700 "$home"
  clean=(env -i PATH=/usr/bin:/bin HOME="$home" LANG=C.UTF-8 XDG_RUNTIME_DIR="$home")
  check "ckpt is /usr/bin/ckpt; ckpt --version" bash -c "
    [ \"\$(${clean[*]} bash -c 'command -v ckpt')\" = /usr/bin/ckpt ] && ${clean[*]} ckpt --version"
  check "ckpt inspect examples/deepspeed-zero2-bf16-w2" bash -c "${clean[*]} ckpt inspect '$src/examples/deepspeed-zero2-bf16-w2' | grep -q global_step4"
  check "ckpt inspect of the installed example" bash -c "${clean[*]} ckpt inspect /usr/share/checkpoint-studio/examples/deepspeed-zero2-bf16-w2 | grep -q global_step4"
  check "man ckpt finds the installed page" bash -c "${clean[*]} man -w ckpt | grep -q '^/usr/share/man/man1/ckpt.1.gz'"
  check "bash completion: subcommands, options and option values" bash -c '
    complete_line() { # complete_line WORDS...: what TAB offers for the last word
      COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
      _ckpt ckpt "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"; printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "
    }
    source /usr/share/bash-completion/bash_completion && source /usr/share/bash-completion/completions/ckpt || exit 1
    PATH=/usr/bin:/bin
    want=$(ckpt --help | sed -n "/^[Ss][Uu][Bb][Cc][Oo][Mm][Mm][Aa][Nn][Dd][Ss]:/,\$s/^  \([a-z][a-z-]*\)  .*/\1/p" | sort | tr "\n" " ")
    got=$(complete_line ckpt ""); [ -n "$want" ] && [ "$got" = "$want" ] || { echo "ckpt <TAB>: $got, expected $want"; exit 1; }
    got=$(complete_line ckpt export x y --dtype ""); [ "$got" = "bf16 fp16 fp32 " ] || { echo "--dtype <TAB>: $got"; exit 1; }
    got=$(complete_line ckpt export x y --exclude-f); [ "$got" = "--exclude-frozen " ] || { echo "--exclude-f<TAB>: $got"; exit 1; }
    got=$(complete_line ckpt inspect "$1" --tag ""); [ "$got" = "global_step2 global_step4 " ] || { echo "--tag <TAB>: $got"; exit 1; }' \
    _ "$src/examples/deepspeed-zero2-bf16-w2"
  if [ $gui = yes ]; then
    check "checkpoint-studio --screenshot (offscreen, from /usr/bin)" bash -c "
      ${clean[*]} QT_QPA_PLATFORM=offscreen checkpoint-studio --screenshot '$work/x.png' '$src/examples/deepspeed-zero2-bf16-w2' &&
      file -b '$work/x.png' | grep -q '^PNG image data, 1280 x 800'"
    check "checkpoint-studio --palette dark --screenshot of the installed example" bash -c "
      ${clean[*]} QT_QPA_PLATFORM=offscreen checkpoint-studio --palette dark --screenshot '$work/dark.png' \
        --select global_step4/parameters/embed.weight /usr/share/checkpoint-studio/examples/deepspeed-zero2-bf16-w2 &&
      file -b '$work/dark.png' | grep -q '^PNG image data'"
    check "man checkpoint-studio finds the installed page" bash -c "${clean[*]} man -w checkpoint-studio | grep -q checkpoint-studio.1.gz"
    check "installed MIME database: a PyTorch file is application/x-pytorch, opened by checkpoint-studio.desktop" bash -c "
      t=\$(${clean[*]} gio info -a standard::content-type '$src/examples/deepspeed-zero2-bf16-w2/global_step2/mp_rank_00_model_states.pt' | sed -n 's/.*content-type: //p')
      [ \"\$t\" = application/x-pytorch ] || { echo \"content type: \$t\"; exit 1; }
      ${clean[*]} gio mime application/x-pytorch | grep -q checkpoint-studio.desktop || { ${clean[*]} gio mime application/x-pytorch; exit 1; }"
  fi
else
  bad "apt-get install ./$(basename "$deb")"; sed 's/^/        /' "$work/apt.log" | tail -n 30
fi

section "purge"
files=$(dpkg -L checkpoint-studio 2>/dev/null | while read -r f; do [ -f "$f" ] && echo "$f"; done)
if "${APT[@]}" purge checkpoint-studio >"$work/apt.log" 2>&1; then
  left=$(for f in $files; do [ -e "$f" ] && echo "$f"; done)
  if [ -z "$left" ] && ! dpkg-query -W -f='${Status}' checkpoint-studio 2>/dev/null | grep -q installed; then
    ok "apt-get purge checkpoint-studio: no file left ($(wc -w <<<"$files") removed)"
  else
    bad "apt-get purge left: $left"
  fi
  if [ $gui = yes ]; then
    check "after the purge the MIME type is gone" bash -c "
      ! grep -q application/x-pytorch /usr/share/mime/types 2>/dev/null"
  fi
else
  bad "apt-get purge checkpoint-studio"; sed 's/^/        /' "$work/apt.log" | tail -n 30
fi
echo "check-package: $((SECONDS - t0)) s"
finish
