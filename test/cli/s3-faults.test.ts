/**
 * Batch tagging against an object store that misbehaves (issue 34, item 5), the probe's way: a hung
 * endpoint on loopback — it accepts connections and reads requests, and answers only what the case says
 * (nothing at all, or the HEAD checks and then nothing). Before, `--output s3://…` on such an endpoint
 * wrote nothing for 100 s and ignored SIGTERM and SIGINT for 11 minutes; malformed `s3://` URLs were an
 * "unexpected error". Now every call times out (TAGGER_S3_TIMEOUT_MS, tried AWS_MAX_ATTEMPTS times), a
 * stop signal ends the job at once, and a malformed URL is one line. No S3 server needed.
 */
import { readdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliProcess, cliFolder, expectCleanFailure, startCli } from '../support/cli.js';
import { SAMPLE_DATA } from '../support/components.js';

const cli = cliFolder({ prefix: 'tagger-cli-s3-faults-', trained: true });

/** What the fake endpoint answers: HEAD requests (HeadBucket, HeadObject) or nothing. */
interface Endpoint {
  url: string;
  /** Requests received so far, as `METHOD /path`. */
  seen: string[];
  /** Whether HEAD requests are answered (200, with this Content-Length); others never are. */
  answerHead: number | null;
}

let server: Server;
let endpoint: Endpoint;
const sockets = new Set<Socket>();
/** Processes started here: killed by PID after the tests if one still runs. */
const jobs: CliProcess[] = [];

beforeAll(async () => {
  endpoint = { url: '', seen: [], answerHead: null };
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    endpoint.seen.push(`${request.method} ${request.url?.split('?')[0]}`);
    request.resume();
    if (request.method === 'HEAD' && endpoint.answerHead !== null) {
      response.writeHead(200, { 'content-length': String(endpoint.answerHead), etag: '"0"' });
      response.end();
    }
    // Anything else: read, never answered.
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  endpoint.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const job of jobs) if (!job.ended()) job.child.kill('SIGKILL');
  for (const socket of sockets) socket.destroy();
  await new Promise((done) => server.close(done));
});

/** Credentials of their own (so the SDK never looks for an instance role) and the hung endpoint. */
const s3Env = (extra: Record<string, string> = {}): Record<string, string> => ({
  AWS_ENDPOINT_URL_S3: endpoint.url,
  AWS_ACCESS_KEY_ID: 'tagger-test',
  AWS_SECRET_ACCESS_KEY: 'tagger-test',
  AWS_REGION: 'us-east-1',
  AWS_EC2_METADATA_DISABLED: 'true',
  ...extra,
});

const predict = (args: string[], env: Record<string, string>) =>
  cli.tagger(['predict', '--tracking-uri', cli.store, '--quiet', ...args], env);

describe('malformed s3:// URLs', () => {
  it.each([
    ['s3://', /^tagger: s3:\/\/ names no bucket; write s3:\/\/<bucket>\/<key>$/m],
    ['s3:///tags.csv', /^tagger: s3:\/\/\/tags\.csv names no bucket/m],
    ['s3://tags', /^tagger: s3:\/\/tags names no object in bucket 'tags'; write s3:\/\/tags\/<key>/m],
    ['s3://tags/out/', /^tagger: s3:\/\/tags\/out\/ names no object in bucket 'tags'/m],
    [
      's3://Tags_2024/out.csv',
      /^tagger: s3:\/\/Tags_2024\/out\.csv: 'Tags_2024' is not a valid S3 bucket name/m,
    ],
  ])('%s is one line saying what is wrong, not an unexpected error', async (url, message) => {
    for (const args of [
      ['--input', SAMPLE_DATA, '--output', url],
      ['--input', url, '--output', join(cli.dir, 'out.csv')],
    ]) {
      const result = await predict(args, s3Env());
      expectCleanFailure(result, message);
      expect(result.stderr).not.toMatch(/unexpected error/);
    }
    expect(endpoint.seen).toEqual([]);
  });

  it('refuses a TAGGER_S3_TIMEOUT_MS that is not a number of milliseconds', async () => {
    expectCleanFailure(
      await predict(
        ['--input', SAMPLE_DATA, '--output', 's3://tags/out.csv'],
        s3Env({ TAGGER_S3_TIMEOUT_MS: '30s' }),
      ),
      /^tagger: TAGGER_S3_TIMEOUT_MS must be a whole number of milliseconds above 0 \(default 30000\), got '30s'$/m,
    );
  });
});

describe('an endpoint that accepts and never answers', () => {
  it('fails the output check after the timeout and its attempts, in one line, having read nothing', async () => {
    endpoint.seen = [];
    endpoint.answerHead = null;
    const result = await predict(
      ['--input', SAMPLE_DATA, '--output', 's3://tagger-hung/out.csv'],
      s3Env({ TAGGER_S3_TIMEOUT_MS: '300', AWS_MAX_ATTEMPTS: '2' }),
    );
    expectCleanFailure(
      result,
      /^tagger: cannot write s3:\/\/tagger-hung\/out\.csv: no answer from the S3 endpoint within 0\.3 s \(TAGGER_S3_TIMEOUT_MS\), tried as often as AWS_MAX_ATTEMPTS allows \(default 3\)$/m,
    );
    // HeadBucket, once per attempt.
    expect(endpoint.seen).toEqual(['HEAD /tagger-hung/', 'HEAD /tagger-hung/']);
  });

  it('fails an input whose download never comes, in one line', async () => {
    endpoint.seen = [];
    endpoint.answerHead = 1_000;
    const result = await predict(
      ['--input', 's3://tagger-hung/in.csv', '--output', join(cli.dir, 'from-hung.csv')],
      s3Env({ TAGGER_S3_TIMEOUT_MS: '300', AWS_MAX_ATTEMPTS: '1' }),
    );
    expectCleanFailure(
      result,
      /^tagger: cannot read s3:\/\/tagger-hung\/in\.csv: no answer from the S3 endpoint within 0\.3 s/m,
    );
    expect(endpoint.seen).toEqual(['HEAD /tagger-hung/in.csv', 'GET /tagger-hung/in.csv']);
    expect((await readdir(cli.dir)).filter((name) => name.includes('from-hung'))).toEqual([]);
  });
});

/**
 * `tagger predict` in a process group of its own, sent `signal` (to the group) once the endpoint has
 * received `request`: the call is then under way, with a timeout far longer than the test.
 */
async function signalDuringCall(
  args: string[],
  request: string,
  signal: 'SIGINT' | 'SIGTERM',
): Promise<{ code: number | null; stderr: string; stdout: string }> {
  endpoint.seen = [];
  const job = startCli(['predict', '--tracking-uri', cli.store, '--quiet', ...args], {
    cwd: cli.dir,
    env: s3Env({ TAGGER_S3_TIMEOUT_MS: '600000' }),
    detached: true,
  });
  jobs.push(job);
  while (!job.ended() && !endpoint.seen.includes(request)) await new Promise((done) => setTimeout(done, 20));
  if (!job.ended()) process.kill(-job.child.pid!, signal);
  const { code } = await job.exited;
  return { code, stderr: job.stderr(), stdout: job.stdout() };
}

describe('a stop signal while an S3 call hangs', () => {
  it('SIGINT during the output check: exit 130 at once, nothing written', async () => {
    endpoint.answerHead = null;
    const result = await signalDuringCall(
      ['--input', SAMPLE_DATA, '--output', 's3://tagger-hung/signalled.csv'],
      'HEAD /tagger-hung/',
      'SIGINT',
    );
    expect(result.code, result.stderr).toBe(130);
    expect(result.stderr).toMatch(/^tagger: interrupted by SIGINT; tagging stopped after 0 rows of /m);
    expect(result.stdout).not.toMatch(/Tagged/);
  }, 60_000);

  it('SIGTERM during the upload of the tagged file: exit 143 at once, the object not created', async () => {
    endpoint.answerHead = 0;
    const result = await signalDuringCall(
      ['--input', SAMPLE_DATA, '--output', 's3://tagger-hung/uploaded.csv'],
      'PUT /tagger-hung/uploaded.csv',
      'SIGTERM',
    );
    expect(result.code, result.stderr).toBe(143);
    expect(result.stderr).toMatch(
      /^tagger: interrupted by SIGTERM; tagging stopped after [\d,]+ rows of .* were tagged; nothing was written: the partial output was removed, and s3:\/\/tagger-hung\/uploaded\.csv was not created$/m,
    );
    expect(result.stdout).not.toMatch(/Tagged/);
  }, 60_000);
});
