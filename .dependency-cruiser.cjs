/**
 * Architecture rules (see docs/ARCHITECTURE.md): dependencies point one way.
 *   model  -> nothing of ours (pure text/ML code, no I/O)
 *   tracking -> nothing of ours
 *   encoder -> nothing of ours (sentence encoders: files, ONNX Runtime, tokenizers; loaded by import())
 *   platform -> nothing of ours (what the machine or container lets a process use; read by train and serve)
 *   train  -> model, tracking
 *   served-models (what is served) -> model, tracking; encoder only by import() (encoder runs' encoders, in a worker thread)
 *   batch (batch tagging of files) -> model; of served-models only types; only cli imports it
 *   monitoring -> model; of tracking only the SQL driver plumbing it reuses (never served-models, http, train)
 *   http   -> model, served-models, monitoring (never tracking or train directly)
 *   app (the app factory) -> http, served-models, model, tracking, monitoring
 *   server (the serving process) -> app and everything below; never cli
 *   cli (the command line) -> anything; nothing imports it
 */

/**
 * The inspection page (ui/) is a browser bundle. Of Tagger's own code it may import only the API's response
 * types (src/http/api-types.ts, derived from the schemas) and only with `import type`; that module in turn
 * imports only types. So nothing of the server reaches the bundle. "Only types" is checked as
 * `pre-compilation-only` (a dependency the TypeScript compilation erases), not `type-only`: with
 * verbatimModuleSyntax, `import { type X } from …` still loads the module (`import {} from …`).
 */
const PAGE_RULES = [
  {
    name: 'ui-imports-only-api-types',
    comment: 'ui/ may import of src/ only src/http/api-types.ts, the response types derived from the schemas',
    severity: 'error',
    from: { path: '^ui/' },
    to: { path: '^src/', pathNot: '^src/http/api-types\\.ts$' },
  },
  {
    name: 'ui-imports-api-types-as-types',
    comment: 'ui/ imports src/http/api-types.ts with `import type` only, so the import is erased',
    severity: 'error',
    from: { path: '^ui/' },
    to: { path: '^src/http/api-types\\.ts$', dependencyTypesNot: ['pre-compilation-only'] },
  },
  {
    name: 'api-types-imports-only-types',
    comment: 'src/http/api-types.ts imports with `import type` only: nothing of it is left at run time',
    severity: 'error',
    from: { path: '^src/http/api-types\\.ts$' },
    to: { dependencyTypesNot: ['pre-compilation-only'] },
  },
];

module.exports = {
  forbidden: [
    ...PAGE_RULES,
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
      name: 'encoder-is-independent',
      comment: 'src/encoder (tokenizer + ONNX model) imports nothing else of Tagger, like src/tracking',
      severity: 'error',
      from: { path: '^src/encoder' },
      to: { path: '^src/(?!encoder)' },
    },
    {
      name: 'platform-is-independent',
      comment: 'src/platform (cgroup limits, cores, memory) imports nothing else of Tagger',
      severity: 'error',
      from: { path: '^src/platform' },
      to: { path: '^src/(?!platform)' },
    },
    {
      name: 'platform-users',
      comment:
        'the machine is asked by the processes that size themselves (train, serve, cli), never by model code',
      severity: 'error',
      from: { path: '^src/(model|tracking|encoder|monitoring|http|served-models|app\\.ts)' },
      to: { path: '^src/platform/' },
    },
    {
      name: 'encoder-users',
      comment:
        'the encoder is loaded by the layers that compute embeddings (train, cli; served-models and server when they serve encoder runs), never by model, tracking, monitoring, http or the app factory',
      severity: 'error',
      from: { path: '^src/(model|tracking|monitoring|http|app\\.ts)' },
      to: { path: '^src/encoder/' },
    },
    {
      name: 'encoder-loaded-lazily',
      comment:
        'the serving layers load src/encoder with import() (or imports its types): a process serving TF-IDF runs never loads ONNX Runtime',
      severity: 'error',
      from: { path: '^src/(served-models|server)/' },
      to: {
        path: '^src/encoder/',
        dependencyTypesNot: ['dynamic-import', 'type-only', 'pre-compilation-only'],
      },
    },
    {
      name: 'train-deps',
      severity: 'error',
      from: { path: '^src/train' },
      to: { path: '^src/(http|served-models|app|server|cli|monitoring)' },
    },
    {
      name: 'served-models-deps',
      severity: 'error',
      from: { path: '^src/served-models/' },
      to: { path: '^src/(http|train|app|server|cli|monitoring)' },
    },
    {
      name: 'batch-deps',
      comment:
        'src/batch tags files with a loaded model: model code, and of src/served-models only its types',
      severity: 'error',
      from: { path: '^src/batch/' },
      to: { path: '^src/(?!batch/|model/|served-models/)' },
    },
    {
      name: 'batch-uses-served-models-types-only',
      comment: 'src/batch reads the encoder lease type of src/served-models, nothing that runs',
      severity: 'error',
      from: { path: '^src/batch/' },
      to: { path: '^src/served-models/', dependencyTypesNot: ['type-only', 'pre-compilation-only'] },
    },
    {
      name: 'batch-users',
      comment: 'batch tagging of files is a command: only the command line imports src/batch',
      severity: 'error',
      from: { path: '^src/(?!batch/|cli/)' },
      to: { path: '^src/batch/' },
    },
    {
      name: 'monitoring-deps',
      comment:
        'src/monitoring records and judges live traffic: pure statistics from model, nothing served or trained',
      severity: 'error',
      from: { path: '^src/monitoring' },
      to: { path: '^src/(http|served-models|train|app|server|cli)' },
    },
    {
      name: 'monitoring-reuses-only-the-sql-driver',
      comment:
        'of src/tracking, src/monitoring reuses only the SQL driver, the SQL URI parser and URI redaction: records are not runs',
      severity: 'error',
      from: { path: '^src/monitoring' },
      to: { path: '^src/tracking/', pathNot: '^src/tracking/(sql/(driver|sql-store)|redact)\\.ts$' },
    },
    {
      name: 'http-deps',
      severity: 'error',
      from: { path: '^src/http' },
      to: { path: '^src/(tracking|train|app|server|cli)', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'app-deps',
      comment: 'the app factory is wired by the serving process and tests, never the other way round',
      severity: 'error',
      from: { path: '^src/app\\.ts$' },
      to: { path: '^src/(server|cli|train)/' },
    },
    {
      name: 'server-deps',
      comment: 'the serving process is started by the CLI; it never imports it',
      severity: 'error',
      from: { path: '^src/server/' },
      to: { path: '^src/(cli|train)/' },
    },
    {
      name: 'cli-is-the-top',
      comment: 'only the command line itself imports src/cli',
      severity: 'error',
      from: { path: '^src/(?!cli/)' },
      to: { path: '^src/cli/' },
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
    // true, and marks the dependencies compilation erases as `pre-compilation-only` (PAGE_RULES use it).
    tsPreCompilationDeps: 'specify',
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
