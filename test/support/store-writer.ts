/**
 * A separate process that writes to a tracking store, for tests of concurrent writers: opens the store
 * at argv[2], gets or creates experiment argv[3], then logs argv[4] complete runs (params, a metric
 * history, an artifact, FINISHED). Prints the run ids as one JSON line. Run with `node --import tsx`.
 */
import { openTrackingStore } from '../../src/tracking/index.js';
import { getOrCreateExperiment } from '../../src/tracking/store.js';

const [uri, experiment, count] = process.argv.slice(2);
if (!uri || !experiment || !count) throw new Error('usage: store-writer.ts <uri> <experiment> <runs>');
const store = await openTrackingStore(uri);
const experimentId = await getOrCreateExperiment(store, experiment);
const ids: string[] = [];
for (let index = 0; index < Number(count); index += 1) {
  const { info } = await store.createRun(experimentId, { runName: `writer-${process.pid}-${index}` });
  await store.logBatch(info.runId, {
    params: { writer: String(process.pid), index: String(index) },
    metrics: Array.from({ length: 5 }, (_, step) => ({
      key: 'f1',
      value: step / 10,
      timestamp: Date.now(),
      step,
    })),
  });
  await store.logArtifact(info.runId, 'model/weights.bin', Uint8Array.of(index % 256));
  await store.updateRun(info.runId, { status: 'FINISHED' });
  ids.push(info.runId);
}
await store.close();
console.log(JSON.stringify({ experimentId, ids }));
