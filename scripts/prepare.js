#!/usr/bin/env node
// npm's `prepare` script: builds dist/ and dist/ui (`npm run build`) after `npm ci` and `npm install`, so
// `npm run setup` leaves a checkout ready to run. npm also runs it under `npm exec`: the first `npx tagger`
// in a checkout installs this very project into npx's cache as a `file:` link (npm 7+ does that to link a
// local package's bin) and runs its `prepare` — in the checkout — rebuilding dist/ under any server
// started from it, whose inspection page then lost its assets. `npx tagger` must only run the command
// line, so under `npm exec` (npm_command=exec) nothing is built.
import { spawnSync } from 'node:child_process';

if (process.env.npm_command === 'exec') process.exit(0);
// The npm that runs this script (npm_execpath: its CLI, a JS file), else the one on PATH.
const npm = process.env.npm_execpath;
const build = npm
  ? spawnSync(process.execPath, [npm, 'run', 'build'], { stdio: 'inherit' })
  : spawnSync('npm', ['run', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' });
process.exit(build.status ?? 1);
