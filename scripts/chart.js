#!/usr/bin/env node
// `npm run chart:lint` / `npm run chart:render`: the Helm chart (deploy/helm/tagger) linted, rendered and
// validated against the Kubernetes schemas offline, by deploy/helm/check.py in the project's Python venv
// (helm-python-sdk: Helm's own SDK, no helm binary or cluster needed) — the checks the tests run.
//
//   npm run chart:lint -- --set mlflow.trackingUri=http://mlflow:5000 [-f my-values.yaml] [--set k=v]
//   npm run chart:render -- --set mlflow.trackingUri=http://mlflow:5000 > tagger.yaml
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const python = process.env.TAGGER_PYTHON || fileURLToPath(new URL('../.venv/bin/python', import.meta.url));
if (!existsSync(python)) {
  process.stderr.write(
    `chart: the Python venv is missing (${python}); create it once with \`bash scripts/setup-python.sh\` (about five minutes: it also holds the test tools), then run this again\n`,
  );
  process.exit(2);
}
const check = fileURLToPath(new URL('../deploy/helm/check.py', import.meta.url));
const result = spawnSync(python, [check, ...process.argv.slice(2)], {
  stdio: 'inherit',
  cwd: process.env.INIT_CWD || root,
});
process.exit(result.status ?? 1);
