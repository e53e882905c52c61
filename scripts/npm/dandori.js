#!/usr/bin/env node
// The `dandori` command of the npm package: finds the platform package that
// carries the binary (dandori-<platform>-<arch>, an optional dependency npm
// installs only where its os/cpu/libc match) and runs it with this process's
// arguments, environment and stdio, as @openai/codex's bin shim does.
"use strict";

const { spawn } = require("child_process");
const { existsSync } = require("fs");
const { constants } = require("os");
const path = require("path");

const platformPackage = `dandori-${process.platform}-${process.arch}`;
const exe = process.platform === "win32" ? "dandori.exe" : "dandori";

function findBinary() {
  try {
    const manifest = require.resolve(`${platformPackage}/package.json`);
    const bin = path.join(path.dirname(manifest), "bin", exe);
    if (existsSync(bin)) {
      return bin;
    }
  } catch {
    // not installed: reported below
  }
  process.stderr.write(
    `dandori: the package ${platformPackage} with the binary for this platform ` +
      `(${process.platform} ${process.arch}) is not installed. It is an optional ` +
      `dependency of dandori: reinstall without --omit=optional / --no-optional, ` +
      `or install with pip (pip install dandori-cli) or cargo.\n`,
  );
  process.exit(1);
}

const binary = findBinary();
const args = process.argv.slice(2);

// Replace this process where Node can (22.15+), so the binary gets signals and
// the terminal directly and its exit status is ours.
if (process.platform !== "win32" && typeof process.execve === "function") {
  process.execve(binary, [binary, ...args], process.env);
}

const child = spawn(binary, args, { stdio: "inherit" });
child.on("error", (err) => {
  process.stderr.write(`dandori: could not run ${binary}: ${err.message}\n`);
  process.exit(1);
});
// Forward the signals a terminal or a supervisor sends, until the child ends.
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => {
    try {
      child.kill(sig);
    } catch {
      // already gone
    }
  });
}
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the caller sees what the binary saw.
    process.removeAllListeners(signal);
    process.exitCode = 128 + (constants.signals[signal] || 0);
    process.kill(process.pid, signal);
  } else {
    process.exit(code === null ? 1 : code);
  }
});
