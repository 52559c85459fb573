/**
 * The serving fixture (fixtures.ts: a temp file store with runs of known f1) for a test file or a
 * describe block: `useServingFixture()` registers a beforeAll that builds it and an afterAll that closes
 * it (store closed, temp folder removed), and returns it.
 *
 *   const fx = useServingFixture();
 *   let app: TaggerApp;
 *   beforeAll(async () => {
 *     ({ app } = await runsApp(fx.store));
 *   });
 *   afterAll(async () => {
 *     await app?.close();
 *   });
 *
 * Call it before the hooks that use it: beforeAll hooks run in the order they were registered and
 * afterAll hooks in reverse (vitest's `sequence.hooks: 'stack'`, set in vitest.config.ts), so whatever a
 * later hook starts over the fixture is stopped before the fixture is closed. Its fields can be read
 * inside hooks and tests; reading one before the beforeAll has run (at collection) throws.
 */
import { afterAll, beforeAll } from 'vitest';
import { buildServingFixture, type ServingFixture } from './fixtures.js';

export interface ServingFixtureOptions {
  /** False builds nothing: for a suite whose tests skip because something else they need is missing. */
  enabled?: boolean;
}

/** The fixture as a test uses it; the afterAll closes it. */
export type UsedServingFixture = Omit<ServingFixture, 'close'>;

export function useServingFixture(options: ServingFixtureOptions = {}): UsedServingFixture {
  let built: ServingFixture | undefined;
  beforeAll(async () => {
    if (options.enabled !== false) built = await buildServingFixture();
  });
  afterAll(async () => {
    const closing = built;
    built = undefined;
    await closing?.close();
  });
  return new Proxy({} as UsedServingFixture, {
    get(_target, key) {
      if (built !== undefined) return built[key as keyof UsedServingFixture];
      if (typeof key === 'symbol' || key === 'then') return undefined;
      throw new Error(
        `serving fixture: \`${key}\` read outside its beforeAll/afterAll (read it inside hooks and tests)`,
      );
    },
  });
}
