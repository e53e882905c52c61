#!/usr/bin/env bash
# Release artefacts of the dandori binary for this platform, the way peers ship
# theirs:
#   - npm: a platform package (dandori-<os>-<cpu>, with `os`/`cpu`/`libc` fields and
#     the binary in bin/) and the wrapper package `dandori`, whose bin shim finds the
#     platform package (an optional dependency) and execs its binary, as
#     @openai/codex and @anthropic-ai/claude-code do;
#   - Python: a wheel with the binary in its scripts (maturin `bindings = "bin"`,
#     crates/dandori-cli/pyproject.toml), as uv and ruff do.
# Both carry the shipped ecosystem plugins (plugins/) in share/dandori/plugins
# beside the binary's bin/, where dandori finds them.
# The artefacts carry everything, the Restate worker included (feature `restate`).
#
# Usage: scripts/package.sh [--profile NAME] [--out DIR] [--no-restate]
#   --profile  the cargo profile to build with (default: release). The binary is
#              built once with `cargo build`; maturin then builds the wheel with the
#              same profile, features and target dir, so its cargo run finds the
#              binary already built and only packs it. A fresh build from an earlier
#              `cargo build` (same profile, same flags) is reused the same way; a
#              binary newer than every source skips that `cargo build` altogether.
#   --out      where the artefacts go (default: target/package)
# Honours CARGO_TARGET_DIR. Needs cargo, node/npm and python3; maturin is taken
# from MATURIN=/path/to/maturin, else PATH, else installed from PyPI into
# target/package-tools/maturin. The npm packages are `dandori` and
# `dandori-<os>-<cpu>`; the wheel is the PyPI distribution `dandori-cli`
# (`dandori` on PyPI is an unrelated project), which installs the `dandori` command.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PROFILE=release
OUT="$ROOT/target/package"
FEATURES=(--features restate)
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) PROFILE="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --no-restate) FEATURES=(); shift ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
say() { echo "package.sh: $*" >&2; }
MATURIN="${MATURIN:-$(command -v maturin || true)}"
if [ -z "$MATURIN" ]; then
  # No maturin on PATH: one of our own, in a virtual environment under target/.
  MATURIN_VENV="$ROOT/target/package-tools/maturin"
  if [ ! -x "$MATURIN_VENV/bin/maturin" ]; then
    say "maturin not found: installing it from PyPI into $MATURIN_VENV (~10 s)"
    python3 -m venv "$MATURIN_VENV" \
      && "$MATURIN_VENV/bin/pip" install --quiet --disable-pip-version-check 'maturin>=1.9,<2' \
      || { say "could not install maturin (python3 -m venv, pip install maturin); set MATURIN=/path/to/maturin"; exit 2; }
  fi
  MATURIN="$MATURIN_VENV/bin/maturin"
fi
command -v npm >/dev/null || { say "npm not found: install Node.js"; exit 2; }

TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$PROFILE" in dev|test) PROFILE_DIR=debug ;; bench) PROFILE_DIR=release ;; *) PROFILE_DIR="$PROFILE" ;; esac
BIN="$TARGET_DIR/$PROFILE_DIR/dandori"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"

# An existing build newer than every source (the crates, the manifests, the
# lock file), made by this script with the same features, is reused as it is:
# no cargo run for the npm packages.
STAMP="$BIN.package-features"
newer_source=""
if [ -x "$BIN" ]; then
  newer_source="$(find crates Cargo.toml Cargo.lock -newer "$BIN" \( -name '*.rs' -o -name 'Cargo.toml' -o -name 'Cargo.lock' -o -name 'pyproject.toml' \) -print -quit 2>/dev/null || true)"
fi
if [ -x "$BIN" ] && [ -z "$newer_source" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "features:${FEATURES[*]}" ]; then
  say "reusing $BIN (newer than the sources, features: ${FEATURES[*]:-none}; delete it to build again)"
else
  say "cargo build --profile $PROFILE -p dandori ${FEATURES[*]}${newer_source:+ ($newer_source is newer than $BIN)}"
  cargo build --locked --profile "$PROFILE" -p dandori "${FEATURES[@]}"
  echo "features:${FEATURES[*]}" > "$STAMP"
fi
[ -x "$BIN" ] || { say "no binary at $BIN after the build"; exit 1; }
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

# ---- npm ------------------------------------------------------------------
# Node's names for this platform (process.platform, process.arch): the platform
# package is chosen by them, on install (os/cpu/libc) and by the shim.
NODE_OS="$(node -p process.platform)"
NODE_CPU="$(node -p process.arch)"
PLATFORM_PKG="dandori-$NODE_OS-$NODE_CPU"
STAGE="$(mktemp -d "${TMPDIR:-/tmp}/dandori-package.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
LIBC_FIELD=""
if [ "$NODE_OS" = linux ]; then
  # The binary links the C library dynamically: say which one, as npm's `libc`.
  if ldd --version 2>&1 | grep -qi musl; then LIBC_FIELD='"libc": ["musl"],'; else LIBC_FIELD='"libc": ["glibc"],'; fi
fi

mkdir -p "$STAGE/platform/bin" "$STAGE/platform/share/dandori"
cp "$BIN" "$STAGE/platform/bin/dandori"
chmod 0755 "$STAGE/platform/bin/dandori"
# The shipped ecosystem plugins (plugins/: Ruby, PHP), where the binary looks
# for them: share/dandori/plugins beside its bin/ (docs/environment.md).
cp -R plugins "$STAGE/platform/share/dandori/plugins"
cat > "$STAGE/platform/package.json" <<EOF
{
  "name": "$PLATFORM_PKG",
  "version": "$VERSION",
  "description": "The dandori binary for $NODE_OS $NODE_CPU (installed by the dandori package)",
  "license": "MIT OR Apache-2.0",
  "os": ["$NODE_OS"],
  "cpu": ["$NODE_CPU"],
  $LIBC_FIELD
  "files": ["bin/dandori", "share/dandori/plugins"],
  "preferUnplugged": true
}
EOF
printf '# %s\n\nThe dandori binary for %s %s. Install `dandori`, which picks this package.\n' \
  "$PLATFORM_PKG" "$NODE_OS" "$NODE_CPU" > "$STAGE/platform/README.md"

mkdir -p "$STAGE/wrapper/bin"
cp scripts/npm/dandori.js "$STAGE/wrapper/bin/dandori.js"
chmod 0755 "$STAGE/wrapper/bin/dandori.js"
cp README.md "$STAGE/wrapper/README.md"
cat > "$STAGE/wrapper/package.json" <<EOF
{
  "name": "dandori",
  "version": "$VERSION",
  "description": "dandori: plan and run the work of LLM coding agents",
  "license": "MIT OR Apache-2.0",
  "bin": { "dandori": "bin/dandori.js" },
  "files": ["bin/dandori.js"],
  "engines": { "node": ">=16" },
  "optionalDependencies": { "$PLATFORM_PKG": "$VERSION" }
}
EOF
say "npm pack $PLATFORM_PKG and dandori"
(cd "$STAGE/platform" && npm pack --silent --pack-destination "$OUT" >/dev/null)
(cd "$STAGE/wrapper" && npm pack --silent --pack-destination "$OUT" >/dev/null)

# ---- Python wheel ---------------------------------------------------------
# The wheel's data files (crates/dandori-cli/pyproject.toml `data`) are
# installed under the environment's prefix: the plugins land in
# PREFIX/share/dandori/plugins, beside PREFIX/bin/dandori.
WHEEL_DATA=crates/dandori-cli/wheel.data
rm -rf "$WHEEL_DATA"
mkdir -p "$WHEEL_DATA/data/share/dandori"
cp -R plugins "$WHEEL_DATA/data/share/dandori/plugins"
trap 'rm -rf "$STAGE" "$ROOT/$WHEEL_DATA"' EXIT
say "maturin build --profile $PROFILE ${FEATURES[*]} (reuses the binary just built)"
"$MATURIN" build --locked --profile "$PROFILE" "${FEATURES[@]}" \
  --manifest-path crates/dandori-cli/Cargo.toml --out "$OUT" >&2

say "artefacts in $OUT:"
ls -l "$OUT/$PLATFORM_PKG-$VERSION.tgz" "$OUT/dandori-$VERSION.tgz" "$OUT"/dandori_cli-"$VERSION"-*.whl >&2
