// Written by dandori into its run directory and preloaded (NODE_OPTIONS
// --require) into the node processes of the test commands it runs. In a jest or
// vitest main process it records every test's outcome as the runner's own
// reporters receive it and writes a JUnit XML report into
// $DANDORI_TEST_REPORT_DIR, so a plain `jest` or `vitest run` (no --verbose, no
// reporter flag, no config change) still names its tests. It changes nothing the
// tests or the reporters see; in any other node process it only looks at argv.
'use strict';

(function dandoriTestHook() {
  const outDir = process.env.DANDORI_TEST_REPORT_DIR;
  if (!outDir) return;
  const fs = require('fs');
  const path = require('path');

  // Test id -> passed, in the order first seen; one report per process.
  const results = new Map();
  const note = (id, passed) => {
    if (!id) return;
    const before = results.get(id);
    results.set(id, before === undefined ? passed : before && passed);
  };
  const relative = (file) => {
    if (!file) return '';
    const rel = path.relative(process.cwd(), file);
    return (rel && !rel.startsWith('..') ? rel : file).split(path.sep).join('/');
  };
  const xml = (s) =>
    String(s)
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      // Characters XML 1.0 cannot hold.
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '');
  const write = (runner) => {
    if (results.size === 0) return;
    const lines = ['<?xml version="1.0" encoding="utf-8"?>', `<testsuite name="${runner}">`];
    for (const [id, passed] of results) {
      lines.push(`<testcase name="${xml(id)}">${passed ? '' : '<failure/>'}</testcase>`);
    }
    lines.push('</testsuite>');
    try {
      fs.writeFileSync(
        path.join(outDir, `${runner}-${process.pid}.xml`),
        lines.join('\n') + '\n',
      );
    } catch (_) {
      // The report is evidence, not the test run: never fail the run for it.
    }
  };
  // `file > suite > test`, as vitest names a test in its failure lines.
  const testId = (file, titles) => [relative(file), ...titles].filter((t) => t !== '').join(' > ');

  // jest: `@jest/reporters`' SummaryReporter gets the aggregated results of the
  // whole run (it is there with the default reporters, `summary` and `agent`).
  const patchJest = (reporters) => {
    const proto = reporters && reporters.SummaryReporter && reporters.SummaryReporter.prototype;
    if (!proto || typeof proto.onRunComplete !== 'function' || proto.onRunComplete._dandori) return;
    const original = proto.onRunComplete;
    const hooked = function (contexts, aggregated) {
      try {
        for (const file of (aggregated && aggregated.testResults) || []) {
          for (const t of file.testResults || []) {
            if (t.status === 'passed' || t.status === 'failed') {
              note(testId(file.testFilePath, [...(t.ancestorTitles || []), t.title]), t.status === 'passed');
            }
          }
        }
        write('jest');
      } catch (_) {}
      return original.apply(this, arguments);
    };
    hooked._dandori = true;
    proto.onRunComplete = hooked;
  };

  // vitest: every built-in reporter's end-of-run call (`onTestRunEnd` with test
  // modules since vitest 3, `onFinished` with file tasks before).
  const walk = (file, task, titles) => {
    for (const child of task.tasks || []) {
      const names = [...titles, child.name];
      if (child.type === 'suite') {
        walk(file, child, names);
      } else if (child.result && (child.result.state === 'pass' || child.result.state === 'fail')) {
        note(testId(file, names), child.result.state === 'pass');
      }
    }
  };
  const noteFiles = (files) => {
    for (const f of files || []) {
      if (f) walk(f.filepath, f, []);
    }
    write('vitest');
  };
  const patchVitest = (reporters) => {
    for (const cls of Object.values(reporters || {})) {
      const proto = typeof cls === 'function' && cls.prototype;
      if (!proto) continue;
      for (const [name, files] of [
        ['onTestRunEnd', (modules) => (modules || []).map((m) => m && m.task)],
        ['onFinished', (tasks) => tasks],
      ]) {
        const original = Object.prototype.hasOwnProperty.call(proto, name) && proto[name];
        if (typeof original !== 'function' || original._dandori) continue;
        const hooked = function (first) {
          try {
            noteFiles(files(first));
          } catch (_) {}
          return original.apply(this, arguments);
        };
        hooked._dandori = true;
        proto[name] = hooked;
      }
    }
  };

  let main = '';
  try {
    main = process.argv[1] ? fs.realpathSync(process.argv[1]) : '';
  } catch (_) {}
  const vitestBin = /[\\/]node_modules[\\/]vitest[\\/]vitest\.mjs$/.exec(main);
  if (vitestBin) {
    // The reporters module the CLI itself loads (the same file, so the same
    // classes), imported before the CLI creates its reporters.
    const url = require('url').pathToFileURL(path.join(path.dirname(main), 'dist', 'reporters.js'));
    import(url.href).then(patchVitest, () => {});
    return;
  }
  // jest is CommonJS: patch `@jest/reporters` when its main process loads it
  // (`jest`, `jest-cli`, or a script calling jest's API).
  const Module = require('module');
  const load = Module._load;
  let patched = false;
  Module._load = function (request) {
    const exports = load.apply(this, arguments);
    if (!patched && request === '@jest/reporters') {
      patched = true;
      try {
        patchJest(exports);
      } catch (_) {}
    }
    return exports;
  };
})();
