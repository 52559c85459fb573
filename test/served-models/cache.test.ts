/** SingleFlightLru: bounded LRU with one load per key at a time. */
import { describe, expect, it } from 'vitest';
import { SingleFlightLru } from '../../src/served-models/index.js';

const deferred = <T>() => {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};

describe('SingleFlightLru', () => {
  it('shares one load between concurrent gets of a key', async () => {
    const cache = new SingleFlightLru<string>(2);
    const gate = deferred<string>();
    let loads = 0;
    const load = () => {
      loads++;
      return gate.promise;
    };
    const all = Promise.all([cache.get('a', load), cache.get('a', load), cache.get('a', load)]);
    gate.resolve('A');
    expect(await all).toEqual(['A', 'A', 'A']);
    expect(await cache.get('a', load)).toBe('A');
    expect(loads).toBe(1);
  });

  it('keeps at most `capacity` values, dropping the least recently used', async () => {
    const cache = new SingleFlightLru<string>(2);
    const loads: string[] = [];
    const load = (key: string) => async () => {
      loads.push(key);
      return key.toUpperCase();
    };
    await cache.get('a', load('a'));
    await cache.get('b', load('b'));
    await cache.get('a', load('a')); // a is now the most recently used
    await cache.get('c', load('c')); // evicts b
    expect(cache.keys()).toEqual(['a', 'c']);
    await cache.get('b', load('b'));
    expect(loads).toEqual(['a', 'b', 'c', 'b']);
    expect(cache.keys()).toEqual(['c', 'b']);
  });

  it('does not remember failures, and clears them even for synchronous throws', async () => {
    const cache = new SingleFlightLru<string>(1);
    await expect(
      cache.get('a', () => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    await expect(cache.get('a', () => Promise.reject(new Error('async')))).rejects.toThrow('async');
    expect(await cache.get('a', async () => 'ok')).toBe('ok');
  });

  it('with capacity 0 keeps nothing but still shares in-flight loads', async () => {
    const cache = new SingleFlightLru<number>(0);
    let loads = 0;
    const load = async () => ++loads;
    expect(await Promise.all([cache.get('k', load), cache.get('k', load)])).toEqual([1, 1]);
    expect(await cache.get('k', load)).toBe(2);
    expect(cache.keys()).toEqual([]);
  });

  it.each([-1, 1.5, Number.NaN])('refuses capacity %s', (capacity) => {
    expect(() => new SingleFlightLru(capacity)).toThrow(/capacity must be an integer >= 0/);
  });
});
