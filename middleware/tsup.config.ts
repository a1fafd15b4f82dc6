// Builds the installable package into dist/: ESM + CommonJS + type declarations, one entry per subpath.
// The ../shared code the gate uses is bundled; dependencies and framework peers stay external.
import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'index.ts', express: 'express.ts', hono: 'hono.ts', fastify: 'fastify.ts', next: 'next.ts', fetch: 'fetch.ts', api: 'api.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  // One copy of the core shared by every subpath, in both formats (so instanceof works across subpaths).
  splitting: true,
  platform: 'node',
  target: 'node20',
  outDir: 'dist',
  clean: true,
  sourcemap: false,
  treeshake: true,
  tsconfig: 'tsconfig.build.json',
});
