#!/usr/bin/env node
// switchboard-mcp runs the switchboard binary of this machine's platform
// package with the same arguments. The binary has the process's stdin,
// stdout and stderr itself (nothing passes through Node, so MCP over stdio
// sees no buffering); this shim writes nothing to stdout, forwards the
// signals that end a process, and exits as the binary did.
'use strict';

const { spawn } = require('node:child_process');
const { writeSync } = require('node:fs');
const { constants } = require('node:os');
const path = require('node:path');

const launcher = require('../package.json');

const platform = `${process.platform}-${process.arch}`;
const scope = '@switchboard-mcp';
const platformPackage = `${scope}/${platform}`;
const executable = process.platform === 'win32' ? 'switchboard.exe' : 'switchboard';
const releases = 'https://github.com/switchboard-mcp/switchboard/releases';

// The signals a caller ends a process with, which reach the binary once,
// through this shim: elsewhere than on Windows it runs in a process group
// (a session) of its own, out of reach of the signals sent to this one's
// group, such as a terminal's Ctrl-C, which would otherwise reach it twice,
// and switchboard takes a second interrupt for "stop now, without draining".
// On Windows none is forwarded: the console sends Ctrl-C to every process
// attached to it, and Node can only terminate a child there, not signal it.
const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const ownGroup = process.platform !== 'win32';

main();

function main() {
  const binary = process.env.SWITCHBOARD_BINARY || platformBinary();
  const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit', detached: ownGroup });
  const handlers = new Map();
  for (const signal of forwarded) {
    const handler = () => {
      if (ownGroup) child.kill(signal);
    };
    handlers.set(signal, handler);
    process.on(signal, handler);
  }
  if (ownGroup) stopWhenOrphaned(child);
  child.on('error', (err) => {
    const source = process.env.SWITCHBOARD_BINARY ? ' (from SWITCHBOARD_BINARY)' : '';
    fail(`cannot run ${binary}${source}: ${err.message}`);
  });
  child.on('exit', (code, signal) => {
    if (signal === null) process.exit(code);
    // Die of the same signal, so that whoever waits on this process sees
    // what the binary's own parent would have seen.
    for (const [s, handler] of handlers) process.removeListener(s, handler);
    process.kill(process.pid, signal);
    process.exit(128 + (constants.signals[signal] || 0)); // if the signal does not end Node
  });
}

// stopWhenOrphaned asks child to stop (SIGTERM) once this shim's parent
// has gone: a signal that ended the parent, such as npx killed with SIGTERM
// (npm runs the shim through a shell that does not pass it on), never
// reaches a child in a process group of its own, which would run on.
function stopWhenOrphaned(child) {
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(watch);
    child.kill('SIGTERM');
  }, 1000);
  watch.unref();
}

// platformBinary returns the path of the binary in this platform's
// package, an optional dependency of the launcher that npm installs only
// on the platform it is for. It exits with an error where there is none.
function platformBinary() {
  const supported = Object.keys(launcher.optionalDependencies || {});
  try {
    return path.join(path.dirname(require.resolve(`${platformPackage}/package.json`)), 'bin', executable);
  } catch {
    // not installed: said below
  }
  const elsewhere = [
    `  - install it with Go: go install github.com/switchboard-mcp/switchboard/cmd/switchboard@v${launcher.version}`,
    `  - or download the archive for your platform from ${releases}`,
    '    and set SWITCHBOARD_BINARY to the path of the switchboard binary in it.',
  ];
  if (!supported.includes(platformPackage)) {
    const names = supported.map((name) => name.slice(`${scope}/`.length)).join(', ');
    fail([
      `there is no prebuilt switchboard for this platform (${platform}): no package ${platformPackage}.`,
      `switchboard-mcp ${launcher.version} has binaries for ${names}. To run switchboard here:`,
      ...elsewhere,
    ].join('\n'));
  }
  // npx keeps the copy it installed and runs it again as it is, without
  // trying the missing package again, until the copy is gone.
  const npx = npxCopy();
  const again = npx
    ? [
        `  - npx runs the copy it installed again as it is: delete it, ${npx},`,
        '    and run npx again, with access to the registry and without those flags',
      ]
    : [
        '  - install it where switchboard-mcp is (with -g if that is global), with access to the registry:',
        `    npm install ${platformPackage}@${launcher.version}`,
      ];
  fail([
    `the package ${platformPackage}, which holds the switchboard binary for this platform (${platform}), is not installed.`,
    'It is an optional dependency of switchboard-mcp, and npm goes on without it, saying nothing, when told to',
    '(--omit=optional, --no-optional, optional=false in .npmrc) or when it cannot fetch it (no network, a proxy,',
    'a registry or mirror that lacks it). To run switchboard:',
    ...again,
    ...elsewhere,
  ].join('\n'));
}

// npxCopy returns the directory where npx installed this launcher, or ""
// if npx did not: npx installs under its cache, in _npx/HASH.
function npxCopy() {
  const parts = __dirname.split(path.sep);
  const i = parts.lastIndexOf('_npx');
  return i > 0 && i + 1 < parts.length ? parts.slice(0, i + 2).join(path.sep) : '';
}

// fail writes message to stderr, synchronously (process.exit would cut an
// asynchronous write to a pipe short on Windows), and exits with status 1.
function fail(message) {
  writeSync(2, `switchboard-mcp: ${message}\n`);
  process.exit(1);
}
