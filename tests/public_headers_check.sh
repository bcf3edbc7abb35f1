#!/usr/bin/env bash
# ctest: each library's folder is private to it (cmake/public_headers.cmake).
# With the include folders a target that links the library gets (its
# INTERFACE_INCLUDE_DIRECTORIES, ':'-separated), every header of the
# library's folder (or a folder within it) that gpulua_public_headers names is
# found, and every other one is not: an internal header cannot be included
# from the layer above.
#   tests/public_headers_check.sh SRC_DIR LAYER=DIR:DIR... [LAYER=...]
#   e.g. core=/build/include/gpulua_core:/build/include/gpulua_driver
set -uo pipefail
src=$1
shift
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
for arg in "$@"; do
  layer=${arg%%=*}
  IFS=: read -r -a dirs <<<"${arg#*=}"
  flags=()
  for d in "${dirs[@]}"; do [ -n "$d" ] && flags+=("-I$d"); done
  public=""
  for d in "${dirs[@]}"; do
    case $d in */include/gpulua_"$layer") public=$d ;; esac
  done
  if [ -z "$public" ]; then
    echo "FAILED: gpulua_$layer has no public include folder (.../include/gpulua_$layer) among ${arg#*=}"
    failed=$((failed + 1))
  fi
  n=0
  while read -r h; do
    name=$(basename "$h")
    n=$((n + 1))
    # preprocessed from a folder of its own: no header is found beside the file
    printf '#include "%s"\n' "$name" >"$tmp/t.c"
    if (cd "$tmp" && "$cc" -E "${flags[@]}" t.c -o /dev/null) >"$tmp/err" 2>&1; then
      seen=found
    else
      seen=missing
    fi
    if [ -n "$public" ] && [ -e "$public/$name" ]; then want=found; else want=missing; fi
    if [ "$seen" = "$want" ]; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      if [ "$want" = found ]; then
        echo "FAILED: src/${h#"$src"/} is public, but a target linking gpulua_$layer cannot include it:"
        head -n 5 "$tmp/err"
      else
        echo "FAILED: src/${h#"$src"/} is internal, but a target linking gpulua_$layer can include it"
      fi
    fi
  done < <(find "$src/$layer" -name '*.h' | sort)
  if [ "$n" -eq 0 ]; then
    echo "FAILED: no header in $src/$layer"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
