#!/usr/bin/env node
// build.mjs DIST OUTDIR writes the npm packages of a release and packs them:
// the launcher switchboard-mcp, and one package per platform holding the
// binary from that platform's release archive in DIST (goreleaser's dist/),
// all at the version of the archives. OUTDIR gets a folder per package and
// its .tgz; the paths of the .tgz files are printed, the launcher's last.
// It needs nothing but Node (>= 18) and npm.
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gunzipSync, inflateRawSync } from 'node:zlib';

const here = path.dirname(fileURLToPath(import.meta.url));
const scope = '@switchboard-mcp';
const repository = {
  type: 'git',
  url: 'git+https://github.com/switchboard-mcp/switchboard.git',
  directory: 'npm',
};
const homepage = 'https://github.com/switchboard-mcp/switchboard';

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
      repository,
      homepage,
      os: [a.os],
      cpu: [a.cpu],
      files: ['bin/'],
      preferUnplugged: true,
    });
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
    repository,
    homepage,
    bin: { 'switchboard-mcp': 'bin/switchboard-mcp.js', switchboard: 'bin/switchboard-mcp.js' },
    files: ['bin/'],
    engines: { node: '>=18' },
    optionalDependencies: Object.fromEntries(archives.map((a) => [`${scope}/${a.os}-${a.cpu}`, version])),
  });
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
    return { ...p, version, file, path: archive, data };
  });
  if (versions.size !== 1) {
    throw new Error(`${sums}: the archives disagree on the version: ${[...versions].join(', ')}`);
  }
  return archives;
}

// extract returns the file called name at the top level of an archive
// (a .tar.gz or a .zip).
function extract(archive, name) {
  const { data, file } = archive;
  const found = file.endsWith('.zip') ? fromZip(data, name) : fromTar(gunzipSync(data), name);
  if (!found) throw new Error(`${archive.path}: no ${name} at its top level`);
  return found;
}

// fromTar reads a ustar/pax/GNU tar for the regular file called name.
function fromTar(tar, name) {
  let longName = null;
  for (let off = 0; off + 512 <= tar.length; ) {
    const header = tar.subarray(off, off + 512);
    if (header.every((b) => b === 0)) break;
    const field = (start, len) => header.toString('latin1', start, start + len).replace(/\0.*$/s, '');
    const size = parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1) || '0';
    const body = tar.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === 'x') {
      const m = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(body.toString('utf8'));
      longName = m ? m[1] : longName;
      continue;
    }
    if (type === 'L') {
      longName = body.toString('utf8').replace(/\0.*$/s, '');
      continue;
    }
    if (type === 'g') continue;
    const prefix = field(345, 155);
    const entry = longName ?? (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100));
    longName = null;
    if ((type === '0' || type === '7') && entry.replace(/^\.\//, '') === name) return Buffer.from(body);
  }
  return null;
}

// fromZip reads a zip's central directory for the file called name, stored
// or deflated.
function fromZip(zip, name) {
  let end = zip.length - 22;
  while (end >= 0 && zip.readUInt32LE(end) !== 0x06054b50) end--;
  if (end < 0) throw new Error('not a zip: no end of central directory');
  const count = zip.readUInt16LE(end + 10);
  let off = zip.readUInt32LE(end + 16);
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(off) !== 0x02014b50) throw new Error('bad zip central directory');
    const method = zip.readUInt16LE(off + 10);
    const compressed = zip.readUInt32LE(off + 20);
    const nameLen = zip.readUInt16LE(off + 28);
    const extraLen = zip.readUInt16LE(off + 30);
    const commentLen = zip.readUInt16LE(off + 32);
    const local = zip.readUInt32LE(off + 42);
    const entry = zip.toString('utf8', off + 46, off + 46 + nameLen);
    off += 46 + nameLen + extraLen + commentLen;
    if (entry.replace(/^\.\//, '') !== name) continue;
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(start, start + compressed);
    if (method === 0) return Buffer.from(data);
    if (method === 8) return inflateRawSync(data);
    throw new Error(`${name}: zip compression method ${method} is not stored or deflate`);
  }
  return null;
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
