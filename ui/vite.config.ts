// Builds the inspection page (/ui) into dist/ui: one HTML file and hashed assets, all served by Tagger
// itself (no CDN), so the page works offline. `npm run build` runs it after the server's own tsc build.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  // Relative asset URLs: the page works under any path prefix a reverse proxy adds before /ui/.
  base: './',
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    // The size check is the bench's job (bench/ui.ts reports it); no warning noise at build time.
    chunkSizeWarningLimit: 1024,
    sourcemap: false,
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
});
