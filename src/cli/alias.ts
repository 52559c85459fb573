/** `tagger alias set|delete|list`: moves the Model Registry's aliases that `serve --model-uri` follows. */
import type { Command } from 'commander';
import { validateAlias, validateModelName, validateSettableAlias } from '../tracking/index.js';
import { TrackingError } from '../tracking/store.js';
import { parseInteger, trackingOption, withStore } from './inputs.js';
import type { CliIo } from './io.js';

interface AliasFlags {
  trackingUri?: string;
  json?: boolean;
}

async function aliasSetCommand(
  name: string,
  alias: string,
  version: number,
  flags: AliasFlags,
  io: CliIo,
): Promise<void> {
  validateModelName(name);
  validateSettableAlias(alias);
  const moved = await withStore(flags.trackingUri, async (store) => {
    const before = (await store.registry.getRegisteredModel(name))?.aliases[alias] ?? null;
    await store.registry.setAlias(name, alias, version);
    const target = await store.registry.getModelVersion(name, version);
    return { before, runId: target?.runId ?? null };
  });
  if (flags.json) {
    io.stdout.write(
      `${JSON.stringify({ name, alias, version, previous_version: moved.before, run_id: moved.runId })}\n`,
    );
    return;
  }
  const from =
    moved.before === null ? '' : moved.before === version ? ' (unchanged)' : ` (was version ${moved.before})`;
  io.stdout.write(
    `models:/${name}@${alias} → version ${version}${from}, run ${moved.runId ?? '(none)'}; servers following it swap at their next reload.\n`,
  );
}

async function aliasDeleteCommand(name: string, alias: string, flags: AliasFlags, io: CliIo): Promise<void> {
  validateModelName(name);
  validateAlias(alias);
  await withStore(flags.trackingUri, (store) => store.registry.deleteAlias(name, alias));
  if (!flags.json) io.stdout.write(`Deleted alias '${alias}' of model '${name}'.\n`);
  else io.stdout.write(`${JSON.stringify({ name, alias, deleted: true })}\n`);
}

async function aliasListCommand(name: string, flags: AliasFlags, io: CliIo): Promise<void> {
  validateModelName(name);
  const model = await withStore(flags.trackingUri, (store) => store.registry.getRegisteredModel(name));
  if (model === null) throw new TrackingError('NOT_FOUND', `tracking: no registered model named '${name}'`);
  if (flags.json) {
    io.stdout.write(
      `${JSON.stringify({ name, aliases: model.aliases, latest_version: model.latestVersion })}\n`,
    );
    return;
  }
  const entries = Object.entries(model.aliases).sort(([a], [b]) => a.localeCompare(b));
  const lines = entries.map(([alias, version]) => `${alias}\tversion ${version}`);
  io.stdout.write(
    `${[...lines, `(latest: ${model.latestVersion === null ? 'no versions' : `version ${model.latestVersion}`})`].join('\n')}\n`,
  );
}

export function registerAlias(program: Command, io: CliIo): void {
  const alias = program
    .command('alias')
    .description(
      "Move the Model Registry's aliases (what `serve --model-uri models:/<name>@<alias>` follows)",
    );
  alias
    .command('set')
    .description('Point an alias at a version (servers following it swap at their next reload)')
    .argument('<model>', 'registered model name')
    .argument('<alias>', 'alias, e.g. champion')
    .argument('<version>', 'version number', parseInteger('<version>', 1))
    .addOption(trackingOption())
    .option('--json', 'print one JSON object')
    .action((name: string, aliasName: string, version: number, flags: AliasFlags) =>
      aliasSetCommand(name, aliasName, version, flags, io),
    );
  alias
    .command('delete')
    .description('Remove an alias')
    .argument('<model>', 'registered model name')
    .argument('<alias>', 'alias')
    .addOption(trackingOption())
    .option('--json', 'print one JSON object')
    .action((name: string, aliasName: string, flags: AliasFlags) =>
      aliasDeleteCommand(name, aliasName, flags, io),
    );
  alias
    .command('list')
    .description("A registered model's aliases and newest version")
    .argument('<model>', 'registered model name')
    .addOption(trackingOption())
    .option('--json', 'print one JSON object')
    .action((name: string, flags: AliasFlags) => aliasListCommand(name, flags, io));
}
