// The server built with esbuild, in two forms:
// - `npm run build` (npm pack runs it first, as `prepack`): the published package's server in server/dist/ (not
//   committed; `postpack` removes it). The package carries no TypeScript: no loader in the user's process (a test
//   runner's), no compile on a first start. Its entries share their code in chunks, and every package stays an
//   import of node_modules, the typed client included (bundled into the tarball as a dependency, see package.json
//   `bundleDependencies`).
// - the checkout's start copy in server/.built/ (not committed), which `npm start` and the bin run (server/launch.js
//   builds it when it is missing or older than its sources). Each entry is one file holding the server and the pure
//   JavaScript packages it imports: a start then reads a few files instead of resolving and linking a thousand
//   modules through tsx's hooks (measured: 2.65 s to the printed key through tsx, 1.7 s built).
// Both sit two folders below the package's root, as core/paths.ts assumes, with the files the server starts beside
// its code: the worker threads' tasks (engines/pool.ts) and the Python sandbox's script (engines/python.ts).
import { copyFileSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type BuildOptions, build } from 'esbuild';
import { root } from '../core/paths.ts';

const SANDBOX = 'server/engines/python-sandbox.mjs';
const common: BuildOptions = {
  absWorkingDir: root,
  metafile: true,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
};

/** The package's server, in server/dist/. */
export async function buildPackage(): Promise<void> {
  const out = join(root, 'server/dist');
  rmSync(out, { recursive: true, force: true });
  const built = await build({
    ...common,
    entryPoints: { cli: 'server/cli.ts', testing: 'server/testing.ts', 'pool-worker': 'server/engines/pool-tasks.ts' },
    outdir: out,
    splitting: true,
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
  });
  copyFileSync(join(root, SANDBOX), join(out, 'python-sandbox.mjs'));
  // The API reference's page script, with its licence (redoc, a devDependency: http/app.ts serves it from here).
  const redoc = dirname(createRequire(import.meta.url).resolve('redoc/package.json'));
  for (const file of ['redoc.standalone.js', 'redoc.standalone.js.LICENSE.txt']) copyFileSync(join(redoc, 'bundles', file), join(out, file));
  // Whatever the built server imports must be installed with it: a package of `dependencies` (not a devDependency,
  // which `npm install <tarball>` leaves out).
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const packageOf = (path: string) =>
    path
      .split('/')
      .slice(0, path.startsWith('@') ? 2 : 1)
      .join('/');
  const imported = new Set(
    Object.values(built.metafile!.outputs).flatMap((o) => o.imports.filter((i) => i.external && !i.path.startsWith('node:')).map((i) => packageOf(i.path))),
  );
  const undeclared = [...imported].filter((name) => !(name in manifest.dependencies)).sort();
  if (undeclared.length) throw new Error(`the server imports packages that are not in package.json dependencies: ${undeclared.join(', ')}`);

  // The testing entry's types: its exports are typed by hand (isolated declarations), so no program is needed.
  const testing = join(root, 'server/testing.ts');
  // Loaded here only: the start copy's build (server/launch.js) needs no TypeScript.
  const { default: ts } = await import('typescript');
  const declaration = ts.transpileDeclaration(readFileSync(testing, 'utf8'), { fileName: testing, compilerOptions: { module: ts.ModuleKind.NodeNext } });
  if (declaration.diagnostics?.length) throw new Error(ts.formatDiagnostics(declaration.diagnostics, ts.createCompilerHost({})));
  writeFileSync(join(out, 'testing.d.ts'), declaration.outputText);
}

// Packages the start copy leaves to node_modules: native addons, and packages that find their own files at run time
// (WebAssembly, worker scripts, binaries, their own package.json) or import optional packages not installed.
const UNBUNDLED = [
  'better-sqlite3',
  'sharp',
  'pyodide',
  '@prisma/*',
  'pino',
  'thread-stream',
  'piscina',
  'pg-native',
  'ws',
  'bufferutil',
  'utf-8-validate',
  '@ffmpeg-installer/*',
  'ioredis',
];

/** What server/launch.js compares with the files on disk: every input of the start copy, with its size and time. */
export interface StartInputs {
  inputs: [path: string, size: number, mtimeMs: number][];
}

/**
 * The checkout's start copy, in server/.built/: built beside it, then moved into place, so that a process starting
 * meanwhile reads either the old copy or the new one. Answers the number of input files.
 */
export async function buildStart(): Promise<number> {
  const out = join(root, 'server/.built');
  const next = `${out}-${process.pid}-${Date.now()}`;
  try {
    const built = await build({
      ...common,
      entryPoints: { main: 'server/main.ts', cli: 'server/cli.ts', 'pool-worker': 'server/engines/pool-tasks.ts' },
      outdir: next,
      external: UNBUNDLED,
      // The packages bundled from CommonJS call `require` (of Node's modules, mostly): an ES module has none.
      banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    });
    copyFileSync(join(root, SANDBOX), join(next, 'python-sandbox.mjs'));
    // Paths from the root, as esbuild's metafile names its inputs.
    const files = [...Object.keys(built.metafile!.inputs), SANDBOX, 'server/tools/build.ts'].filter((f) => !f.startsWith('<'));
    const record: StartInputs = {
      inputs: files.map((f) => {
        const s = statSync(join(root, f));
        return [f, s.size, s.mtimeMs];
      }),
    };
    writeFileSync(join(next, 'inputs.json'), JSON.stringify(record));
    const old = `${next}-old`;
    try {
      renameSync(out, old);
    } catch {
      // none yet
    }
    renameSync(next, out);
    rmSync(old, { recursive: true, force: true });
    return files.length;
  } finally {
    rmSync(next, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv.includes('--start')) {
    console.error(`built ${join(root, 'server/.built')} from ${await buildStart()} files`);
  } else {
    await buildPackage();
    // On standard error: `npm pack --json` prints its report on standard output.
    console.error(`built ${join(root, 'server/dist')}`);
  }
}
