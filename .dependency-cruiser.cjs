/**
 * Architecture rules (see docs/ARCHITECTURE.md): dependencies point one way.
 *   model  -> nothing of ours (pure text/ML code, no I/O)
 *   tracking -> nothing of ours
 *   train  -> model, tracking
 *   service -> model, tracking
 *   http   -> model, service (never tracking or train directly)
 *   app/cli/server (entry points) -> anything
 */
module.exports = {
  forbidden: [
    { name: 'no-cycles', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'model-is-pure',
      comment: 'src/model must not import other parts of Tagger nor do I/O',
      severity: 'error',
      from: { path: '^src/model' },
      to: { pathNot: ['^src/model', 'node_modules'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'model-no-io',
      severity: 'error',
      from: { path: '^src/model' },
      to: {
        path: '^(fs|node:fs|fs/promises|node:fs/promises|http|node:http|net|node:net|child_process|node:child_process)$',
      },
    },
    {
      name: 'tracking-is-independent',
      severity: 'error',
      from: { path: '^src/tracking' },
      to: { path: '^src/(?!tracking)' },
    },
    {
      name: 'train-deps',
      severity: 'error',
      from: { path: '^src/train' },
      to: { path: '^src/(http|service|app|serve|cli)' },
    },
    {
      name: 'service-deps',
      severity: 'error',
      from: { path: '^src/service' },
      to: { path: '^src/(http|train|app|serve|cli)' },
    },
    {
      name: 'http-deps',
      severity: 'error',
      from: { path: '^src/http' },
      to: { path: '^src/(tracking|train|app|serve|cli)', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'nothing-imports-bench',
      comment: 'bench/ (npm run bench) sits on top: src/ and test/ never import it',
      severity: 'error',
      from: { path: '^(src|test)/' },
      to: { path: '^bench/' },
    },
    {
      name: 'bench-deps',
      comment: 'bench/ imports src/, test/support/, itself, packages and built-ins; nothing else of ours',
      severity: 'error',
      from: { path: '^bench/' },
      to: { dependencyTypes: ['local'], pathNot: '^(bench|src|test/support)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
