#!/usr/bin/env node
// build.mjs DIST OUTDIR writes the npm packages of a release and packs them:
// the launcher switchboard-mcp, and one package per platform holding the
// binary from that platform's release archive in DIST (goreleaser's dist/),
// all at the version of the archives, each with the repository's LICENSE
// and NOTICE. OUTDIR gets a folder per package and its .tgz; the paths of
// the .tgz files are printed, the launcher's last.
// It needs nothing but Node (>= 18) and npm.
import { createHash } from 'node:crypto';
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const scope = '@switchboard-mcp';
const repository = {
  type: 'git',
  url: 'git+https://github.com/switchboard-mcp/switchboard.git',
  directory: 'npm',
};
const homepage = 'https://github.com/switchboard-mcp/switchboard';
const license = 'Apache-2.0';
// The repository's files that every package carries (named in "files":
// npm would pack LICENSE without, but not NOTICE).
const legal = ['LICENSE', 'NOTICE'];

// The release's platforms, by goreleaser's names and Node's.
const platforms = [
  { goos: 'linux', goarch: 'amd64', os: 'linux', cpu: 'x64' },
  { goos: 'linux', goarch: 'arm64', os: 'linux', cpu: 'arm64' },
  { goos: 'darwin', goarch: 'amd64', os: 'darwin', cpu: 'x64' },
  { goos: 'darwin', goarch: 'arm64', os: 'darwin', cpu: 'arm64' },
  { goos: 'windows', goarch: 'amd64', os: 'win32', cpu: 'x64' },
  { goos: 'windows', goarch: 'arm64', os: 'win32', cpu: 'arm64' },
];

// semver.org's pattern: npm takes no other version.
const semver =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

async function main(args) {
  if (args.length !== 2) {
    throw new Error('usage: node npm/build.mjs DIST OUTDIR');
  }
  const [dist, out] = args.map((a) => path.resolve(a));
  const archives = releaseArchives(dist);
  const version = archives[0].version;
  mkdirSync(out, { recursive: true });

  const dirs = [];
  for (const a of archives) {
    const name = `${scope}/${a.os}-${a.cpu}`;
    const dir = path.join(out, `${a.os}-${a.cpu}`);
    const exe = a.goos === 'windows' ? 'switchboard.exe' : 'switchboard';
    const binary = extract(a, exe);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(path.join(dir, 'bin'), { recursive: true });
    writeFileSync(path.join(dir, 'bin', exe), binary);
    chmodSync(path.join(dir, 'bin', exe), 0o755);
    writeJSON(path.join(dir, 'package.json'), {
      name,
      version,
      description: `The ${a.os}-${a.cpu} binary of switchboard, for the switchboard-mcp launcher.`,
      license,
      repository,
      homepage,
      os: [a.os],
      cpu: [a.cpu],
      files: ['bin/', ...legal],
      preferUnplugged: true,
    });
    copyLegal(dir);
    writeFileSync(
      path.join(dir, 'README.md'),
      `# ${name}\n\nThe ${a.os}-${a.cpu} binary of [switchboard](${homepage}), ${version}: ` +
        'install [`switchboard-mcp`](https://www.npmjs.com/package/switchboard-mcp), which picks the binary of its platform.\n',
    );
    dirs.push(dir);
  }

  const dir = path.join(out, 'switchboard-mcp');
  rmSync(dir, { recursive: true, force: true });
  cpSync(path.join(here, 'switchboard-mcp'), dir, { recursive: true });
  writeJSON(path.join(dir, 'package.json'), {
    name: 'switchboard-mcp',
    version,
    description: 'Switchboard, the MCP gateway, for npx: prebuilt binaries, no Go needed.',
    keywords: ['mcp', 'model-context-protocol', 'gateway', 'switchboard'],
    license,
    repository,
    homepage,
    bin: { 'switchboard-mcp': 'bin/switchboard-mcp.js', switchboard: 'bin/switchboard-mcp.js' },
    files: ['bin/', ...legal],
    engines: { node: '>=18' },
    optionalDependencies: Object.fromEntries(archives.map((a) => [`${scope}/${a.os}-${a.cpu}`, version])),
  });
  copyLegal(dir);
  dirs.push(dir);
  // npm pack spends most of its time starting: the seven run at once.
  for (const t of await Promise.all(dirs.map((d) => pack(d, out)))) console.log(t);
}

// releaseArchives returns the archive of each platform, named in
// DIST/checksums.txt and checked against it, with the version they share.
function releaseArchives(dist) {
  const sums = path.join(dist, 'checksums.txt');
  const listed = new Map();
  for (const line of readFileSync(sums, 'utf8').split('\n')) {
    const m = /^([0-9a-f]{64}) [ *](\S+)$/.exec(line.trim());
    if (m) listed.set(m[2], m[1]);
  }
  const versions = new Set();
  const archives = platforms.map((p) => {
    const ext = p.goos === 'windows' ? 'zip' : 'tar.gz';
    const suffix = `_${p.goos}_${p.goarch}.${ext}`;
    const files = [...listed.keys()].filter((f) => f.startsWith('switchboard_') && f.endsWith(suffix));
    if (files.length !== 1) {
      throw new Error(`${sums}: want one switchboard_<version>${suffix}, found ${files.length}: ${files.join(' ')}`);
    }
    const file = files[0];
    const version = file.slice('switchboard_'.length, -suffix.length);
    if (!semver.test(version)) {
      throw new Error(`${sums}: ${file}: version ${JSON.stringify(version)} is not semver, which npm needs`);
    }
    versions.add(version);
    const archive = path.join(dist, file);
    const data = readFileSync(archive);
    const sum = createHash('sha256').update(data).digest('hex');
    if (sum !== listed.get(file)) {
      throw new Error(`${archive}: sha256 ${sum}, but checksums.txt says ${listed.get(file)}`);
    }
    return { ...p, version, file, path: archive };
  });
  if (versions.size !== 1) {
    throw new Error(`${sums}: the archives disagree on the version: ${[...versions].join(', ')}`);
  }
  return archives;
}

// extract returns the file called name at the top level of an archive
// (a .tar.gz or a .zip), read by tar or unzip, which check what they read.
function extract(archive, name) {
  const [cmd, args] = archive.file.endsWith('.zip') ? ['unzip', ['-p']] : ['tar', ['-xzOf']];
  try {
    return execFileSync(cmd, [...args, archive.path, name], { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const why = err.stderr?.toString().trim() || err.message;
    throw new Error(`${archive.path}: no ${name} at its top level (${cmd}: ${why})`);
  }
}

// copyLegal copies the repository's LICENSE and NOTICE into a package's dir.
function copyLegal(dir) {
  for (const f of legal) cpSync(path.join(here, '..', f), path.join(dir, f));
}

function writeJSON(file, value) {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

// pack runs npm pack in dir, into out, and returns the tarball's path.
async function pack(dir, out) {
  const { stdout } = await promisify(execFile)('npm', ['pack', '--json', '--pack-destination', out], {
    cwd: dir,
    shell: process.platform === 'win32', // npm is npm.cmd there
  });
  return path.join(out, JSON.parse(stdout)[0].filename);
}

main(process.argv.slice(2)).catch((err) => {
  console.error(`build.mjs: ${err.message}`);
  process.exit(1);
});
