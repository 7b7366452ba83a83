// `npx inference-platform <command>` (or `npm run cli -- <command>`): `start` runs the platform (main.ts) with the
// options a test rig needs; the other commands manage organizations, projects and API keys, on the database the
// server uses (DATABASE_URL, else the default SQLite file). They bootstrap the database exactly as the server does
// (bootstrap.ts), so the CLI and the server can be run first in any order.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createApiKey, createOrganization, createProject, ensureDefaultProject, listApiKeys, revokeApiKey } from './accounts.ts';
import { iso, systemClock } from './core/clock.ts';
import { loadConfig } from './core/config.ts';
import { ApiError, startFailure } from './core/errors.ts';
import { inCheckout } from './core/paths.ts';
import { type Database, openDatabase } from './db/index.ts';

const USAGE = `usage: inference-platform <command> [options]
  start [--port n] [--host h] [--data dir] [--fixtures file] [--control-key k] [--json] [--exit-with-stdin]
                                                     run the platform until SIGTERM or SIGINT (see README.md)
  orgs create <name>                                 create an organization
  orgs list
  projects create <name> --org <org_id> [--slug s]   create a project (slug: DNS label, unique platform-wide)
  projects list [--org <org_id>]
  keys create [--project <project_id|slug>] [--name n]  create an API key (shown once); default project: 'default'
  keys list [--project <project_id|slug>]            list keys (never their secrets)
  keys revoke <key_id>                               revoke a key; it stops working at once
options: --json for machine-readable output`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    org: { type: 'string' },
    project: { type: 'string' },
    slug: { type: 'string' },
    name: { type: 'string' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
    port: { type: 'string' },
    host: { type: 'string' },
    data: { type: 'string' },
    fixtures: { type: 'string' },
    'control-key': { type: 'string' },
    'exit-with-stdin': { type: 'boolean' },
  },
});
const [noun, verb, arg] = positionals;

// In a checkout, relative paths in DATABASE_URL and DATA_DIR are the checkout's (README, Configuration); installed as
// a package (the built CLI, no TypeScript), there is no checkout to speak of: they are the current folder's.
if (!inCheckout) {
  for (const name of ['DATABASE_URL', 'DATA_DIR']) {
    const value = process.env[name];
    if (!value || /^postgres/i.test(value)) continue;
    process.env[name] = value.startsWith('file:') ? `file:${resolve(value.slice('file:'.length))}` : resolve(value);
  }
}

if (noun === 'start') {
  // The options are the variables they stand for (README.md, Configuration), set over the environment's. Paths are
  // this shell's (the current folder's). Without --data (or DATA_DIR), the platform's database and files go to a
  // throw-away folder, removed when it exits.
  const set = (name: string, value: string | undefined) => {
    if (value !== undefined) process.env[name] = value;
  };
  set('PORT', values.port);
  set('HOST', values.host);
  set('CONTROL_KEY', values['control-key']);
  set('FIXTURES_FILE', values.fixtures && resolve(values.fixtures));
  const data = values.data ? resolve(values.data) : process.env.DATA_DIR ? undefined : mkdtempSync(join(tmpdir(), 'inference-platform-'));
  if (data) {
    if (!values.data) process.on('exit', () => rmSync(data, { recursive: true, force: true }));
    process.env.DATA_DIR = data;
    if (values.data || !process.env.DATABASE_URL) process.env.DATABASE_URL = `file:${join(data, 'platform.db')}`;
  }
  // For a parent that starts this process (the testing entry): when it dies, its end of the pipe closes.
  if (values['exit-with-stdin']) {
    // Once the platform runs, as SIGTERM stops it (requests in flight finish); before, at once (the exit handlers run).
    process.stdin.on('end', () => (process.listenerCount('SIGTERM') ? process.kill(process.pid, 'SIGTERM') : process.exit(1)));
    process.stdin.resume();
  }
  // main.ts runs the platform and owns the process from here (it reads --json itself).
  await import('./main.ts');
} else {
  await accounts();
}

async function accounts(): Promise<void> {
  // Instants (BigInt milliseconds) print as ISO dates in --json output.
  const print = (human: string, data: unknown) =>
    console.log(values.json ? JSON.stringify(data, (k, v) => (typeof v === 'bigint' ? (/At$/.test(k) ? iso(v) : Number(v)) : v), 2) : human);

  if (values.help || !noun) {
    console.log(USAGE);
    process.exit(noun ? 0 : 2);
  }

  const clock = systemClock;
  let db: Database;
  try {
    db = await openDatabase(loadConfig().databaseUrl);
    // Only the default project: the modules' seeds (the catalogue and the rest) are the server's first start's, so a
    // command does not load the whole server.
    await ensureDefaultProject(db, clock);
  } catch (err) {
    console.error(startFailure(err, process.env.LOG_LEVEL === 'debug'));
    process.exit(1);
  }
  const projectRef = async (ref = 'default') => {
    const project = await db.prisma.project.findFirst({ where: { OR: [{ id: ref }, { slug: ref }] } });
    if (!project) throw new ApiError(404, 'not_found', `No project '${ref}'.`);
    return project;
  };

  try {
    switch (`${noun} ${verb}`) {
      case 'orgs create': {
        const org = await createOrganization(db, clock, arg ?? '');
        print(`created organization ${org.id} (${org.name})`, org);
        break;
      }
      case 'orgs list': {
        const orgs = await db.prisma.organization.findMany({ orderBy: { id: 'asc' } });
        print(orgs.map((o) => `${o.id}  ${o.name}`).join('\n') || '(none)', orgs);
        break;
      }
      case 'projects create': {
        if (!values.org) throw new ApiError(400, 'missing_option', '--org <org_id> is required.');
        const project = await createProject(db, clock, { organizationId: values.org, name: arg ?? '', slug: values.slug });
        print(`created project ${project.id} (${project.name}, slug ${project.slug})`, project);
        break;
      }
      case 'projects list': {
        const projects = await db.prisma.project.findMany({ where: values.org ? { organizationId: values.org } : {}, orderBy: { id: 'asc' } });
        print(projects.map((p) => `${p.id}  ${p.slug}  ${p.name}  (org ${p.organizationId})`).join('\n') || '(none)', projects);
        break;
      }
      case 'keys create': {
        const project = await projectRef(values.project);
        const { key, secret } = await createApiKey(db, clock, { projectId: project.id, name: values.name ?? 'cli' });
        print(`created key ${key.id} for project ${project.slug}\n${secret}\n(shown once; only its hash is stored)`, {
          id: key.id,
          project_id: project.id,
          name: key.name,
          secret,
        });
        break;
      }
      case 'keys list': {
        const keys = await listApiKeys(db, values.project ? (await projectRef(values.project)).id : undefined);
        const rows = keys.map(({ hash: _hash, ...k }) => k);
        print(
          rows.map((k) => `${k.id}  ${k.prefix}…  ${k.name}  project ${k.projectId}  ${k.revokedAt ? `revoked ${iso(k.revokedAt)}` : 'active'}`).join('\n') ||
            '(none)',
          rows,
        );
        break;
      }
      case 'keys revoke': {
        const key = await revokeApiKey(db, clock, arg ?? '');
        print(`revoked key ${key.id}`, { id: key.id, revoked_at: key.revokedAt && iso(key.revokedAt) });
        break;
      }
      default:
        console.error(USAGE);
        process.exitCode = 2;
    }
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    console.error(`error: ${err.message}`);
    process.exitCode = 1;
  } finally {
    await db.close();
  }
  // The PostgreSQL driver may hold a timer; a one-shot command ends here.
  process.exit();
}
