/** `tagger serve`: the serving process (src/server/) with flags generated from its settings table. */
import { type Command, Option } from 'commander';
import { runServe } from '../server/cluster.js';
import { printableConfig, SERVE_SETTINGS, type ServeFlags } from '../server/config.js';
import { startedByNpm, watchParent } from '../server/parent-watch.js';
import { runServeCommand } from '../server/server.js';
import type { CliIo } from './io.js';

/** `explain` turns an error into the one line printed after `tagger:` (the workers' failures too). */
export function registerServe(program: Command, io: CliIo, explain: (error: unknown) => string): void {
  const serve = program
    .command('serve')
    .description(
      'Serve the prediction API (best run of an experiment, or one saved model with --model). Every setting can also come from its environment variable or a config file; flags win, then variables, then the file (docs/configuration.md).',
    )
    .option(
      '--print-config',
      'print every setting, its value and where it came from (secrets masked), and exit without serving',
    );
  // Generated from the one settings table; no `.env()`: src/server/config.ts reads the variables itself, so a
  // bad value is blamed on where it really came from.
  for (const setting of SERVE_SETTINGS) {
    const fallback = setting.default === null ? '' : `; default ${setting.default}`;
    serve.addOption(
      new Option(`${setting.flag} ${setting.arg}`, `${setting.help} (env ${setting.env}${fallback})`),
    );
  }
  serve.action(async (flags: ServeFlags & { printConfig?: boolean }) => {
    if (flags.printConfig) {
      io.stdout.write(printableConfig(flags, process.env));
      return;
    }
    // Started by npm, the server stops when npm does, even though npm's signal never reaches it.
    const stopWatching = startedByNpm(process.env)
      ? watchParent(() => process.kill(process.pid, 'SIGTERM'))
      : undefined;
    try {
      await runServe(flags, process.env, () => runServeCommand(flags, process.env), explain);
    } finally {
      stopWatching?.();
    }
  });
}
