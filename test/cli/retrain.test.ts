/**
 * `tagger retrain`: the served run's own training data (read again, digest checked) plus every feedback
 * label and label-issue fix, trained with its arguments, tested on the very same test rows, its lineage
 * recorded, held back as a candidate until `--promote` decides; and every bad input the issue lists — no
 * corrections, contradictory ones, parent data changed or gone, a retrain already running, a promotion
 * target that does not exist — one clear line each, nothing half-promoted. Commands run in-process
 * (test/support/cli.ts); the feedback is written to the record store as `tagger serve` writes it.
 */
import { copyFile, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heldOutLabel } from '../../src/cli/retrain-data.js';
import { decide, pairedCounts, promote, worseByChance } from '../../src/cli/retrain-promotion.js';
import { EVALUATION_TAGS } from '../../src/model/index.js';
import { openRecordStore, type RecordStore } from '../../src/monitoring/index.js';
import { readRuns } from '../../src/served-models/candidates.js';
import { DEFAULT_GATES, servingVerdict } from '../../src/served-models/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { readDataset } from '../../src/train/data.js';
import { separateTestRepeats } from '../../src/train/duplicates.js';
import { textKey } from '../../src/train/label-issues.js';
import { MODEL_CHOICE_TAG } from '../../src/train/log-run.js';
import { splitData } from '../../src/train/pipeline.js';
import { cliFolder, trainArgv } from '../support/cli.js';
import { SAMPLE_DATA } from '../support/components.js';
import { type FeedbackLabel, recordLabels, robotics } from '../support/feedback-labels.js';

const cli = cliFolder('tagger-retrain-');
const tagger = cli.tagger;

let uri: string;
let data: string;
let parent: string;
let scope: string;
let records: RecordStore;

/** Records predictions of `parent` and their feedback, as a server and POST /feedback would. */
const label = (labels: readonly FeedbackLabel[], runId = parent): Promise<string[]> =>
  recordLabels(
    records,
    {
      scope,
      runId,
      probabilities: {
        'computer-vision': 0.25,
        mlops: 0.25,
        'natural-language-processing': 0.25,
        other: 0.25,
      },
    },
    labels,
  );

/** Writes `content` to a new file of the test's folder and answers its path. */
let temps = 0;
async function writeTemp(content: string): Promise<string> {
  const path = join(cli.dir, `temp-${++temps}.csv`);
  await writeFile(path, content);
  return path;
}

async function withTracking<T>(work: (store: TrackingStore) => Promise<T>): Promise<T> {
  const store = await openTrackingStore(uri);
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

beforeAll(async () => {
  uri = `sqlite:///${join(cli.dir, 'mlflow.db')}`;
  data = join(cli.dir, 'projects.csv');
  await copyFile(SAMPLE_DATA, data);
  const trained = await tagger(trainArgv(uri, ['--json', '--no-label-issues'], { data }));
  expect(trained.code, trained.stderr).toBe(0);
  parent = JSON.parse(trained.stdout).run_id;
  scope = JSON.parse(trained.stdout).experiment_id;
  records = await openRecordStore(uri);
}, 240_000);

afterAll(async () => {
  await records?.close();
});

const retrain = (...args: string[]) =>
  tagger(['retrain', '--tracking-uri', uri, '--no-label-issues', '--quiet', ...args]);

describe('tagger retrain', () => {
  it('says there is nothing to retrain on when nobody corrected anything', async () => {
    const result = await retrain();
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^Nothing to retrain: no feedback label or label-issue fix to learn from in experiment 'best': nothing was trained\.$/m,
    );
  });

  it('refuses a promotion target that does not exist, before training, and a bad --promote', async () => {
    const missing = await retrain('--promote', 'models:/nope@champion');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /^tagger: --promote models:\/nope@champion: there is no registered model 'nope'/,
    );
    const bad = await retrain('--promote', 'runs:/abc/model');
    expect(bad.stderr).toMatch(/--promote runs:\/abc\/model: a promotion moves an alias/);
  });

  it('merges feedback and fixes into the served run’s data, keeps its test rows, records the lineage; a candidate until promoted', async () => {
    const rows = await readDataset(SAMPLE_DATA);
    const first = rows[0]!;
    const relabelled = first.tag === 'mlops' ? 'computer-vision' : 'mlops';
    const base = Date.now();
    await label([
      ...robotics(40),
      // A text of the data relabelled, then contradicted by a later label: the later one wins.
      { text: first.text, tag: 'other', receivedMs: base - 2_000 },
      { text: first.text.toUpperCase(), tag: relabelled, receivedMs: base - 1_000 },
      // Two of a new tag too rare to learn.
      { text: 'Quantum annealing for portfolio optimisation', tag: 'quantum' },
      { text: 'Qubit error correction with surface codes', tag: 'quantum' },
    ]);
    // A label-issue fix of another row (decided on the page).
    const fixed = rows[5]!;
    await records.putLabelReviews([
      {
        scope,
        textKey: textKey(fixed.text),
        text: `${fixed.text.slice(0, 20)}…`,
        givenTags: [fixed.tag],
        decision: 'fix',
        tags: ['other'],
        runId: parent,
        receivedMs: base,
      },
    ]);
    const result = await retrain('--json');
    expect(result.code, result.stderr).toBe(0);
    const answer = JSON.parse(result.stdout);
    expect(answer).toMatchObject({
      parent_run_id: parent,
      trained: true,
      corrections: { feedback: 44, fixes: 1, contradictions: 1, held_out: 0 },
      promotion: { asked: false, promoted: false },
    });
    // 40 + 2 new rows from feedback; row 0 relabelled by feedback (unless it is a test row), row 5 by the fix.
    expect(answer.merged.added.feedback).toBe(42);
    expect(answer.merged.relabelled.feedback + answer.merged.test_corrections).toBeGreaterThanOrEqual(1);
    expect(answer.new_tags).toEqual([
      { tag: 'robotics', rows: 40, learnt: true },
      { tag: 'quantum', rows: 2, learnt: false },
    ]);
    const child = answer.run_id as string;
    await withTracking(async (store) => {
      const [was, run] = [await store.getRun(parent), await store.getRun(child)];
      // The same test rows: the same digest, so tagger serve compares their f1s.
      expect(run!.tags[EVALUATION_TAGS.testSetDigest]).toBe(was!.tags[EVALUATION_TAGS.testSetDigest]);
      expect(run!.tags).toMatchObject({
        [EVALUATION_TAGS.promotion]: 'candidate',
        'tagger.retrain.parent_run_id': parent,
        'tagger.retrain.feedback_rows': String(
          answer.merged.added.feedback + answer.merged.relabelled.feedback,
        ),
        'tagger.retrain.fix_rows': String(answer.merged.relabelled.label_issue),
        'tagger.retrain.data_digest': expect.stringMatching(/^[0-9a-f]{16}$/),
      });
      expect(run!.params.seed).toBe(was!.params.seed);
      expect(
        run!.inputs!.map((input) => [input.dataset.name, input.tags['mlflow.data.context']]).sort(),
      ).toEqual([
        ['test.csv', 'testing'],
        ['train.csv', 'training'],
      ]);
      const merged = Buffer.from(await store.readArtifact(child, 'retrain/train.csv')).toString('utf8');
      // Split at the first space into title and description, so it reads back as the same text.
      expect(merged).toContain('"Robot","arm number 39 grasps');
      // A candidate is never served, however good its f1.
      const runs = await readRuns(store, 'best');
      expect(runs.ok && servingVerdict(runs.runs, child, DEFAULT_GATES).heldBack).toMatch(
        /retrained candidate/,
      );
    });
  }, 240_000);

  it('promotes only past the margin: a rejected run is never served and nothing changes', async () => {
    const rejected = await retrain('--promote', '--min-gain', '1');
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(rejected.stdout).toMatch(
      /^NOT PROMOTED to the best run of experiment 'best': its test f1 .* is not 1 above the served run's .*Nothing changed: run [0-9a-f]{32} stays served \(the best of experiment 'best' that passes the gates\)\.$/m,
    );
    // A negative margin accepts a run up to that much worse: promoted whatever its test f1.
    const promoted = await retrain('--promote', '--min-gain', '-1', '--json');
    const answer = JSON.parse(promoted.stdout);
    expect(answer.promotion).toMatchObject({ promoted: true, reasons: [] });
    expect(answer.promotion.checks).toEqual([
      expect.stringMatching(
        /^test f1 0\.\d{4} against the served run's 0\.\d{4} on the same test rows: [+-]0\.\d{4}, margin -1$/,
      ),
      'live labels not judged: 0 held out of the random share, fewer than --min-live-labels 20',
      'no test-leak warning',
    ]);
    await withTracking(async (store) => {
      const runs = await readRuns(store, 'best');
      expect(runs.ok && servingVerdict(runs.runs, answer.run_id, DEFAULT_GATES)).toMatchObject({
        heldBack: null,
      });
      expect((await store.getRun(answer.run_id))!.tags[EVALUATION_TAGS.promotion]).toBe('promoted');
    });
  }, 240_000);

  it('retrains a retrained run from the data it recorded, with the same test rows', async () => {
    // What the served (maybe retrained) run already learnt is nothing new: only new labels retrain.
    const same = await retrain('--json');
    const unchanged = JSON.parse(same.stdout);
    if (!unchanged.trained)
      expect(unchanged.reason).toMatch(/change none of run .* training rows: nothing new/);
    await label(robotics(3, 200));
    const promoted = await retrain('--promote', '--min-gain', '-1', '--json', '--allow-warnings');
    expect(promoted.code, promoted.stderr).toBe(0);
    const first = JSON.parse(promoted.stdout);
    await label(robotics(5, 100));
    const again = await retrain('--run-id', first.run_id, '--json');
    expect(again.code, again.stderr).toBe(0);
    const second = JSON.parse(again.stdout);
    expect(second.parent_run_id).toBe(first.run_id);
    await withTracking(async (store) => {
      const digests = await Promise.all(
        [parent, first.run_id, second.run_id].map(
          async (id) => (await store.getRun(id))!.tags[EVALUATION_TAGS.testSetDigest],
        ),
      );
      expect(new Set(digests).size).toBe(1);
    });
  }, 240_000);

  it("--model-choice chooses the model again on the merged rows (its choice logged); without it the replaced run's kind", async () => {
    const both = await retrain('--model-choice', '--args', '{"classifier":"fasttext"}');
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/--model-choice chooses the model, but --args names the one to train/);
    const alone = await retrain('--time-budget', '60');
    expect(alone.code).toBe(1);
    expect(alone.stderr).toMatch(/--time-budget belongs to the model choice: add --model-choice/);
    await label(robotics(4, 300));
    const result = await retrain('--run-id', parent, '--model-choice', '--candidates', 'fasttext', '--json');
    expect(result.code, result.stderr).toBe(0);
    const child = JSON.parse(result.stdout).run_id as string;
    await withTracking(async (store) => {
      const [before, after] = await Promise.all([store.getRun(parent), store.getRun(child)]);
      expect(before!.params.classifier).not.toBe('fasttext');
      expect(after!.params.classifier).toBe('fasttext');
      expect(after!.tags[MODEL_CHOICE_TAG]).toBe('fasttext');
    });
  }, 240_000);

  it('holds out part of the random share and scores both models on it', async () => {
    // Labels drawn at random (selection random_share) of a tag the served run lacks: about half are held
    // out of training, by id.
    const drawn = Array.from({ length: 70 }, (_, i) => ({
      text: `Humanoid walker ${i} crosses rough terrain with a learned locomotion controller on legs`,
      tag: 'locomotion',
      selection: 'random_share' as const,
    }));
    const ids = await label(drawn);
    const held = ids.filter((id) => heldOutLabel(id, 0.5)).length;
    expect(held).toBeGreaterThan(5);
    const result = await retrain('--json', '--min-live-labels', '5');
    expect(result.code, result.stderr).toBe(0);
    const answer = JSON.parse(result.stdout);
    expect(answer.corrections.held_out).toBe(held);
    expect(answer.live_holdout.size).toBe(held);
    // The replaced run knows no locomotion tag; the new one learnt it from the other half.
    expect(answer.live_holdout.parent_f1).toBeLessThan(answer.live_holdout.f1);
    expect(answer.promotion.checks).toContainEqual(
      expect.stringMatching(
        new RegExp(`^live f1 \\d\\.\\d{4} is no worse than \\d\\.\\d{4} on ${held} held-out labels$`),
      ),
    );
    await withTracking(async (store) => {
      const run = (await store.getRun(answer.run_id))!;
      expect(run.metrics).toMatchObject({ live_holdout_size: held, live_holdout_f1: answer.live_holdout.f1 });
      // None of the held-out texts was trained on.
      const merged = Buffer.from(await store.readArtifact(answer.run_id, 'retrain/train.csv')).toString(
        'utf8',
      );
      const heldTexts = drawn
        .filter((_, i) => heldOutLabel(ids[i]!, 0.5))
        .map((d) => d.text.split(' ').slice(1).join(' '));
      for (const text of heldTexts) expect(merged).not.toContain(text);
    });
  }, 240_000);

  it('stops with one line when the parent data changed or is gone, and takes it back with --data', async () => {
    const original = join(cli.dir, 'original.csv');
    await copyFile(data, original);
    await writeFile(data, `${await readFile(data, 'utf8')}"one more","row",mlops\n`);
    const changed = await retrain('--run-id', parent);
    expect(changed.code).toBe(1);
    expect(changed.stderr).toMatch(
      /^tagger: retrain: the training data of run [0-9a-f]{32}, .*projects\.csv, changed since the run was trained: its digest is [0-9a-f]{16}, the run recorded [0-9a-f]{16}; give the file it was trained on with --data <file>$/m,
    );
    await rm(data);
    const gone = await retrain('--run-id', parent);
    expect(gone.stderr).toMatch(
      /projects\.csv, is gone: give the file it was trained on with --data <file> \(digest [0-9a-f]{16}\)/,
    );
    const wrong = await retrain(
      '--run-id',
      parent,
      '--data',
      SAMPLE_DATA.replace('projects.csv', 'projects-multilabel.csv'),
    );
    expect(wrong.stderr).toMatch(/--data .* is not the training data of run .*: its digest is/);
    const back = await retrain('--run-id', parent, '--data', original);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toMatch(/its training data .*original\.csv \(digest [0-9a-f]{16}, as recorded\)/);
    await copyFile(original, data);
    // A --data that is not the run's file is passed over while the recorded one can be read (a scheduled
    // retrain keeps one --data for the first served run; later runs keep theirs as artifacts).
    await label(robotics(2, 400));
    const passedOver = await retrain(
      '--run-id',
      parent,
      '--data',
      SAMPLE_DATA.replace('projects.csv', 'projects-multilabel.csv'),
    );
    expect(passedOver.code, passedOver.stderr).toBe(0);
    expect(passedOver.stdout).toMatch(
      /its training data .*projects\.csv \(digest [0-9a-f]{16}, as recorded\)/,
    );
  }, 240_000);

  it('feedback export --merged writes what retrain trains on; the plain export adds the fixes it can', async () => {
    const merged = join(cli.dir, 'merged.csv');
    const test = join(cli.dir, 'merged-test.csv');
    const result = await tagger([
      'feedback',
      'export',
      '--merged',
      '--output',
      merged,
      '--test-output',
      test,
      '--tracking-uri',
      uri,
      '--json',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const answer = JSON.parse(result.stdout);
    const rows = await readDataset(merged);
    expect(rows).toHaveLength(answer.rows);
    expect((await readDataset(test)).length).toBe(answer.test_rows);
    // Exactly the training file a retrain from the same run would log.
    const again = await retrain('--run-id', answer.parent_run_id, '--json');
    const child = JSON.parse(again.stdout);
    if (child.trained) {
      await withTracking(async (store) => {
        const logged = Buffer.from(await store.readArtifact(child.run_id, 'retrain/train.csv')).toString(
          'utf8',
        );
        expect(logged).toBe(await readFile(merged, 'utf8'));
      });
    }
    // A fix of a text shown whole is a row of the plain export too.
    const rowsOfData = await readDataset(SAMPLE_DATA);
    const whole = rowsOfData[9]!;
    await records.putLabelReviews([
      {
        scope,
        textKey: textKey(whole.text),
        text: whole.text,
        givenTags: [whole.tag],
        decision: 'fix',
        tags: ['other'],
        runId: parent,
        receivedMs: Date.now(),
      },
    ]);
    const plain = join(cli.dir, 'plain.csv');
    const exported = await tagger(['feedback', 'export', '--output', plain, '--tracking-uri', uri, '--json']);
    const counts = JSON.parse(exported.stdout);
    expect(counts).toMatchObject({ label_issue_fixes: 1, cut_fixes: 1 });
    expect(
      (await readDataset(plain)).some((row) => row.text.trim() === whole.text.trim() && row.tag === 'other'),
    ).toBe(true);
  }, 240_000);

  it('names the run that is served when nothing changes, not the one it retrained from', async () => {
    const served = await withTracking(async (store) => {
      const runs = await readRuns(store, 'best');
      return runs.ok ? servingVerdict(runs.runs, '', DEFAULT_GATES).served?.info.runId : undefined;
    });
    expect(served).toBeDefined();
    // The first parent, no longer served once a retrained run was promoted above it (or still served).
    await label(robotics(2, 600));
    const result = await retrain('--run-id', parent, '--promote', '--min-gain', '1');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(`^NOT PROMOTED .*Nothing changed: run ${served} stays served \\(the best of`, 'm'),
    );
  }, 240_000);

  it('keeps labels of near copies of test rows out of training: a retrain cannot gain by its own test rows', async () => {
    const rows = await readDataset(data);
    const run = (await withTracking((store) => store.getRun(parent)))!;
    const split = splitData(rows, false, Number(run.params.seed));
    const test = separateTestRepeats([...split.train, ...split.validation], split.test).test;
    // Issue 40's probe: test texts with "." and " #i" appended, in upper case, labelled with their own tag.
    const probes = test.slice(0, 30).map((row, i) => ({
      text: i % 3 === 0 ? `${row.text}.` : i % 3 === 1 ? `${row.text} #${i}` : `${row.text.toUpperCase()}!`,
      tag: row.tag,
    }));
    await label([...probes, ...robotics(2, 700)]);
    const result = await retrain('--run-id', parent, '--json');
    expect(result.code, result.stderr).toBe(0);
    const answer = JSON.parse(result.stdout);
    expect(answer.trained).toBe(true);
    // None is the very spelling of a test text ("." or " #i" appended, or upper case and "!"): all are
    // kept out as the same text as a test row once punctuation, digits and case are set aside.
    expect(answer.merged.near_test.feedback).toBe(probes.length);
    expect(answer.warnings).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^kept out of training so the test rows of run ${parent} score only texts the model never learnt: `,
        ),
      ),
    );
    await withTracking(async (store) => {
      const child = (await store.getRun(answer.run_id))!;
      expect(child.tags[EVALUATION_TAGS.dataChecks]).toMatch(/corrections_near_test/);
      expect(child.tags[EVALUATION_TAGS.testSetDigest]).toBe(run.tags[EVALUATION_TAGS.testSetDigest]);
      const trained = await readDataset(
        await writeTemp(
          Buffer.from(await store.readArtifact(answer.run_id, 'retrain/train.csv')).toString('utf8'),
        ),
      );
      const texts = new Set(trained.map((row) => row.text.toLowerCase().replace(/\W+/g, ' ').trim()));
      for (const probe of probes) {
        expect(texts.has(probe.text.toLowerCase().replace(/\W+/g, ' ').trim())).toBe(false);
      }
    });
  }, 240_000);

  it('runs one retrain of an experiment at a time: a second one says so and trains nothing', async () => {
    const lease = await records.takeLease(`retrain:${scope}`, 'another-host:1234', 60_000, Date.now());
    expect(lease.holder).toBe('another-host:1234');
    try {
      const second = await retrain();
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(
        /^tagger: retrain: another retrain of experiment 'best' is running \(another-host:1234, since .*\); one at a time, so this one stops without training/m,
      );
    } finally {
      await records.releaseLease(`retrain:${scope}`, 'another-host:1234');
    }
  });

  it('moves a registry alias when it promotes, and leaves it when it does not', async () => {
    const registered = await tagger(['alias', 'set', 'tagger', 'champion', '1', '--tracking-uri', uri]);
    // No model yet: register the parent first.
    if (registered.code !== 0) {
      await withTracking(async (store) => {
        await store.registry.createRegisteredModel('tagger');
        const version = await store.registry.createModelVersion('tagger', {
          source: `runs:/${parent}/model`,
          runId: parent,
        });
        await store.registry.setAlias('tagger', 'champion', version.version);
      });
    }
    const kept = await retrain('--promote', 'models:/tagger@champion', '--min-gain', '1');
    expect(kept.stdout).toMatch(/NOT PROMOTED to models:\/tagger@champion/);
    await withTracking(async (store) => {
      expect((await store.registry.getRegisteredModel('tagger'))!.aliases.champion).toBe(1);
    });
    const moved = await retrain(
      '--promote',
      'models:/tagger@champion',
      '--min-gain',
      '0',
      '--allow-warnings',
      '--json',
    );
    const answer = JSON.parse(moved.stdout);
    await withTracking(async (store) => {
      const champion = (await store.registry.getRegisteredModel('tagger'))!.aliases.champion!;
      const version = await store.registry.getModelVersion('tagger', champion);
      expect(version!.runId).toBe(answer.promotion.promoted ? answer.run_id : parent);
    });
  }, 240_000);
});

describe('the promotion decision', () => {
  const outcome = (f1: number, kinds: string[] = []) =>
    ({
      performance: { overall: { precision: f1, recall: f1, f1, num_samples: 100 } },
      dataWarnings: kinds.map((kind) => ({ kind, message: `${kind} warning` })),
    }) as unknown as Parameters<typeof decide>[1];
  const flags = { minGain: 0.005, minLiveLabels: 20, allowWarnings: false };
  const live = (parent: number | null, child: number | null, size: number) => ({ parent, child, size });

  it('promotes past the margin, no worse live, with clean data checks', () => {
    expect(decide(flags, outcome(0.91), 0.9, live(0.8, 0.8, 30), null)).toMatchObject({
      promote: true,
      reasons: [],
    });
  });

  it('refuses, saying why: under the margin, worse live, a leak or repeated rows, a gate', () => {
    expect(decide(flags, outcome(0.904), 0.9, live(null, null, 0), null).reasons).toEqual([
      expect.stringMatching(
        /^its test f1 0\.9040 is not 0\.005 above the served run's 0\.9000 on the same test rows \(\+0\.0040\)$/,
      ),
    ]);
    expect(decide(flags, outcome(0.95), 0.9, live(0.8, 0.7, 30), null).reasons).toEqual([
      "its f1 on the 30 held-out live labels is worse: 0.7000 against the served run's 0.8000",
    ]);
    const leaking = decide(
      flags,
      outcome(0.95, ['test_leak', 'folded_tags']),
      0.9,
      live(null, null, 0),
      null,
    );
    expect(leaking.reasons).toEqual([
      expect.stringMatching(
        /^its data checks warned: test_leak warning \(--allow-warnings promotes anyway\)$/,
      ),
    ]);
    expect(
      decide(
        { ...flags, allowWarnings: true },
        outcome(0.95, ['duplicate_rows']),
        0.9,
        live(null, null, 0),
        null,
      ).promote,
    ).toBe(true);
    expect(
      decide(flags, outcome(0.95), 0.9, live(null, null, 0), 'its test split has 9 rows').reasons,
    ).toEqual(['tagger serve would hold it back: its test split has 9 rows']);
  });

  it('judges "worse on live labels" by the paired test: lower by chance is not worse', () => {
    expect(worseByChance(5, 0)).toBeCloseTo(1 / 32);
    expect(worseByChance(3, 1)).toBeCloseTo(5 / 16);
    expect(worseByChance(2, 4)).toBe(1);
    expect(worseByChance(0, 0)).toBe(1);
    // 2,000 disagreements: the sum stays finite and a 52/48 split is chance.
    expect(worseByChance(1040, 960)).toBeGreaterThan(0.03);
    expect(worseByChance(1100, 900)).toBeLessThan(1e-5);
    expect(pairedCounts([true, true, false, false], [true, false, true, false])).toEqual({
      parentOnly: 1,
      childOnly: 1,
    });
    const chance = decide(
      flags,
      outcome(0.95),
      0.9,
      { ...live(0.82, 0.8, 300), parentOnly: 12, childOnly: 8 },
      null,
    );
    expect(chance.promote).toBe(true);
    expect(chance.checks).toContainEqual(
      expect.stringMatching(
        /^live f1 0\.8000 against 0\.8200 on 300 held-out labels is within chance \(the served run alone right on 12, the new run alone on 8: p = 0\.25/,
      ),
    );
    const worse = decide(
      flags,
      outcome(0.95),
      0.9,
      { ...live(0.85, 0.8, 300), parentOnly: 25, childOnly: 8 },
      null,
    );
    expect(worse.reasons).toEqual([
      expect.stringMatching(
        /^its f1 on the 300 held-out live labels is worse: 0\.8000 against the served run's 0\.8500 \(the served run alone right on 25, the new run alone on 8: p = 0\.00/,
      ),
    ]);
  });

  it('does not judge live labels it has too few of, and says so', () => {
    expect(decide(flags, outcome(0.95), 0.9, live(0.9, 0.1, 19), null)).toMatchObject({
      promote: true,
      checks: expect.arrayContaining([
        'live labels not judged: 19 held out of the random share, fewer than --min-live-labels 20',
      ]),
    });
  });
});

describe('promoting', () => {
  it('moves nothing when the alias cannot be moved: the run stays unpromoted, and the error says so', async () => {
    const tagged: Record<string, string>[] = [];
    const store = {
      registry: {
        getRegisteredModel: async () => ({ name: 'tagger', aliases: { champion: 1 }, latestVersion: 1 }),
        createRegisteredModel: async () => undefined,
        createModelVersion: async () => ({ name: 'tagger', version: 2, source: 's', runId: 'r2' }),
        setAlias: async () => {
          throw new Error('the registry is down');
        },
      },
      logBatch: async (_runId: string, batch: { tags?: Record<string, string> }) => {
        if (batch.tags) tagged.push(batch.tags);
      },
    } as unknown as Parameters<typeof promote>[0];
    await expect(
      promote(store, 'r2', {
        kind: 'alias',
        uri: 'models:/tagger@champion',
        name: 'tagger',
        alias: 'champion',
      }),
    ).rejects.toThrow(
      /run r2 was registered as version 2 of 'tagger', but the alias 'champion' could not be moved to it \(the registry is down\): nothing was promoted; models:\/tagger@champion still points where it did/,
    );
    // The promotion tag is the last step: never set when the alias did not move.
    expect(tagged).toEqual([]);
  });
});
