/**
 * What the pause preloads share (`pause-logging.ts` on the file store, `pause-sql-logging.ts` on the SQL
 * store): a store class's `logArtifact` made to stop once, right after the first model file of a run is
 * stored — late in logging: the run, its metrics and other artifacts are there, the run is not finished
 * — print `paused <run id>` on stderr, and carry on when `resumed()` resolves.
 */
type LogArtifact = (runId: string, path: string, content: Uint8Array) => Promise<void>;

export function pauseAtFirstModelFile(
  store: { prototype: { logArtifact: LogArtifact } },
  resumed: () => Promise<void>,
): void {
  const logArtifact = store.prototype.logArtifact;
  let paused = false;
  store.prototype.logArtifact = async function (this: unknown, runId, path, content): Promise<void> {
    await logArtifact.call(this, runId, path, content);
    if (paused || !path.startsWith('model/')) return;
    paused = true;
    const resume = resumed();
    process.stderr.write(`paused ${runId}\n`);
    await resume;
  };
}
