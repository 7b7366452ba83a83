// The typed client as someone outside the repo gets it: `npm pack` of client/, installed from the tarball into an
// empty folder, imported by plain `node` (no tsx) from a .mjs file, against a running platform. The install holds
// the client, openapi-fetch and eventsource-parser (with their own dependencies) and nothing of the server; its
// types stand on their own.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { root } from '../server/core/paths.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const work = mkdtempSync(join(tmpdir(), 'platform-client-package-'));
const app = join(work, 'app');

// A child npm must not inherit the settings of an `npm test` that started this run (its prefix, workspaces,
// package fields), nor a loader from NODE_OPTIONS: the client is to work under plain node.
const env = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => k !== 'NODE_OPTIONS' && !/^npm_(package_|lifecycle_|config_(local_prefix|prefix|workspaces?|include_workspace_root|global)$)/i.test(k),
  ),
);

let t: TestPlatform;
let tarball: string;
let packed: string[];
beforeAll(async () => {
  const [platform, pack] = await Promise.all([
    startTestPlatform(),
    run(npm, ['pack', '--pack-destination', work, '--json'], { cwd: join(root, 'client'), env }),
  ]);
  t = platform;
  const [info] = JSON.parse(pack.stdout);
  tarball = join(work, info.filename);
  packed = info.files.map((f: { path: string }) => f.path).sort();
  mkdirSync(app);
  await run(npm, ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app, env });
});
afterAll(async () => {
  await t?.close();
  rmSync(work, { recursive: true, force: true });
});

/** Every package under a node_modules folder, nested ones included, by name. */
function installed(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => !name.startsWith('.'))
    .flatMap((name) => (name.startsWith('@') ? readdirSync(join(dir, name)).map((sub) => `${name}/${sub}`) : [name]))
    .flatMap((name) => [name, ...installed(join(dir, name, 'node_modules'))]);
}

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'));

test('the tarball holds the built client, its README and its package.json (with a license) only', () => {
  const built = readdirSync(join(root, 'client/dist')).map((f) => `dist/${f}`);
  expect(packed).toEqual(['README.md', ...built, 'package.json'].sort());
  expect(built).toEqual(expect.arrayContaining(['dist/api.d.ts', 'dist/index.d.ts', 'dist/index.js']));
  const client = readJson(join(app, 'node_modules/@inference-platform/client/package.json'));
  // The same terms as the contract it is generated from.
  expect(client.license).toBe(readJson(join(root, 'generated/openapi.json')).info.license.identifier);
});

test('installed from the tarball, it brings openapi-fetch and eventsource-parser (pinned) and nothing of the server', () => {
  const modules = join(app, 'node_modules');
  const client = readJson(join(modules, '@inference-platform/client/package.json'));
  expect(Object.keys(client.dependencies).sort()).toEqual(['eventsource-parser', 'openapi-fetch']);
  for (const version of Object.values<string>(client.dependencies)) expect(version).toMatch(/^\d+\.\d+\.\d+$/);
  // Their own dependencies, as they were installed.
  const expected = new Set(['@inference-platform/client']);
  const pending = Object.keys(client.dependencies);
  while (pending.length) {
    const name = pending.pop()!;
    if (expected.has(name)) continue;
    expected.add(name);
    pending.push(...Object.keys(readJson(join(modules, name, 'package.json')).dependencies ?? {}));
  }
  expect(installed(modules).sort()).toEqual([...expected].sort());
});

test('plain node imports it by name and calls the platform', async () => {
  writeFileSync(
    join(app, 'whoami.mjs'),
    `import { createPlatformClient } from '@inference-platform/client';
const api = createPlatformClient({ baseUrl: process.env.PLATFORM_URL, apiKey: process.env.PLATFORM_KEY });
const { data, error } = await api.GET('/v1/whoami');
if (error) throw new Error(JSON.stringify(error));
console.log(data.project_slug);
`,
  );
  // Asynchronous: the platform answering the call runs in this process.
  const { stdout } = await run(process.execPath, ['whoami.mjs'], {
    cwd: app,
    env: { ...env, PLATFORM_URL: t.url, PLATFORM_KEY: t.caller.key },
  });
  expect(stdout.trim()).toBe('default');
});

test('its types are complete without the repository: paths, components and the error envelope', () => {
  const file = join(app, 'check.mts');
  writeFileSync(
    file,
    `import { createPlatformClient, type ErrorEnvelope, type PlatformClient, type components, type paths } from '@inference-platform/client';
const api: PlatformClient = createPlatformClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'tpk_x' });
const { data, error } = await api.GET('/v1/whoami');
const slug: string | undefined = data?.project_slug;
const code: string | null | undefined = (error satisfies ErrorEnvelope | undefined)?.error.code;
type Whoami = paths['/v1/whoami']['get'];
type Envelope = components['schemas']['ErrorData'];
// @ts-expect-error: not a path of the contract
api.GET('/v1/not-a-path');
export { slug, code, type Whoami, type Envelope };
`,
  );
  const program = ts.createProgram([file], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: [],
    strict: true,
    noEmit: true,
  });
  const diagnostics = ts.getPreEmitDiagnostics(program);
  expect(ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => app, getNewLine: () => '\n' })).toBe('');
  // Everything it compiled came from the folder it was installed in (and TypeScript's own lib files).
  const outside = program
    .getSourceFiles()
    .map((f) => f.fileName)
    .filter((f) => !f.startsWith(app) && !f.includes('/typescript/lib/'));
  expect(outside).toEqual([]);
});
