/**
 * Writes the OpenAPI document of the full API (run-based mode) to openapi.json at the repository root.
 * test/http/openapi.test.ts fails when the committed file differs, so API changes show up in review.
 * Run: npx tsx scripts/openapi.ts
 */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { generateOpenApiDocument } from '../src/app.js';

export const OPENAPI_FILE = resolve(import.meta.dirname, '..', 'openapi.json');

/** The committed form: two-space indentation and a final newline. */
export const formatOpenApi = (document: unknown): string => `${JSON.stringify(document, null, 2)}\n`;

async function main(): Promise<void> {
  await writeFile(OPENAPI_FILE, formatOpenApi(await generateOpenApiDocument()));
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  main().catch((error: unknown) => {
    process.stderr.write(`openapi: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
