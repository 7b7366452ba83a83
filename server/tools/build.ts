// `npm run build` (npm pack runs it first, as `prepack`): the published package's server, built into server/dist/
// (not committed; `postpack` removes it). In this checkout the server runs from its TypeScript through tsx; the
// package carries it as JavaScript instead, bundled by esbuild: no loader in the user's process (a test runner's),
// no compile on a first start, and about half a second less of every start (tsx's per-module hooks). Two entries,
// sharing their code in chunks: the bin (cli.ts, whose `start` runs main.ts) and the testing entry (testing.ts, with
// its types). Every package stays an import of node_modules, the typed client included
// (bundled into the tarball as a dependency, see package.json `bundleDependencies`). The chunks sit in server/dist/,
// two folders below the package's root as core/paths.ts assumes.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import ts from 'typescript';
import { root } from '../core/paths.ts';

const out = join(root, 'server/dist');
rmSync(out, { recursive: true, force: true });
if (process.argv.includes('--clean')) process.exit(0);
const built = await build({
  absWorkingDir: root,
  metafile: true,
  entryPoints: { cli: 'server/cli.ts', testing: 'server/testing.ts' },
  outdir: out,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Packages stay imports of node_modules, except JSON files (ajv's meta-schemas): esbuild would drop their
  // `with { type: 'json' }`, which Node requires, so their content is bundled instead.
  plugins: [
    {
      name: 'packages-external',
      setup: (b) => b.onResolve({ filter: /^[^./]/ }, (args) => (args.path.endsWith('.json') ? undefined : { path: args.path, external: true })),
    },
  ],
  chunkNames: 'chunk-[hash]',
  sourcemap: 'linked',
  sourcesContent: false,
  logLevel: 'warning',
});
// Whatever the built server imports must be installed with it: a package of `dependencies` (not a devDependency,
// which `npm install <tarball>` leaves out).
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const packageOf = (path: string) =>
  path
    .split('/')
    .slice(0, path.startsWith('@') ? 2 : 1)
    .join('/');
const imported = new Set(
  Object.values(built.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external && !i.path.startsWith('node:')).map((i) => packageOf(i.path))),
);
const undeclared = [...imported].filter((name) => !(name in manifest.dependencies)).sort();
if (undeclared.length) throw new Error(`the server imports packages that are not in package.json dependencies: ${undeclared.join(', ')}`);

// The testing entry's types: its exports are typed by hand (isolated declarations), so no program is needed.
const testing = join(root, 'server/testing.ts');
const declaration = ts.transpileDeclaration(readFileSync(testing, 'utf8'), { fileName: testing, compilerOptions: { module: ts.ModuleKind.NodeNext } });
if (declaration.diagnostics?.length) throw new Error(ts.formatDiagnostics(declaration.diagnostics, ts.createCompilerHost({})));
writeFileSync(join(out, 'testing.d.ts'), declaration.outputText);
// On standard error: `npm pack --json` prints its report on standard output.
console.error(`built ${out}`);
