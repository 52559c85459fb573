/**
 * A test-only preload for a real `tagger train` process (`node --import tsx --import <this file>
 * src/cli/main.ts train …`): the file store stops right after storing the first model file of a run, prints
 * `paused <run id>` on stderr, and carries on once the process receives SIGINT or SIGTERM. A test can so
 * signal a training at a known point of logging — some artifacts stored, the run not finished — without
 * sleeps and without a hook in Tagger's own code. `test/train/log-run-signals.test.ts` uses it.
 */
import { FileTrackingStore } from '../../src/tracking/file/file-store.js';
import { pauseAtFirstModelFile } from './pause-at-model-file.js';

pauseAtFirstModelFile(FileTrackingStore, () => {
  // Registered after Tagger's own listeners (logging has begun), so those see the signal first.
  const handled = {
    SIGINT: process.listenerCount('SIGINT') > 0,
    SIGTERM: process.listenerCount('SIGTERM') > 0,
  };
  return new Promise<void>((resume) => {
    // Signal listeners do not keep Node running: without a handle it would exit (13, unsettled await).
    const keepAlive = setInterval(() => {}, 60_000);
    const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void => {
      clearInterval(keepAlive);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      // A signal Tagger does not handle must still do what it does without this preload: end the process.
      if (!handled[signal]) process.kill(process.pid, signal);
      else resume();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
});
