import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * `npm ci` must work on any OS and CPU with only some Node and npm: package-lock.json may not make a
 * required package depend on the platform, nor put one platform's executable where npm scripts
 * find `node` (node_modules/.bin comes first in their PATH).
 */
const root = path.join(import.meta.dirname, '..', '..');
const readJson = (file: string) => JSON.parse(readFileSync(path.join(root, file), 'utf8'));

interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  devOptional?: boolean;
  os?: string | string[];
  cpu?: string | string[];
  libc?: string | string[];
  bin?: Record<string, string>;
  hasInstallScript?: boolean;
}

/** Only a top-level package's bins are linked into the project's node_modules/.bin. */
const isTopLevel = (where: string) =>
  where.startsWith('node_modules/') && !where.slice('node_modules/'.length).includes('/node_modules/');

const listed = (value: string | string[] | undefined) => (value === undefined ? [] : [value].flat());

/** The platform fields npm checks before installing a package (npm-install-checks' checkPlatform). */
function platformOf(entry: LockEntry): string | undefined {
  const ties = (['os', 'cpu', 'libc'] as const)
    .filter((field) => listed(entry[field]).length > 0)
    .map((field) => `${field} ${listed(entry[field]).join(',')}`);
  return ties.length > 0 ? ties.join(', ') : undefined;
}

/**
 * What in a lockfile v3 ties the install to a platform. Only `optional: true` lets npm skip a
 * package whose platform does not match; `devOptional` (a dev dependency that a production
 * dependency also lists as optional) is still required by a default `npm ci`, so it excuses none.
 */
function platformTies(lock: { lockfileVersion?: number; packages?: Record<string, LockEntry> }): string[] {
  // Without the `packages` section npm reads the older `dependencies` one, which this does not check.
  if (!lock.packages || (lock.lockfileVersion ?? 0) < 2) return ['no lockfile v2/v3 `packages` section'];
  const problems: string[] = [];
  for (const [where, entry] of Object.entries(lock.packages)) {
    const platform = platformOf(entry);
    if (!platform) continue;
    if (entry.optional !== true)
      problems.push(`${where || 'the project'} is required but installs only on ${platform}`);
    if (entry.bin && 'node' in entry.bin) problems.push(`${where} puts a \`node\` for ${platform} in .bin`);
  }
  return problems;
}

describe('the install is the same on every platform', () => {
  const lock = readJson('package-lock.json');
  const pkg = readJson('package.json');

  it('no package in package-lock.json is tied to an OS, CPU or libc unless it is optional', () => {
    expect(platformTies(lock)).toEqual([]);
  });

  it("npm scripts' node is Node 24 or later from the cross-platform `node` package, its install script approved", () => {
    const providers = Object.entries(lock.packages as Record<string, LockEntry>)
      .filter(([where, entry]) => isTopLevel(where) && entry.bin && 'node' in entry.bin)
      .map(([where]) => where);
    expect(providers).toEqual(['node_modules/node']);
    const node: LockEntry = lock.packages['node_modules/node'];
    expect(Number(node.version?.split('.')[0])).toBeGreaterThanOrEqual(24);
    // Its preinstall is what fetches the platform's binary: unapproved, npm ci warns about it.
    expect(node.hasInstallScript).toBe(true);
    expect(pkg.allowScripts?.node).toBe(true);
  });

  it('the check itself flags what would break another platform and lets optional binaries pass', () => {
    const tiesOf = (entry: LockEntry) =>
      platformTies({ lockfileVersion: 3, packages: { '': {}, 'node_modules/x': entry } });
    expect(tiesOf({ optional: true, os: ['darwin'], cpu: ['arm64'] })).toEqual([]);
    expect(tiesOf({ os: ['darwin'] })).toEqual(['node_modules/x is required but installs only on os darwin']);
    expect(tiesOf({ dev: true, os: '!win32' })).toHaveLength(1);
    expect(tiesOf({ devOptional: true, libc: 'glibc' })).toHaveLength(1);
    expect(tiesOf({ os: 'linux', cpu: 'x64', bin: { node: 'bin/node' } })).toEqual([
      'node_modules/x is required but installs only on os linux, cpu x64',
      'node_modules/x puts a `node` for os linux, cpu x64 in .bin',
    ]);
    expect(tiesOf({ optional: true, os: ['win32'], bin: { node: 'node.exe' } })).toEqual([
      'node_modules/x puts a `node` for os win32 in .bin',
    ]);
    expect(platformTies({ lockfileVersion: 1 })).toHaveLength(1);
  });
});
