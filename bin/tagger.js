#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (run by `npm run setup` and `npm ci`, not
// by `npx tagger`: scripts/prepare.js). Written for any Node.js that may run it, so that an older one
// (Debian's 20, say) is told what to do instead of failing on a module it lacks (node:sqlite).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The oldest Node.js Tagger runs on (package.json's engines). */
const NEEDED = [24, 11];
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < NEEDED[0] || (major === NEEDED[0] && minor < NEEDED[1])) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const local = fileURLToPath(new URL('../node_modules/.bin/node', import.meta.url));
  process.stderr.write(
    `tagger: needs Node.js ${NEEDED.join('.')} or newer; this is ${process.version} (${process.execPath}).\n` +
      (existsSync(local)
        ? `The Node 24 that \`npm run setup\` installed is ${local}: run \`npx tagger …\` in ${root}, or put it first on PATH in this shell (export PATH="${root}node_modules/.bin:$PATH").\n`
        : `Run \`npm run setup\` in ${root}: it installs Node 24 from the npm registry, and \`npx tagger …\` then runs on it.\n`),
  );
  process.exit(1);
}

const cli = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
if (!existsSync(cli)) {
  process.stderr.write(
    'tagger: dist/cli/main.js is missing; run `npm run setup` (or `npm run build`) first.\n',
  );
  process.exit(1);
}
await import(cli);
