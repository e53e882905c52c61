#!/usr/bin/env bash
# Environment-setup benchmark over real repositories (issue 11, seed 002 §14.3).
#
#   scripts/env-bench.sh REPOS_DIR [NAME…]
#
# REPOS_DIR holds one checkout per repository (fetched beforehand; nothing is
# downloaded here except what `dandori env setup` installs). The committed set is
# scripts/env-bench-repos.txt (directory, GitHub owner/name, commit); with
# BENCH_CLONE=1 the missing ones are cloned from GitHub at that commit first.
# Each is cloned into
# a scratch directory, then:
#   1. `dandori env setup` (time, outcome, exit code),
#   2. the project's test command through `dandori env exec` (tests collected /
#      passed when the runner says so),
#   3. `dandori env setup` again (the reuse path: time),
#   4. `git status --porcelain` (setup must leave the work tree clean),
#   5. the installed versions against the lock file (scripts/env-lock-match.py),
#      and `dandori env verify` after the setup (its status).
# Prints a markdown table and the success rate (tests ran) over installable
# repositories. Environment: DANDORI (binary, default target/debug/dandori),
# DANDORI_TOOLS_DIR (tool cache, default REPOS_DIR/.tools), BENCH_WORK (scratch,
# default a temporary directory), TEST_TIMEOUT (seconds, default 900).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REPOS="${1:?usage: scripts/env-bench.sh REPOS_DIR [NAME…]}"
REPOS="$(cd "$REPOS" && pwd)"
shift
DANDORI="${DANDORI:-$ROOT/target/debug/dandori}"
export DANDORI_TOOLS_DIR="${DANDORI_TOOLS_DIR:-$REPOS/.tools}"
WORK="${BENCH_WORK:-$(mktemp -d)}"
TEST_TIMEOUT="${TEST_TIMEOUT:-900}"
mkdir -p "$WORK"

if [ "${BENCH_CLONE:-0}" = 1 ]; then
  while read -r dir repo commit; do
    case "$dir" in ''|'#'*) continue ;; esac
    [ -d "$REPOS/$dir/.git" ] && continue
    git clone -q "https://github.com/$repo" "$REPOS/$dir" &&
      git -C "$REPOS/$dir" checkout -q "$commit" ||
      echo "could not clone $repo at $commit" >&2
  done <"$ROOT/scripts/env-bench-repos.txt"
fi

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for d in "$REPOS"/*/; do names+=("$(basename "$d")"); done
fi

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
json() { python3 -c "import json,sys; v=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>/dev/null; }

# The test command of a prepared repository, run through `dandori env exec`.
test_command() {
  local dir="$1" env="$2" pm="$3" detected="$4"
  case "$env" in
    python|miniforge)
      # The command dandori detected (tox.ini, runtests.py, unittest, pytest).
      case "$detected" in
        ""|*"-m pytest"*) echo "${detected:-python -m pytest} -q -p no:cacheprovider" ;;
        *) echo "$detected" ;;
      esac ;;
    node)
      # The command dandori detected (tests-only script, lint commands left out).
      [ -n "$detected" ] && { echo "$detected"; return; }
      case "$pm" in
        yarn) echo "yarn test" ;;
        pnpm) echo "pnpm test" ;;
        *) echo "npm test" ;;
      esac ;;
    rust) echo "cargo test --quiet" ;;
    go) echo "go test ./..." ;;
    java) if [ -f "$dir/pom.xml" ]; then echo "mvn -B -q test"; else echo "gradle test"; fi ;;
    ruby) echo "bundle exec rake test" ;;
    php) echo "vendor/bin/phpunit" ;;
    dotnet) echo "dotnet test" ;;
    *) echo "" ;;
  esac
}

# "collected passed" from a test runner's output.
counts() {
  local log="$1"
  python3 - "$log" <<'EOF'
import re, sys
t = re.sub(r"\x1b\[[0-9;]*m", "", open(sys.argv[1], errors="replace").read())  # colours
passed = failed = 0
found = False
for m in re.finditer(r"(\d+) passed", t):  # pytest, vitest
    passed += int(m.group(1)); found = True
for m in re.finditer(r"(\d+) failed", t):
    failed += int(m.group(1))
for m in re.finditer(r"(\d+) error", t):
    failed += int(m.group(1))
if not found:
    for m in re.finditer(r"test result: \w+\. (\d+) passed; (\d+) failed", t):  # cargo
        passed += int(m.group(1)); failed += int(m.group(2)); found = True
if not found:
    for m in re.finditer(r"#\s*\{\s*total:\s*(\d+),\s*pass:\s*(\d+)", t):  # tap >= 18
        passed += int(m.group(2)); failed += int(m.group(1)) - int(m.group(2)); found = True
if not found:
    for m in re.finditer(r"# pass\s+(\d+)", t):  # tap / node:test (tape: "# pass  N")
        passed += int(m.group(1)); found = True
    for m in re.finditer(r"# fail\s+(\d+)", t):
        failed += int(m.group(1))
if not found:
    for m in re.finditer(r"(\d+) (?:passing|tests? passed|honored)", t):  # mocha, uvu, vows
        passed += int(m.group(1)); found = True
    for m in re.finditer(r"(\d+) (?:failing|broken|errored)", t):
        failed += int(m.group(1))
if not found:
    m = re.search(r"Total:\s+(\d+)", t)  # uvu
    if m:
        passed = int(m.group(1)); found = True
if not found:
    # unittest, Django's test runner: "Ran N tests", "FAILED (failures=F, errors=E)".
    for m in re.finditer(r"^Ran (\d+) tests? in", t, re.M):
        passed += int(m.group(1)); found = True
    for m in re.finditer(r"^FAILED \(([^)]*)\)", t, re.M):
        for k in re.finditer(r"(?:failures|errors)=(\d+)", m.group(1)):
            passed -= int(k.group(1)); failed += int(k.group(1))
if not found:
    # ava with failures ("55 tests failed", no passed line): one mark per test.
    ok = len(re.findall(r"^\s*\u2714 ", t, re.M))
    bad = len(re.findall(r"^\s*\u2718 ", t, re.M))
    if ok + bad:
        passed, failed, found = ok, bad, True
if not found:
    # pytest with -qq in the project's addopts: progress lines only.
    for line in t.splitlines():
        m = re.match(r"^([.sxXFE]+)\s+\[\s*\d+%\]$", line.strip())
        if m:
            found = True
            passed += m.group(1).count(".")
            failed += sum(m.group(1).count(c) for c in "FE")
print(f"{passed + failed} {passed}" if found else "- -")
EOF
}

printf '| repository | detected | setup | exit | setup s | tests | collected | passed | 2nd setup s | git clean | lock match | verify |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|\n'
locked=0
matched=0
installable=0
ran=0
blocked_list=()
for n in "${names[@]}"; do
  src="$REPOS/$n"
  [ -d "$src/.git" ] || continue
  dir="$WORK/$n"
  rm -rf "$dir"
  if ! git clone -q "$src" "$dir" 2>/dev/null; then
    rm -rf "$dir"
    cp -a "$src" "$dir"
  fi
  out="$WORK/$n.setup.json"
  t0=$(now)
  "$DANDORI" env setup --repo "$dir" --json >"$out" 2>"$WORK/$n.setup.err"
  code=$?
  t1=$(now)
  env=$(json "$out" 'v["setup_result"]["environment"]')
  "$DANDORI" env detect --repo "$dir" --json >"$WORK/$n.detect.json" 2>/dev/null
  pm=$(json "$WORK/$n.detect.json" 'v["selected_environment"].get("package_manager","")')
  detected_test=$(json "$WORK/$n.detect.json" 'v["selected_environment"].get("test_command","")')
  status=$(json "$out" 'v["overall_status"]')
  [ -n "$status" ] || status="error"
  detected="$env"
  tests="-"; collected="-"; passed="-"
  if [ "$status" = "blocked" ]; then
    reason=$(json "$out" 'v["setup_result"]["blocked"]["code"]')
    blocked_list+=("$n ($env): $reason")
  else
    installable=$((installable + 1))
    cmd=$(test_command "$dir" "$env" "$pm" "$detected_test")
    if [ -n "$cmd" ]; then
      # CI=true: test runners run once instead of watching (vitest, jest).
      (cd "$dir" && CI=true timeout "$TEST_TIMEOUT" "$DANDORI" env exec --repo "$dir" -- sh -c "$cmd") >"$WORK/$n.test.log" 2>&1
      tcode=$?
      read -r collected passed < <(counts "$WORK/$n.test.log")
      if [ "$collected" != "-" ] && [ "$collected" != "0" ]; then
        tests="ran (exit $tcode)"
        ran=$((ran + 1))
      else
        tests="did not run (exit $tcode)"
      fi
    fi
  fi
  lock=$(python3 "$ROOT/scripts/env-lock-match.py" "$dir")
  case "$lock" in -*) ;; *) locked=$((locked + 1)) ;; esac
  case "$lock" in yes*) matched=$((matched + 1)) ;; esac
  verify=$("$DANDORI" env verify --repo "$dir" --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['overall_status'])" 2>/dev/null || echo error)
  t2=$(now)
  "$DANDORI" env setup --repo "$dir" --json >/dev/null 2>&1
  t3=$(now)
  dirty=$(git -C "$dir" status --porcelain 2>/dev/null | grep -v '^ *D ' | head -3 | tr '\n' ' ')
  clean=$([ -z "$dirty" ] && echo yes || echo "no: $dirty")
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
    "$n" "$detected" "$status" "$code" "$(secs "$t0" "$t1")" "$tests" "$collected" "$passed" \
    "$(secs "$t2" "$t3")" "$clean" "$lock" "$verify"
done
echo
if [ "$installable" -gt 0 ]; then
  echo "tests ran after setup: $ran of $installable installable repositories ($(awk -v a="$ran" -v b="$installable" 'BEGIN { printf "%.0f", 100 * a / b }') %)"
fi
echo "installed versions match the lock: $matched of $locked repositories with a lock and something installed"
for b in "${blocked_list[@]}"; do echo "blocked: $b"; done
echo "scratch directory: $WORK"
