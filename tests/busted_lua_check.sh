#!/usr/bin/env bash
# ctest: the ways README.md ("Testing GPU code with Busted") gives of running
# specs under the gpulua host through busted's own interpreter switch, which
# starts busted again as `<lua> <busted script> --ignore-lua <arguments>`:
#   busted --lua=PATH/gpulua, busted --lua=gpulua (on PATH), and a .busted
#   file with lua = "gpulua" (or a path), each started from the busted script
#   itself (its #!/usr/bin/env lua: Debian's default lua, 5.1) and from lua5.4;
# each runs examples/saxpy_spec.lua and a probe spec that checks it runs in
# the gpulua host (the global gpu, Lua 5.4), and a failing spec must fail
# (busted's exit status comes back through the switch).
#   tests/busted_lua_check.sh PATH/TO/gpulua BUSTED_SCRIPT [LUA5.4] [extra busted arguments...]
set -uo pipefail
g=$(realpath "$1")
busted=$2
lua54=${3:-}
shift 3 2>/dev/null || shift $#
extra=("$@")
src=$(cd "$(dirname "$0")/.." && pwd)
passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/bin" "$tmp/proj"
ln -s "$g" "$tmp/bin/gpulua"
cp "$src/examples/saxpy_spec.lua" "$tmp/proj/"
cat >"$tmp/proj/probe_spec.lua" <<'EOF'
describe("the interpreter", function()
  it("is the gpulua host", function()
    assert.are.equal("Lua 5.4", _VERSION)
    assert.are.equal("table", type(rawget(_G, "gpu")))
    assert.are.equal(require("gpulua"), rawget(_G, "gpu"))
  end)
end)
EOF
cat >"$tmp/proj/fails_spec.lua" <<'EOF'
describe("a failing spec", function()
  it("fails", function() assert.are.equal("gpulua", "lua") end)
end)
EOF

# check NAME WANT_STATUS WANT_PATTERN DIR COMMAND...: run COMMAND in DIR
check() {
  local name=$1 want_status=$2 want=$3 dir=$4
  shift 4
  local got rc
  got=$(cd "$dir" && "$@" 2>&1)
  rc=$?
  if { [ "$want_status" = 0 ] && [ "$rc" -eq 0 ]; } || { [ "$want_status" != 0 ] && [ "$rc" -ne 0 ]; }; then
    if grep -Eq -- "$want" <<<"$got"; then
      passed=$((passed + 1))
      return
    fi
  fi
  failed=$((failed + 1))
  printf 'FAILED %s: wanted exit %s and /%s/, got exit %s:\n%s\n' "$name" "$want_status" "$want" "$rc" "$got"
}

starters=()
command -v lua >/dev/null && starters+=(direct) # the script's own #! line
[ -n "$lua54" ] && starters+=(lua54)
if [ ${#starters[@]} -eq 0 ]; then
  echo "no interpreter to start busted with (neither lua nor lua5.4): nothing checked"
  exit 0
fi
for start in "${starters[@]}"; do
  if [ "$start" = direct ]; then run=("$busted"); else run=("$lua54" "$busted"); fi
  # --lua=PATH
  check "$start --lua=path saxpy" 0 '3 successes / 0 failures / 0 errors' "$src" \
    "${run[@]}" "${extra[@]}" --lua="$g" examples/saxpy_spec.lua
  check "$start --lua=path probe" 0 '1 success / 0 failures / 0 errors' "$tmp/proj" \
    "${run[@]}" "${extra[@]}" --lua="$g" probe_spec.lua
  check "$start --lua=path failure" 1 '0 successes / 1 failure / 0 errors' "$tmp/proj" \
    "${run[@]}" "${extra[@]}" --lua="$g" fails_spec.lua
  # --lua=gpulua, found on PATH
  check "$start --lua=gpulua" 0 '1 success / 0 failures / 0 errors' "$tmp/proj" \
    env PATH="$tmp/bin:$PATH" "${run[@]}" "${extra[@]}" --lua=gpulua probe_spec.lua
  # .busted with lua = "gpulua" (on PATH), then with a path
  for lua in gpulua "$g"; do
    printf 'return {default = {lua = "%s", pattern = "_spec", ROOT = {"."}}}\n' "$lua" >"$tmp/proj/.busted"
    check "$start .busted lua = $lua" 1 '4 successes / 1 failure / 0 errors' "$tmp/proj" \
      env PATH="$tmp/bin:$PATH" "${run[@]}" "${extra[@]}"
    check "$start .busted lua = $lua, one file" 0 '3 successes / 0 failures / 0 errors' "$tmp/proj" \
      env PATH="$tmp/bin:$PATH" "${run[@]}" "${extra[@]}" saxpy_spec.lua
  done
  rm -f "$tmp/proj/.busted"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
