// The runtime Tagger promises (Node 24 LTS) is the one the tests run on, and the one `npm run setup` installs.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const readJson = <T>(path: string): T =>
  JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as T;
const pkg = readJson<{
  engines: { node: string };
  scripts: Record<string, string>;
  devDependencies: Record<string, string>;
}>('../package.json');

/** `^24.11.0` → [24, 11, 0]: the only range form package.json uses for Node (asserted below). */
const caretFloor = (range: string): number[] => {
  expect(range).toMatch(/^\^\d+\.\d+\.\d+$/);
  return range.slice(1).split('.').map(Number);
};
const parts = (version: string): number[] => version.split('.').map(Number);
/** Whether `version` satisfies a caret range `^M.m.p` (same major, not below the floor). */
const inCaret = (version: string, range: string): boolean => {
  const [major, minor, patch] = caretFloor(range);
  const [vMajor, vMinor, vPatch] = parts(version);
  return vMajor === major && (vMinor! > minor! || (vMinor === minor && vPatch! >= patch!));
};

describe('the Node runtime', () => {
  it('runs these tests on Node 24, within engines (npm scripts use the pinned node package)', () => {
    expect(parts(process.versions.node)[0], process.version).toBe(24);
    expect(inCaret(process.versions.node, pkg.engines.node), process.version).toBe(true);
  });

  it('installs, in `npm run setup`, the Node version the node devDependency resolved to', () => {
    const pinned = /--package=node@(\d+\.\d+\.\d+) /.exec(pkg.scripts.setup ?? '')?.[1];
    expect(pinned, 'the setup script pins node@x.y.z').toBeDefined();
    expect(inCaret(pinned!, pkg.devDependencies.node!)).toBe(true);
    expect(inCaret(pinned!, pkg.engines.node)).toBe(true);
    expect(readJson<{ version: string }>('../node_modules/node/package.json').version).toBe(pinned);
    expect(process.versions.node).toBe(pinned);
  });
});
