/**
 * The two databases MLflow's SQL store runs on, behind one small async interface, so the store's SQL is
 * written once: SQLite through Node's built-in `node:sqlite` (no native add-on to compile) and
 * PostgreSQL through `pg` (node-postgres). Statements use `?` placeholders; the PostgreSQL driver numbers
 * them. Values are normalised both ways: booleans become 0/1 for SQLite, BIGINT columns come back as
 * numbers (epoch milliseconds fit in 2^53) rather than pg's strings.
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
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

/**
 * SQLite in WAL mode (readers never wait for the one writer) with a busy timeout (writers from other
 * processes wait their turn instead of failing). `node:sqlite` is synchronous; statements are short, and
 * a transaction holds the process only for its own statements.
 */
export class SqliteDriver implements SqlDriver {
  readonly dialect = 'sqlite' as const;
  private readonly statements = new Map<string, StatementSync>();
  /** Transactions of this process, one after another: they share one connection. */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(private readonly db: DatabaseSync) {}

  /** Opens (creating when `create`) the database file; WAL and the busy timeout are set here. */
  static open(file: string, options: { busyTimeoutMs?: number; readOnly?: boolean } = {}): SqliteDriver {
    const db = new DatabaseSync(file, {
      timeout: options.busyTimeoutMs ?? 10_000,
      readOnly: options.readOnly ?? false,
    });
    try {
      if (!options.readOnly) {
        try {
          db.exec('PRAGMA journal_mode = WAL');
        } catch (error) {
          // A database this process may only read (a server on a read-only mount) is still served;
          // writing to it fails later with a clear PERMISSION_DENIED (checkWritable).
          if (((error as { errcode?: number }).errcode ?? 0) % 256 !== 8) throw error;
        }
      }
      // MLflow's SQLAlchemy connections do not enforce foreign keys; Tagger does not need them to read
      // what MLflow wrote, and its own writes respect them anyway.
      db.exec('PRAGMA foreign_keys = OFF');
    } catch (error) {
      db.close();
      throw error;
    }
    return new SqliteDriver(db);
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

  all(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]> {
    return this.executor.all(sql, params);
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.transaction((tx) => tx.run(sql, params));
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const next = this.queue.then(async () => {
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
