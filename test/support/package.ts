// The packages as a user installs them: `npm pack` of the project and of the client, installed into an empty
// project with the outside app's suite (test/support/outside-app/), which then runs there. Used by
// test/package.test.ts (with better-sqlite3's prebuilt binary supplied locally) and by `npm run trials`
// (TRIALS=package: a plain install, compiling better-sqlite3 from source as this offline machine must).
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { root } from '../../server/core/paths.ts';

const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

// A child npm must not inherit the settings of an `npm test` that started this run (its prefix, workspaces,
// package fields), nor a loader from NODE_OPTIONS.
export const cleanEnv: Record<string, string> = Object.fromEntries(
  Object.entries(process.env).filter(
    (e): e is [string, string] =>
      e[1] !== undefined &&
      e[0] !== 'NODE_OPTIONS' &&
      !/^npm_(package_|lifecycle_|config_(local_prefix|prefix|workspaces?|include_workspace_root|global)$)/i.test(e[0]),
  ),
);

export interface Packed {
  server: string;
  client: string;
  /** The project tarball's files. */
  files: string[];
}

/** Packs the project (its `prepack` builds server/dist/) and the client into `into`. */
export async function packBoth(into: string): Promise<Packed> {
  const [server, client] = await Promise.all(
    [root, join(root, 'client')].map(
      async (cwd) => JSON.parse((await run(npm, ['pack', '--pack-destination', into, '--json'], { cwd, env: cleanEnv, maxBuffer: 16 << 20 })).stdout)[0],
    ),
  );
  return { server: join(into, server.filename), client: join(into, client.filename), files: server.files.map((f: { path: string }) => f.path) };
}

/**
 * better-sqlite3's prebuilt binary for this Node, as its install script (prebuild-install) would download it, made
 * from this checkout's build of the same version; answers the environment that has the install find it there.
 */
export async function localPrebuild(into: string): Promise<Record<string, string>> {
  const dir = join(root, 'node_modules/better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  mkdirSync(into, { recursive: true });
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  await run('tar', ['-czf', join(into, name), '-C', dir, 'build/Release/better_sqlite3.node']);
  return { npm_config_better_sqlite3_local_prebuilds: into };
}

/**
 * An empty project at `app` holding the outside app's files, with both tarballs, vitest and together-ai (the
 * versions this checkout tests with) installed from the registry (the npm cache first). Answers the install's time.
 */
export async function installApp(app: string, packed: Packed, env: Record<string, string> = {}): Promise<number> {
  cpSync(join(root, 'test/support/outside-app'), app, { recursive: true });
  writeFileSync(join(app, 'package.json'), `${JSON.stringify({ name: 'outside-app', private: true, type: 'module' }, null, 2)}\n`);
  const devDependencies = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).devDependencies;
  const started = performance.now();
  await run(
    npm,
    [
      'install',
      packed.server,
      packed.client,
      `vitest@${devDependencies.vitest}`,
      `together-ai@${devDependencies['together-ai']}`,
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
    ],
    { cwd: app, env: { ...cleanEnv, ...env }, maxBuffer: 16 << 20 },
  );
  return performance.now() - started;
}

/** Runs the outside app's vitest suite; answers the names of the tests that did not pass and how many did. */
export async function runAppSuite(app: string): Promise<{ passed: number; failures: string[]; output: string }> {
  const report = join(app, 'vitest-report.json');
  const result: { stdout?: string; stderr?: string } = await run(
    process.execPath,
    ['node_modules/vitest/vitest.mjs', 'run', '--reporter=json', `--outputFile=${report}`],
    { cwd: app, env: cleanEnv, maxBuffer: 16 << 20 },
  ).catch((err) => err);
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  if (!existsSync(report)) return { passed: 0, failures: ['(no report: the suite did not run)'], output };
  const outcome = JSON.parse(readFileSync(report, 'utf8'));
  const failures: string[] = outcome.testResults.flatMap(
    (f: { message?: string; assertionResults: { title: string; status: string; failureMessages: string[] }[] }) => [
      ...(f.assertionResults.length === 0 && f.message ? [f.message] : []),
      ...f.assertionResults.filter((a) => a.status !== 'passed').map((a) => `${a.title}: ${a.failureMessages.join(' ')}`),
    ],
  );
  return { passed: outcome.numPassedTests, failures, output };
}
