#!/usr/bin/env bash
# The whole test suite. Installs the external tools the tests drive (uv, the MCP
# servers, ...) into target/test-tools, idempotently, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="$PWD/target/test-tools"
mkdir -p "$TOOLS"

# Python tools (uv, mcp-server-git) in their own virtual environment.
if [ ! -x "$TOOLS/venv/bin/uv" ] || [ ! -x "$TOOLS/venv/bin/mcp-server-git" ] || [ ! -x "$TOOLS/venv/bin/pytest" ]; then
  python3 -m venv "$TOOLS/venv"
  "$TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check uv mcp-server-git pytest
fi

# The official MCP Python SDK client (PyPI `mcp`): the `dandori mcp` tests drive the
# server with it, as agents do.
if ! "$TOOLS/venv/bin/python" -c "import mcp.client.stdio" >/dev/null 2>&1; then
  "$TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check mcp
fi

# Node tools (the filesystem MCP server).
if [ ! -x "$TOOLS/node/node_modules/.bin/mcp-server-filesystem" ]; then
  mkdir -p "$TOOLS/node"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/node" @modelcontextprotocol/server-filesystem >/dev/null
fi

# The command sandbox (bubblewrap): unpacked from the Debian package into
# target/test-tools/bubblewrap (no system-wide install). The built-in fallback
# (namespaces + Landlock, no external binary) is tested too, forced by setting.
if ! command -v bwrap >/dev/null 2>&1 && [ ! -x "$TOOLS/bubblewrap/usr/bin/bwrap" ]; then
  if command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
    mkdir -p "$TOOLS/deb"
    (cd "$TOOLS/deb" && apt-get download bubblewrap >/dev/null 2>&1) \
      && dpkg -x "$(ls "$TOOLS"/deb/bubblewrap_*.deb | head -n 1)" "$TOOLS/bubblewrap" \
      || echo "warning: could not fetch bubblewrap; the bubblewrap sandbox tests fail" >&2
  else
    echo "warning: bwrap (bubblewrap) not found; install it (apt-get install -y bubblewrap) or the sandbox tests fail" >&2
  fi
fi

# Environment sub-phase tests (dandori-env, `dandori env`): uv (above) for the real
# Python install, npm for the real Node install, mvn for the "Maven without its
# registry" case (the fixture points Maven at an unresolvable mirror, so no
# network is used either way).
if ! command -v mvn >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  apt-get install -y -q maven >/dev/null 2>&1 \
    || echo "warning: could not install maven; dandori-env's blocked-Maven test will fail" >&2
fi

# The MCP Inspector CLI (`dandori mcp` is listed and called through it).
if [ ! -x "$TOOLS/node/node_modules/.bin/mcp-inspector" ]; then
  mkdir -p "$TOOLS/node"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/node" @modelcontextprotocol/inspector >/dev/null
fi

export PATH="$TOOLS/venv/bin:$TOOLS/node/node_modules/.bin:$TOOLS/bubblewrap/usr/bin:$PATH"
export DANDORI_TEST_TOOLS="$TOOLS"
exec cargo test --workspace --locked "$@"
