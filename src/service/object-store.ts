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

/** `s3://bucket/some/key.csv` → { bucket, key }; throws for anything else. */
export function parseS3Url(url: string): S3Location {
  const match = /^s3:\/\/([^/]+)\/(.+)$/i.exec(url);
  if (match === null) throw new Error(`${url} is not an s3://<bucket>/<key> URL`);
  return { bucket: match[1]!, key: match[2]! };
}

let loaded: Promise<{ s3: S3Module; client: InstanceType<S3Module['S3Client']> }> | undefined;

/** One client per process, configured from the environment (see the module comment). */
function client(): Promise<{ s3: S3Module; client: InstanceType<S3Module['S3Client']> }> {
  loaded ??= import('@aws-sdk/client-s3').then((s3) => {
    const endpoint = process.env.AWS_ENDPOINT_URL_S3 || process.env.AWS_ENDPOINT_URL || undefined;
    return {
      s3,
      client: new s3.S3Client({
        region: process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION || 'us-east-1',
        ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
      }),
    };
  });
  return loaded;
}

/** What the SDK's error says, in one line (its name is the S3 error code: NoSuchKey, AccessDenied, …). */
export function s3Reason(error: unknown): string {
  const e = error as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  const name = e.name && e.name !== 'Error' ? e.name : undefined;
  const message = e.message && e.message !== name && e.message !== 'UnknownError' ? e.message : undefined;
  return [name, message, status ? `HTTP ${status}` : undefined].filter(Boolean).join(': ') || String(error);
}

/** The object's size in bytes (HeadObject); rejects when it cannot be read. */
export async function s3Size(url: string): Promise<number> {
  const { bucket, key } = parseS3Url(url);
  const { s3, client: c } = await client();
  const head = await c.send(new s3.HeadObjectCommand({ Bucket: bucket, Key: key }));
  return head.ContentLength ?? 0;
}

/** Fails unless the bucket of `url` exists and answers (HeadBucket): an output is checked before any work. */
export async function checkS3Bucket(url: string): Promise<void> {
  const { bucket } = parseS3Url(url);
  const { s3, client: c } = await client();
  await c.send(new s3.HeadBucketCommand({ Bucket: bucket }));
}

/** The object as a stream (GetObject); a failure to open it is the stream's error. */
export function s3ReadStream(url: string): Readable {
  const out = new PassThrough();
  void (async () => {
    const { bucket, key } = parseS3Url(url);
    const { s3, client: c } = await client();
    const object = await c.send(new s3.GetObjectCommand({ Bucket: bucket, Key: key }));
    const body = object.Body as Readable | undefined;
    if (body === undefined) throw new Error(`${url} has no body`);
    body.on('error', (error) => out.destroy(error));
    body.pipe(out);
  })().catch((error: unknown) => {
    const wrapped = Object.assign(new Error(s3Reason(error)), { code: 'S3_READ' });
    out.destroy(wrapped);
  });
  return out;
}

/** Uploads a local file as the object `url`: whole, or (on failure) not at all. */
export async function uploadToS3(file: string, url: string): Promise<void> {
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
    );
    return;
  }
  const { UploadId } = await c.send(new s3.CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
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
    );
  } catch (error) {
    await c
      .send(new s3.AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId }))
      .catch(() => undefined);
    throw error;
  }
}
