/**
 * Batch tagging from and to `s3://` objects, against the S3 API server the deployment stack test runs
 * (moto's, from the project's venv; skipped without it, a failure under CI): two shards of one input
 * object written as two part objects equal a local single-process run row for row; a large output is a
 * multipart upload; a missing object or bucket is one clear line, and nothing is left behind.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliFolder, expectCleanFailure } from '../support/cli.js';
import { SAMPLE_DATA, venvPython } from '../support/components.js';
import { type S3Server, startS3 } from '../support/stack.js';

const python = venvPython();
const cli = cliFolder({ prefix: 'tagger-cli-s3-', trained: true });
const BUCKET = 'tagger-batch';

describe.skipIf(python === null)('tagger predict with s3:// input and output', () => {
  let s3: S3Server;
  let client: S3Client;
  let env: Record<string, string>;

  beforeAll(async () => {
    s3 = await startS3(python!, BUCKET);
    env = {
      AWS_ENDPOINT_URL_S3: s3.url,
      AWS_ACCESS_KEY_ID: s3.env.AWS_ACCESS_KEY_ID!,
      AWS_SECRET_ACCESS_KEY: s3.env.AWS_SECRET_ACCESS_KEY!,
      AWS_REGION: 'us-east-1',
    };
    client = new S3Client({
      endpoint: s3.url,
      forcePathStyle: true,
      region: 'us-east-1',
      credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! },
    });
    await client.send(new CreateBucketCommand({ Bucket: 'tagger-other' }));
  }, 120_000);

  afterAll(async () => {
    client?.destroy();
    await s3?.stop();
  });

  const getText = async (key: string): Promise<string> => {
    const object = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return object.Body!.transformToString();
  };
  const put = (key: string, body: string) =>
    client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
  const predict = (...args: string[]) =>
    cli.tagger(['predict', '--tracking-uri', cli.store, '--quiet', ...args], env);

  it('tags shards of one input object into part objects that merge into the single run', async () => {
    await put('in/projects.csv', await readFile(SAMPLE_DATA, 'utf8'));
    const local = join(cli.dir, 'single.csv');
    const single = await predict('--input', SAMPLE_DATA, '--output', local);
    expect(single.code, single.stderr).toBe(0);
    for (const i of [0, 1]) {
      const result = await predict(
        '--input',
        `s3://${BUCKET}/in/projects.csv`,
        '--output',
        `s3://${BUCKET}/out/part-${i}.csv`,
        '--shard',
        `${i}/2`,
      );
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(`(shard ${i}/2) into s3://${BUCKET}/out/part-${i}.csv`);
    }
    const parts = await Promise.all(
      [0, 1].map(
        async (i) => parse(await getText(`out/part-${i}.csv`), { columns: true }) as Record<string, string>[],
      ),
    );
    const expected = parse(await readFile(local, 'utf8'), { columns: true }) as Record<string, string>[];
    const union = parts.flat().sort((a, b) => Number(a.line) - Number(b.line));
    expect(parts[0]!.length).toBeGreaterThan(0);
    expect(parts[1]!.length).toBeGreaterThan(0);
    expect(union).toEqual(expected);
  }, 120_000);

  it('uploads a large output in parts', async () => {
    const rows = parse(await readFile(SAMPLE_DATA, 'utf8'), { columns: true }) as Record<string, string>[];
    const lines = Array.from({ length: 60 }, (_, copy) =>
      rows.map((row) => JSON.stringify({ id: `${copy}-${row.id}`, text: `${row.title} ${row.description}` })),
    ).flat();
    const input = join(cli.dir, 'large.jsonl');
    await writeFile(input, `${lines.join('\n')}\n`);
    const result = await cli.tagger(
      [
        'predict',
        '--tracking-uri',
        cli.store,
        '--quiet',
        '--input',
        input,
        '--output',
        `s3://${BUCKET}/large/tags.jsonl`,
      ],
      { ...env, TAGGER_S3_PART_BYTES: String(5 * 1024 * 1024) },
    );
    expect(result.code, result.stderr).toBe(0);
    const text = await getText('large/tags.jsonl');
    expect(text.length).toBeGreaterThan(5 * 1024 * 1024);
    const written = text.trim().split('\n');
    expect(written).toHaveLength(lines.length);
    expect(JSON.parse(written.at(-1)!).id).toBe(JSON.parse(lines.at(-1)!).id);
    // A multipart upload's ETag ends with its number of parts.
    const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'large/tags.jsonl' }));
    expect(head.ETag).toMatch(/-2"$/);
  }, 180_000);

  it('says in one line what is missing: the input object, the output bucket', async () => {
    expectCleanFailure(
      await predict('--input', `s3://${BUCKET}/no/such.csv`, '--output', join(cli.dir, 'x.csv')),
      /cannot read s3:\/\/tagger-batch\/no\/such\.csv: (NotFound|NoSuchKey)/,
    );
    expectCleanFailure(
      await predict('--input', SAMPLE_DATA, '--output', 's3://no-such-bucket/out.csv'),
      /cannot write s3:\/\/no-such-bucket\/out\.csv: (NotFound|NoSuchBucket)/,
    );
    const listed = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'no/' }));
    expect(listed.KeyCount ?? 0).toBe(0);
  }, 60_000);
});
