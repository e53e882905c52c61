//! The executable allowlist: the built-in list, and where a program given by
//! path counts as its allowlisted name.

use super::rules::version_stem;
use super::*;

/// The built-in allowlist: seed 002 §11.1.1 plus the tools dandori's own setup and
/// verification commands use, and harmless file utilities.
pub const DEFAULT_ALLOWED_COMMANDS: &[&str] = &[
    // seed 002 §11.1.1
    "pip",
    "conda",
    "npm",
    "yarn",
    "pnpm",
    "mvn",
    "gradle",
    "go",
    "make",
    // python
    "pip3",
    "python",
    "python3",
    "uv",
    "uvx",
    "mamba",
    "micromamba",
    "poetry",
    "pdm",
    "pipenv",
    "hatch",
    "tox",
    "nox",
    "pytest",
    "virtualenv",
    // node
    "node",
    "npx",
    "corepack",
    "bun",
    "deno",
    "tsc",
    "jest",
    "vitest",
    // test runners and coverage wrappers a package's `test` script names
    // (run from node_modules/.bin, like jest and vitest)
    "mocha",
    "ava",
    "tape",
    "tap",
    "uvu",
    "jasmine",
    "nyc",
    "c8",
    // java
    "mvnw",
    "gradlew",
    "java",
    "javac",
    // go, rust
    "gofmt",
    "cargo",
    "rustc",
    "rustup",
    // ruby, .net (seed 002 §13.1.1; php and composer below)
    "ruby",
    "bundle",
    "bundler",
    "gem",
    "rake",
    "dotnet",
    // build and harmless utilities
    "cmake",
    "echo",
    "printf",
    "true",
    "false",
    "test",
    "[",
    "cd",
    "pwd",
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "sort",
    "mkdir",
    "cp",
    "mv",
    "rm",
    "touch",
    "ln",
    "which",
    "type",
    "dirname",
    "basename",
    "git",
    "export",
    "tee",
    "chmod",
    // php (seed 004's sample plan runs `php artisan test`)
    "php",
    "composer",
    // developer tools: linters, type checkers, search, text utilities
    "ruff",
    "mypy",
    "black",
    "isort",
    "flake8",
    "pylint",
    "pyright",
    "pyflakes",
    "coverage",
    "prettier",
    "eslint",
    "biome",
    "rustfmt",
    "golangci-lint",
    "rg",
    "sed",
    "awk",
    "gawk",
    "find",
    "diff",
    "cmp",
    "uniq",
    "cut",
    "tr",
    "jq",
    "file",
    "stat",
    "du",
    "realpath",
    "readlink",
    "date",
    "sleep",
    "seq",
    "nl",
    "tree",
    "rmdir",
    "read",
];

impl CommandPolicy {
    pub(crate) fn is_allowed(&self, program: &str, base: &str) -> bool {
        if self.allowed.contains(program) {
            return true;
        }
        // A path counts as its allowlisted name only where programs are installed
        // or inside the worktree: `/tmp/python3` or `~/evil/cargo` is not python3
        // or cargo.
        if program.contains('/') && !self.installed_place(program) {
            return false;
        }
        if self.allowed.contains(base) {
            return true;
        }
        // Versioned interpreters: python3.11, pip3.12.
        let stem = version_stem(base);
        stem != base && matches!(stem, "python" | "pip") && self.allowed.contains(stem)
    }

    /// A program path under the worktree, a system prefix, or a toolchain
    /// directory of the home directory.
    pub(crate) fn installed_place(&self, program: &str) -> bool {
        const SYSTEM: &[&str] = &["/usr/", "/bin/", "/sbin/", "/opt/", "/nix/", "/snap/"];
        const HOME_TOOLS: &[&str] = &[
            ".cargo/bin/",
            ".rustup/",
            ".local/bin/",
            ".local/share/",
            ".pyenv/",
            ".nvm/",
            ".volta/",
            ".bun/bin/",
            ".deno/bin/",
            "go/bin/",
            ".sdkman/",
            ".cache/",
            ".asdf/",
            ".npm/",
            ".yarn/",
            ".pnpm",
            "miniconda3/",
            "anaconda3/",
            "micromamba/",
            ".jdks/",
        ];
        match paths::classify(program, &paths::LineState::new(), &self.roots) {
            paths::Place::Inside => true,
            paths::Place::Abs(p) => SYSTEM.iter().any(|s| p.starts_with(s)),
            paths::Place::Home(rest) => HOME_TOOLS.iter().any(|t| rest.starts_with(t)),
            _ => false,
        }
    }
}
