/**
 * The two databases MLflow's SQL store runs on, behind one small async interface, so the store's SQL is
 * written once: SQLite through Node's built-in `node:sqlite` (no native add-on to compile) and
 * PostgreSQL through `pg` (node-postgres). Statements use `?` placeholders; the PostgreSQL driver numbers
 * them. Values are normalised both ways: booleans become 0/1 for SQLite, BIGINT columns come back as
 * numbers (epoch milliseconds fit in 2^53) rather than pg's strings.
 */
import { existsSync, statSync } from 'node:fs';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { pathToFileURL } from 'node:url';
import type pg from 'pg';
import { TrackingError } from '../store.js';

export type SqlValue = string | number | boolean | null;
export type SqlRow = Record<string, unknown>;

export interface SqlExecutor {
  all(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]>;
  /** Returns the number of rows changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /** Runs a script of several statements without parameters (schema creation). */
  exec(script: string): Promise<void>;
}

export interface SqlDriver extends SqlExecutor {
  readonly dialect: 'sqlite' | 'postgresql';
  /** Runs `fn` in one write transaction: all of it is committed, or none of it. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** True when the error is a unique or primary-key violation (a name or key already taken). */
export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const record = error as { code?: unknown; errcode?: unknown };
  // SQLite: SQLITE_CONSTRAINT_UNIQUE (2067), SQLITE_CONSTRAINT_PRIMARYKEY (1555); PostgreSQL: 23505.
  return record.errcode === 2067 || record.errcode === 1555 || record.code === '23505';
}

/** A TrackingError for a database failure, naming the database (never its password). */
export function databaseError(error: unknown, where: string): TrackingError {
  if (error instanceof TrackingError) return error;
  const reason = error instanceof Error ? error.message : String(error);
  const record = (typeof error === 'object' && error !== null ? error : {}) as {
    code?: unknown;
    errcode?: unknown;
  };
  // SQLite: SQLITE_READONLY (8) and its extended codes, SQLITE_CANTOPEN (14), SQLITE_PERM (3);
  // PostgreSQL: insufficient_privilege (42501), invalid_password / authorization (28xxx).
  const errcode = typeof record.errcode === 'number' ? record.errcode & 0xff : undefined;
  if (isConnectionLost(error)) {
    return new TrackingError(
      'UNAVAILABLE',
      `tracking: ${where}: the connection to the database was lost (${reason}), so a write under way was rolled back; check that the database is up, then try again`,
      { cause: error },
    );
  }
  if (errcode === 8 || errcode === 3 || record.code === '42501') {
    return new TrackingError('PERMISSION_DENIED', `tracking: ${where} cannot be written (${reason})`, {
      cause: error,
    });
  }
  if (typeof record.code === 'string' && record.code.startsWith('28')) {
    return new TrackingError('UNAUTHENTICATED', `tracking: ${where} refused the credentials (${reason})`, {
      cause: error,
    });
  }
  return new TrackingError('UNAVAILABLE', `tracking: ${where}: ${reason}`, { cause: error });
}

/**
 * True when a PostgreSQL connection died under a statement (reset, closed, the server shutting down or
 * crashing): an open transaction is then rolled back by the server.
 */
export function isConnectionLost(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  // 57P01 admin_shutdown (pg_terminate_backend, fast shutdown), 57P02 crash_shutdown, class 08
  // connection exceptions; socket errors; pg's own messages for a socket that closed under it.
  if (typeof code === 'string' && (/^57P0[12]$/.test(code) || code.startsWith('08'))) return true;
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED') return true;
  return typeof message === 'string' && /^Connection terminated unexpectedly|is not queryable/.test(message);
}

/** PostgreSQL is starting up, recovering from a crash or shutting down: its answer to a new connection. */
const isStartingUp = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '57P03';

const toSqlite = (params: readonly SqlValue[]): SQLInputValue[] =>
  params.map((value) => (typeof value === 'boolean' ? (value ? 1 : 0) : value));

/** SQLite's primary result code of an error (`errcode & 0xff`), or undefined. */
const sqliteCode = (error: unknown): number | undefined => {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  return typeof errcode === 'number' ? errcode & 0xff : undefined;
};

/** SQLITE_READONLY (8), SQLITE_CANTOPEN (14): what reading a WAL database gives when -shm cannot be made. */
const cannotMakeWalFiles = (error: unknown): boolean => {
  const code = sqliteCode(error);
  return code === 8 || code === 14;
};

export interface SqliteOpenOptions {
  busyTimeoutMs?: number;
  /**
   * Read only: never writes the file or creates anything beside it (a server or `tagger predict` on a
   * read-only volume). A WAL database whose `-shm`/`-wal` files cannot be created there is read as
   * immutable, and reopened whenever the file changes (see `SqliteDriver`).
   */
  readOnly?: boolean;
  /**
   * SQLite's `synchronous` for this connection's writes. Default FULL (an fsync at every commit, as the
   * tracking store wants); NORMAL fsyncs at checkpoints only — still never corrupt in WAL mode, but the
   * last commits may be lost on power failure, which a stream of prediction records can afford.
   */
  synchronous?: 'full' | 'normal';
}

/** What identifies the database file on disk, to notice it changing under an open connection. */
interface FileState {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

function fileState(file: string): FileState {
  const { dev, ino, size, mtimeMs } = statSync(file);
  return { dev, ino, size, mtimeMs };
}

/**
 * SQLite in WAL mode (readers never wait for the one writer) with a busy timeout (writers from other
 * processes wait their turn instead of failing). `node:sqlite` is synchronous; statements are short, and
 * a transaction holds the process only for its own statements.
 *
 * Read-only (`readOnly`): WAL needs `<db>-shm` (and `<db>-wal`) even to read. When they exist or can be
 * created, the database is read normally; on a read-only folder without them (a read-only volume whose
 * writer closed cleanly) it is opened `immutable` — SQLite reads the file without locks or WAL — and,
 * since SQLite then never looks for changes, reopened before a statement whenever the file's size,
 * time or inode changed or a `-wal` appeared (a writer elsewhere started).
 *
 * Every connection checks before a statement (one `stat`) that the path still names the file it opened:
 * a deleted database fails, a replaced one is reopened (see `refresh`).
 */
export class SqliteDriver implements SqlDriver {
  readonly dialect = 'sqlite' as const;
  private readonly statements = new Map<string, StatementSync>();
  /** Transactions of this process, one after another: they share one connection. */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(
    private db: DatabaseSync,
    private readonly file: string,
    private readonly options: SqliteOpenOptions,
    private immutable: boolean,
    private state: FileState,
  ) {}

  /** Opens (creating unless `readOnly`) the database file; WAL and the busy timeout are set here. */
  static open(file: string, options: SqliteOpenOptions = {}): SqliteDriver {
    const { db, immutable } = SqliteDriver.connect(file, options);
    return new SqliteDriver(db, file, options, immutable, fileState(file));
  }

  private static connect(file: string, options: SqliteOpenOptions): { db: DatabaseSync; immutable: boolean } {
    const timeout = options.busyTimeoutMs ?? 10_000;
    const readOnly = options.readOnly ?? false;
    let db = new DatabaseSync(file, { timeout, readOnly });
    let immutable = false;
    try {
      if (readOnly) {
        try {
          // The first read is what needs -shm: try it now, while another way in can still be taken.
          db.prepare('SELECT count(*) AS n FROM sqlite_master').get();
        } catch (error) {
          if (!cannotMakeWalFiles(error)) throw error;
          db.close();
          const url = pathToFileURL(file);
          url.searchParams.set('immutable', '1');
          db = new DatabaseSync(url, { timeout, readOnly: true });
          db.prepare('SELECT count(*) AS n FROM sqlite_master').get();
          immutable = true;
        }
      } else {
        try {
          db.exec('PRAGMA journal_mode = WAL');
        } catch (error) {
          // A database this process may only read is still opened; writing to it fails later with a
          // clear PERMISSION_DENIED (checkWritable).
          if (sqliteCode(error) !== 8) throw error;
        }
        if (options.synchronous === 'normal') db.exec('PRAGMA synchronous = NORMAL');
      }
      // MLflow's SQLAlchemy connections do not enforce foreign keys; Tagger does not need them to read
      // what MLflow wrote, and its own writes respect them anyway.
      db.exec('PRAGMA foreign_keys = OFF');
    } catch (error) {
      db.close();
      throw error;
    }
    return { db, immutable };
  }

  /** Whether the database is read as immutable (a read-only folder without -shm/-wal files). */
  get readsImmutable(): boolean {
    return this.immutable;
  }

  /**
   * Called once a replaced file has been reopened, before it is used further (the store checks it is
   * MLflow's); a failure leaves the check to be done again at the next statement.
   */
  onReplaced: (() => Promise<void>) | undefined;
  private replacedUnchecked = false;
  private checkingReplaced = false;

  /**
   * Before a statement outside a transaction. An open connection keeps reading the inode it opened, so
   * a database deleted or replaced under it (a backup restored with `mv`) would go unnoticed: a file that
   * is gone is an UNAVAILABLE error (nothing is created in its place), another file at the path is
   * opened instead of the old one. An immutable connection is also reopened when the file changed, as
   * SQLite itself will not look.
   */
  private async refresh(): Promise<void> {
    if (this.closed || this.db.isTransaction) return;
    let now: FileState;
    try {
      now = fileState(this.file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      throw new TrackingError(
        'UNAVAILABLE',
        `tracking: the database file ${this.file} is gone (deleted or moved away); put it back — a database moved to that path is read from the next call on — or point the tracking URI at where it is now`,
        { cause: error },
      );
    }
    const replaced = now.dev !== this.state.dev || now.ino !== this.state.ino;
    const changed =
      replaced ||
      (this.immutable &&
        (now.size !== this.state.size ||
          now.mtimeMs !== this.state.mtimeMs ||
          existsSync(`${this.file}-wal`)));
    if (changed) {
      const { db, immutable } = SqliteDriver.connect(this.file, this.options);
      this.statements.clear();
      this.db.close();
      this.db = db;
      this.immutable = immutable;
      this.state = now;
      if (replaced) this.replacedUnchecked = true;
    }
    if (this.replacedUnchecked && !this.checkingReplaced && this.onReplaced) {
      this.checkingReplaced = true;
      try {
        await this.onReplaced();
        this.replacedUnchecked = false;
      } finally {
        this.checkingReplaced = false;
      }
    }
  }

  private statement(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private readonly executor: SqlExecutor = {
    all: async (sql, params = []) => this.statement(sql).all(...toSqlite(params)) as SqlRow[],
    run: async (sql, params = []) => Number(this.statement(sql).run(...toSqlite(params)).changes),
    exec: async (script) => this.db.exec(script),
  };

  async all(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]> {
    await this.refresh();
    return this.executor.all(sql, params);
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.transaction((tx) => tx.run(sql, params));
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const next = this.queue.then(async () => {
      await this.refresh();
      // IMMEDIATE takes the write lock up front, so two processes never deadlock upgrading read locks.
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.executor);
        this.db.exec('COMMIT');
        return result;
      } catch (error) {
        if (this.db.isTransaction) this.db.exec('ROLLBACK');
        throw error;
      }
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  exec(script: string): Promise<void> {
    return this.transaction((tx) => tx.exec(script));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    this.db.close();
  }
}

/** pg returns BIGINT (int8, oid 20) as strings; MLflow's BIGINT columns hold epoch ms and steps. */
const pgTypes = (types: typeof pg.types) => ({
  getTypeParser: ((oid: number, format?: string) =>
    oid === 20
      ? (text: string) => Number(text)
      : types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
});

/** `?` placeholders to PostgreSQL's `$1, $2, …` (Tagger's statements have no `?` inside literals). */
function numbered(sql: string): string {
  let index = 0;
  return sql.replace(/\?/g, () => `$${++index}`);
}

export class PostgresDriver implements SqlDriver {
  readonly dialect = 'postgresql' as const;
  private readonly pool: pg.Pool;
  private closed = false;

  private constructor(
    pool: pg.Pool,
    private readonly startupWaitMs: number,
  ) {
    this.pool = pool;
    // An idle client losing its connection (server restart) must not crash the process.
    this.pool.on('error', () => undefined);
  }

  /**
   * Runs `fn`, again while PostgreSQL answers new connections with "starting up" / "in recovery"
   * (57P03, sent before anything runs): after a crash the server is back within seconds, and a run's
   * last status update (FAILED) should reach it. A server that refuses connections fails at once.
   */
  private async connecting<T>(fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.startupWaitMs;
    for (let wait = 100; ; wait = Math.min(wait * 2, 1_000)) {
      try {
        return await fn();
      } catch (error) {
        if (!isStartingUp(error) || Date.now() + wait > deadline || this.closed) throw error;
        await new Promise((done) => setTimeout(done, wait));
      }
    }
  }

  /**
   * A pool for the database (connections are made on first use). `pg` is loaded only here: a server on
   * another store does not carry it (~10 MB of RSS).
   */
  static async open(
    connectionString: string,
    options: { connectTimeoutMs?: number; maxConnections?: number; startupWaitMs?: number } = {},
  ): Promise<PostgresDriver> {
    const { default: driver } = await import('pg');
    return new PostgresDriver(
      new driver.Pool({
        connectionString,
        types: pgTypes(driver.types),
        connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
        max: options.maxConnections ?? 4,
        // A replica keeps a couple of connections, not one per burst.
        idleTimeoutMillis: 30_000,
      }),
      options.startupWaitMs ?? 10_000,
    );
  }

  // pool.query listens for the checked-out client's 'error' event itself, and releases it as broken.
  async all(sql: string, params: readonly SqlValue[] = []): Promise<SqlRow[]> {
    return this.connecting(
      async () => (await this.pool.query(numbered(sql), params as unknown[])).rows as SqlRow[],
    );
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    return this.connecting(
      async () => (await this.pool.query(numbered(sql), params as unknown[])).rowCount ?? 0,
    );
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await this.connecting(() => this.pool.connect());
    // A checked-out client has no listener of the pool's: its connection dying (reset, the server
    // terminating it or crashing) would be an unhandled 'error' event and end the process. The
    // statement under way (or the next one) fails instead, and the client is dropped, not reused.
    let lost: unknown;
    const onError = (error: unknown): void => {
      lost ??= error;
    };
    client.on('error', onError);
    const tx: SqlExecutor = {
      all: async (sql, params = []) =>
        (await client.query(numbered(sql), params as unknown[])).rows as SqlRow[],
      run: async (sql, params = []) => (await client.query(numbered(sql), params as unknown[])).rowCount ?? 0,
      exec: async (script) => {
        await client.query(script);
      },
    };
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await fn(tx);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      // The statement's own error may be a generic one ("not queryable"): the lost connection says why.
      throw lost !== undefined && !isConnectionLost(error) && !(error instanceof TrackingError)
        ? lost
        : error;
    } finally {
      client.release(broken || lost !== undefined);
      client.removeListener('error', onError);
    }
  }

  async exec(script: string): Promise<void> {
    await this.connecting(() => this.pool.query(script));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}
