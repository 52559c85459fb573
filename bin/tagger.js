#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (run by `npm run setup` and `npm ci`, not
// by `npx tagger`: scripts/prepare.js).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
if (!existsSync(cli)) {
  process.stderr.write(
    'tagger: dist/cli/main.js is missing; run `npm run setup` (or `npm run build`) first.\n',
  );
  process.exit(1);
}
await import(cli);
