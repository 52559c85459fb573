/**
 * The global setup that builds the container image (test/support/image-setup.ts) builds nothing for a
 * run that does not need it: the unit subset has no global setup at all, and a full-suite run of files
 * that do not run the image (`npx vitest run test/model`) gets an empty status and no build.
 */
import { describe, expect, it } from 'vitest';
import type { TestProject } from 'vitest/node';
import config from '../../vitest.config.js';
import setup from './image-setup.js';

type ConfigFn = (env: { mode: string; command: 'serve' | 'build' }) => { test?: { globalSetup?: string[] } };

describe('the image build of the test run', () => {
  it('is not part of `npm run test:unit`, and is of the full suite', () => {
    const resolve = config as unknown as ConfigFn;
    expect(resolve({ mode: 'unit', command: 'serve' }).test?.globalSetup).toEqual([]);
    expect(resolve({ mode: 'test', command: 'serve' }).test?.globalSetup).toEqual([
      './test/support/image-setup.ts',
    ]);
  });

  it('builds nothing when no selected test file runs the image', async () => {
    const provided: Record<string, unknown> = {};
    const project = {
      vitest: { filenamePattern: ['test/model'] },
      provide: (key: string, value: unknown) => {
        provided[key] = value;
      },
      globTestFiles: async (filters?: string[]) => {
        expect(filters).toEqual(['test/model']);
        return { testFiles: ['/repo/test/model/tfidf.test.ts', '/repo/test/deploy/compose.test.ts'] };
      },
    } as unknown as TestProject;
    const teardown = await setup(project);
    expect(teardown).toBeUndefined();
    expect(provided).toEqual({ taggerImageStatus: '' });
  });
});
