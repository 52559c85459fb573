/**
 * `s3://bucket/key` inputs and outputs of batch tagging, through the AWS SDK v3 (@aws-sdk/client-s3,
 * loaded with `import()` only when an s3:// URL is used). Credentials and region come from the SDK's
 * usual chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, a web identity token or an instance
 * role; AWS_REGION or AWS_DEFAULT_REGION, else us-east-1). Another S3 API server (MinIO, Ceph, moto) is
 * reached with AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, addressed path-style (`<endpoint>/<bucket>/<key>`),
 * which such servers expect.
 *
 * An input is streamed (GetObject); an output is written to a local temporary file and uploaded when
 * complete (PutObject, or a multipart upload in parts of MULTIPART_BYTES), so the object appears whole or not at
 * all, as a local output appears by rename.
 *
 * Every call has a timeout (TAGGER_S3_TIMEOUT_MS, default 30 s: connecting, and then any stretch without
 * a byte sent or received — an endpoint that accepts and never answers fails instead of hanging), tried
 * at most AWS_MAX_ATTEMPTS times (the SDK's setting, default 3), and takes an AbortSignal, so a stop
 * signal ends it at once. A malformed URL is an S3ConfigError, a message for a person.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { PassThrough, type Readable } from 'node:stream';

type S3Module = typeof import('@aws-sdk/client-s3');

export interface S3Location {
  bucket: string;
  key: string;
}

/**
 * Parts of a multipart upload (S3 wants 5 MiB to 5 GiB each, at most 10,000 parts: 64 MiB parts take
 * outputs up to 640 GB). TAGGER_S3_PART_BYTES changes it (at least 5 MiB).
 */
export const MULTIPART_BYTES = 64 * 1024 * 1024;
const MIN_PART_BYTES = 5 * 1024 * 1024;

function partBytes(): number {
  const set = Number(process.env.TAGGER_S3_PART_BYTES);
  return Number.isInteger(set) && set >= MIN_PART_BYTES ? set : MULTIPART_BYTES;
}

export const isS3Url = (path: string): boolean => /^s3:\/\//i.test(path);

/** An s3:// URL that names no object (no bucket, no key, a bucket name S3 refuses), or a bad S3 setting. */
export class S3ConfigError extends Error {
  override readonly name = 'S3ConfigError';
}

/** S3's rule for bucket names: 3–63 lowercase letters, digits, dots and hyphens, a letter or digit at each end. */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * `s3://bucket/some/key.csv` → { bucket, key }; throws an S3ConfigError saying what is wrong otherwise.
 * @example parseS3Url('s3://tags/out/part-0.csv') // { bucket: 'tags', key: 'out/part-0.csv' }
 */
export function parseS3Url(url: string): S3Location {
  const rest = /^s3:\/\/(.*)$/is.exec(url)?.[1];
  if (rest === undefined) throw new S3ConfigError(`${url} is not an s3://<bucket>/<key> URL`);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const key = slash < 0 ? '' : rest.slice(slash + 1);
  if (bucket === '') throw new S3ConfigError(`${url} names no bucket; write s3://<bucket>/<key>`);
  if (!BUCKET.test(bucket) || bucket.includes('..')) {
    throw new S3ConfigError(
      `${url}: '${bucket}' is not a valid S3 bucket name (3–63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit)`,
    );
  }
  if (key === '' || key.endsWith('/')) {
    throw new S3ConfigError(
      `${url} names no object in bucket '${bucket}'; write s3://${bucket}/<key>, e.g. s3://${bucket}/tags.csv`,
    );
  }
  return { bucket, key };
}

/** How long an S3 call may connect, or go without a byte sent or received, before it fails. */
export const DEFAULT_S3_TIMEOUT_MS = 30_000;

/** TAGGER_S3_TIMEOUT_MS, checked: a positive whole number of milliseconds. */
export function s3TimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const set = env.TAGGER_S3_TIMEOUT_MS;
  if (set === undefined || set.trim() === '') return DEFAULT_S3_TIMEOUT_MS;
  const value = Number(set);
  if (!Number.isInteger(value) || value < 1) {
    throw new S3ConfigError(
      `TAGGER_S3_TIMEOUT_MS must be a whole number of milliseconds above 0 (default ${DEFAULT_S3_TIMEOUT_MS}), got '${set}'`,
    );
  }
  return value;
}

type Loaded = { s3: S3Module; client: InstanceType<S3Module['S3Client']> };
/** Clients by configuration: one per process in practice (tests change the environment between calls). */
const clients = new Map<string, Promise<Loaded>>();

/** A client configured from the environment (see the module comment), made once per configuration. */
function client(): Promise<Loaded> {
  const timeoutMs = s3TimeoutMs();
  const endpoint = process.env.AWS_ENDPOINT_URL_S3 || process.env.AWS_ENDPOINT_URL || undefined;
  const region = process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION || 'us-east-1';
  const key = JSON.stringify([endpoint, region, timeoutMs]);
  let loaded = clients.get(key);
  if (loaded === undefined) {
    loaded = import('@aws-sdk/client-s3').then((s3) => ({
      s3,
      client: new s3.S3Client({
        region,
        ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
        // Inactivity, not a total: a large part upload or a long download takes as long as it takes.
        requestHandler: { connectionTimeout: timeoutMs, socketTimeout: timeoutMs },
      }),
    }));
    clients.set(key, loaded);
  }
  return loaded;
}

/** A call's options: aborted with `signal` when one is given. */
const aborts = (signal: AbortSignal | undefined): { abortSignal?: AbortSignal } =>
  signal === undefined ? {} : { abortSignal: signal };

/** What the SDK's error says, in one line (its name is the S3 error code: NoSuchKey, AccessDenied, …). */
export function s3Reason(error: unknown): string {
  const e = error as {
    name?: string;
    message?: string;
    code?: string;
    $metadata?: { httpStatusCode?: number };
  };
  if (e.name === 'TimeoutError' || e.code === 'ETIMEDOUT' || /timed? ?out/i.test(e.message ?? '')) {
    let seconds = DEFAULT_S3_TIMEOUT_MS / 1000;
    try {
      seconds = s3TimeoutMs() / 1000;
    } catch {
      // The client was made with a valid setting; the variable changed since.
    }
    return `no answer from the S3 endpoint within ${seconds} s (TAGGER_S3_TIMEOUT_MS), tried as often as AWS_MAX_ATTEMPTS allows (default 3)`;
  }
  const status = e.$metadata?.httpStatusCode;
  const name = e.name && e.name !== 'Error' ? e.name : undefined;
  const message = e.message && e.message !== name && e.message !== 'UnknownError' ? e.message : undefined;
  return [name, message, status ? `HTTP ${status}` : undefined].filter(Boolean).join(': ') || String(error);
}

/** The object's size in bytes (HeadObject); rejects when it cannot be read, or `signal` is aborted. */
export async function s3Size(url: string, signal?: AbortSignal): Promise<number> {
  const { bucket, key } = parseS3Url(url);
  const { s3, client: c } = await client();
  const head = await c.send(new s3.HeadObjectCommand({ Bucket: bucket, Key: key }), aborts(signal));
  return head.ContentLength ?? 0;
}

/** Fails unless the bucket of `url` exists and answers (HeadBucket): an output is checked before any work. */
export async function checkS3Bucket(url: string, signal?: AbortSignal): Promise<void> {
  const { bucket } = parseS3Url(url);
  const { s3, client: c } = await client();
  await c.send(new s3.HeadBucketCommand({ Bucket: bucket }), aborts(signal));
}

const readError = (error: unknown): Error =>
  Object.assign(new Error(s3Reason(error)), { code: 'S3_READ', cause: error });

/** The object as a stream (GetObject); a failure to open or read it is the stream's error. */
export function s3ReadStream(url: string): Readable {
  const out = new PassThrough();
  void (async () => {
    const { bucket, key } = parseS3Url(url);
    const { s3, client: c } = await client();
    const object = await c.send(new s3.GetObjectCommand({ Bucket: bucket, Key: key }));
    const body = object.Body as Readable | undefined;
    if (body === undefined) throw new Error(`${url} has no body`);
    // A download that stalls (TAGGER_S3_TIMEOUT_MS without a byte) fails like one that never started.
    body.on('error', (error) => out.destroy(readError(error)));
    body.pipe(out);
  })().catch((error: unknown) => out.destroy(readError(error)));
  return out;
}

/** Uploads a local file as the object `url`: whole, or (on failure or abort) not at all. */
export async function uploadToS3(file: string, url: string, signal?: AbortSignal): Promise<void> {
  const { bucket, key } = parseS3Url(url);
  const { s3, client: c } = await client();
  const { size } = await stat(file);
  const partSize = partBytes();
  if (size <= partSize) {
    await c.send(
      new s3.PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: createReadStream(file),
        ContentLength: size,
      }),
      aborts(signal),
    );
    return;
  }
  const { UploadId } = await c.send(
    new s3.CreateMultipartUploadCommand({ Bucket: bucket, Key: key }),
    aborts(signal),
  );
  try {
    const parts: { ETag: string | undefined; PartNumber: number }[] = [];
    for (let start = 0, part = 1; start < size; start += partSize, part++) {
      const end = Math.min(size, start + partSize);
      const { ETag } = await c.send(
        new s3.UploadPartCommand({
          Bucket: bucket,
          Key: key,
          UploadId,
          PartNumber: part,
          Body: createReadStream(file, { start, end: end - 1 }),
          ContentLength: end - start,
        }),
        aborts(signal),
      );
      parts.push({ ETag, PartNumber: part });
    }
    await c.send(
      new s3.CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        UploadId,
        MultipartUpload: { Parts: parts },
      }),
      aborts(signal),
    );
  } catch (error) {
    await c
      .send(new s3.AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId }))
      .catch(() => undefined);
    throw error;
  }
}
