/**
 * A bounded least-recently-used cache with single-flight loading: concurrent `get`s of one key share one
 * load, a failed load is not remembered (the next request tries again), and at most `capacity` loaded
 * values are kept. `onDrop` is told each loaded value the cache lets go of (evicted, replaced, or not
 * kept at all with capacity 0), e.g. to release what it holds.
 */
export class SingleFlightLru<V> {
  /** Loaded values; Map iteration order is insertion order, so the first key is the least recently used. */
  private readonly values = new Map<string, V>();
  /** Loads under way; an entry lives from the first `get` of a key until its load settles. */
  private readonly pending = new Map<string, Promise<V>>();

  /** @param capacity how many loaded values to keep; 0 keeps none (every request loads, still single-flight). */
  constructor(
    readonly capacity: number,
    private readonly onDrop?: (value: V) => void,
  ) {
    if (!Number.isInteger(capacity) || capacity < 0) {
      throw new RangeError(`served-models/cache: capacity must be an integer >= 0, got ${capacity}`);
    }
  }

  /**
   * The value of `key`, loading it with `load` unless it is cached or already loading.
   * @example await cache.get(runId, () => loadRun(runId))
   */
  get(key: string, load: () => Promise<V>): Promise<V> {
    if (this.values.has(key)) {
      const value = this.values.get(key) as V;
      this.values.delete(key);
      this.values.set(key, value);
      return Promise.resolve(value);
    }
    const inFlight = this.pending.get(key);
    if (inFlight) return inFlight;
    // load() starts in a microtask, after the pending entry exists, so even a synchronous throw clears it.
    const loading = Promise.resolve()
      .then(load)
      .then((value) => {
        this.remember(key, value);
        return value;
      })
      .finally(() => this.pending.delete(key));
    this.pending.set(key, loading);
    return loading;
  }

  /** Keys of the loaded values, least recently used first. */
  keys(): string[] {
    return [...this.values.keys()];
  }

  /** The loaded values, least recently used first (loads under way are not included). */
  entries(): [string, V][] {
    return [...this.values.entries()];
  }

  /**
   * Stores an already loaded value as the most recently used one (a reload hands the models it already
   * holds to the next snapshot's cache instead of reading them again).
   */
  set(key: string, value: V): void {
    this.remember(key, value);
  }

  private remember(key: string, value: V): void {
    if (this.capacity === 0) {
      this.onDrop?.(value);
      return;
    }
    const before = this.values.get(key);
    this.values.delete(key);
    this.values.set(key, value);
    if (before !== undefined && before !== value) this.onDrop?.(before);
    while (this.values.size > this.capacity) {
      const oldest = this.values.keys().next().value as string;
      const dropped = this.values.get(oldest) as V;
      this.values.delete(oldest);
      this.onDrop?.(dropped);
    }
  }
}
