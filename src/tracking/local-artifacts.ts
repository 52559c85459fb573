/**
 * A run's artifacts in a local (or mounted) folder, as MLflow's `LocalArtifactRepository` keeps them:
 * plain files under `<artifact_uri>`. Used by the adapters whose artifacts live on this machine (the
 * file layout and the SQL stores). Writes go to a temp dot-file in the same folder and are renamed into
 * place, so a reader never sees half a file and a killed writer leaves only a dot-file that listings skip.
 */
import { randomBytes } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { artifactSegments } from './mlflow-rules.js';
import { type ArtifactEntry, TrackingError } from './store.js';

export const TMP_PREFIX = '.tagger-tmp-';

export const errno = (error: unknown): string | undefined =>
  typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;

/** A TrackingError for an unexpected file-system failure, naming the path. */
export function fsError(error: unknown, action: string, path: string): TrackingError {
  const code = errno(error);
  const reason = error instanceof Error ? error.message : String(error);
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new TrackingError(
      'PERMISSION_DENIED',
      `tracking: cannot ${action} ${path} (${reason}); check the file permissions of the tracking folder`,
      { cause: error },
    );
  }
  return new TrackingError('UNAVAILABLE', `tracking: cannot ${action} ${path} (${reason})`, { cause: error });
}

/**
 * The local folder of an artifact location as MLflow records it: an absolute path or a `file:` URI.
 * Null for anything else (`mlflow-artifacts:/`, `s3://`, a relative path), which this machine cannot
 * reach directly.
 */
export function localArtifactPath(location: string): string | null {
  if (location.startsWith('file:')) {
    try {
      return fileURLToPath(location);
    } catch {
      return null;
    }
  }
  return location.startsWith('/') ? location : null;
}

/**
 * Writes `content` to `target` atomically: a temp dot-file in `tmpDir` renamed over the target. The file
 * layout passes the experiment folder (where MLflow looks only for sub-folders); when that is on another
 * device (artifacts stored elsewhere) the temp file goes beside the target instead.
 */
export async function atomicWrite(
  target: string,
  content: string | Uint8Array,
  tmpDir: string = dirname(target),
): Promise<void> {
  const tmpName = `${TMP_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`;
  let tmp = join(tmpDir, tmpName);
  try {
    await mkdir(dirname(target), { recursive: true });
    await writeFile(tmp, content);
    try {
      await rename(tmp, target);
    } catch (error) {
      if (errno(error) !== 'EXDEV') throw error;
      await rm(tmp, { force: true });
      tmp = join(dirname(target), tmpName);
      await writeFile(tmp, content);
      await rename(tmp, target);
    }
  } catch (error) {
    await rm(tmp, { force: true }).catch(() => undefined);
    if (error instanceof TrackingError) throw error;
    throw fsError(error, 'write', target);
  }
}

/** Creates and removes a temp file in `dir` (creating `dir` if needed): the cheapest honest write test. */
export async function probeWritable(dir: string, what: string): Promise<void> {
  const probe = join(dir, `${TMP_PREFIX}${process.pid}-probe-${randomBytes(4).toString('hex')}`);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(probe, '');
    await rm(probe, { force: true });
  } catch (error) {
    await rm(probe, { force: true }).catch(() => undefined);
    const failure = fsError(error, 'write to', `${what} ${dir}`);
    throw new TrackingError(failure.code, `${failure.message}; runs cannot be logged there`, {
      cause: error,
    });
  }
}

export class LocalArtifacts {
  /**
   * @param dir the run's artifact folder
   * @param uri how the run records it (for messages)
   * @param runId for messages
   */
  constructor(
    readonly dir: string,
    readonly uri: string,
    private readonly runId: string,
  ) {}

  private pathOf(segments: string[], path: string): string {
    const target = join(this.dir, ...segments);
    if (segments.length > 0 && !target.startsWith(this.dir + sep)) {
      throw new TrackingError(
        'INVALID_ARGUMENT',
        `tracking: artifact path '${path}' escapes the run's artifact folder`,
      );
    }
    return target;
  }

  async write(path: string, content: Uint8Array, tmpDir?: string): Promise<void> {
    const target = this.pathOf(artifactSegments(path, false), path);
    await atomicWrite(target, content, tmpDir ?? dirname(target));
  }

  async list(path = ''): Promise<ArtifactEntry[]> {
    const segments = artifactSegments(path, true);
    const folder = this.pathOf(segments, path);
    let entries: Dirent[];
    try {
      entries = await readdir(folder, { withFileTypes: true });
    } catch (error) {
      // Like MLflow: listing something that is not a folder gives nothing.
      if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return [];
      throw fsError(error, 'list', folder);
    }
    const prefix = segments.join('/');
    const result: ArtifactEntry[] = [];
    for (const entry of entries) {
      if (entry.name.startsWith(TMP_PREFIX)) continue;
      const entryPath = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
      if (entry.isDirectory()) {
        result.push({ path: entryPath, isDir: true, size: null });
        continue;
      }
      const info = await stat(join(folder, entry.name)).catch((error: unknown) => {
        throw fsError(error, 'inspect', join(folder, entry.name));
      });
      result.push({
        path: entryPath,
        isDir: info.isDirectory(),
        size: info.isDirectory() ? null : info.size,
      });
    }
    return result.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async read(path: string): Promise<Uint8Array> {
    const segments = artifactSegments(path, false);
    const file = this.pathOf(segments, path);
    try {
      return new Uint8Array(await readFile(file));
    } catch (error) {
      const code = errno(error);
      if (code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR') {
        throw new TrackingError(
          'NOT_FOUND',
          `tracking: artifact ${this.uri}/${segments.join('/')} not found (run ${this.runId}); list the run's artifacts to see what it has`,
        );
      }
      throw fsError(error, 'read', file);
    }
  }
}
