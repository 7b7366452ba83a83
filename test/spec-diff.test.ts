// Reviewing a spec change: `npm run spec:diff` classifies each change for clients, CI's `--check` refuses an
// unaccepted break, `--changelog` keeps CHANGELOG.md, and `npm run lint:spec` points at the tag file's line.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { stringify } from 'yaml';
import { root } from '../server/core/paths.ts';
import { type Change, compare, report, withSection } from '../server/tools/spec-diff.ts';

type Doc = Record<string, any>;
const base = (): Doc => ({
  openapi: '3.1.0',
  info: { title: 'Things', version: '1.0.0' },
  security: [{ bearerAuth: [] }],
  tags: [{ name: 'Things', description: 'Things.' }],
  components: {
    securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
    schemas: {
      Thing: {
        type: 'object',
        required: ['id', 'status'],
        properties: { id: { type: 'string' }, status: { type: 'string', enum: ['a', 'b'] }, n: { type: 'integer', maximum: 100 } },
      },
    },
  },
  paths: {
    '/v1/things': {
      post: {
        operationId: 'createThing',
        tags: ['Things'],
        parameters: [{ name: 'q', in: 'query', schema: { type: 'string' } }],
        requestBody: {
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['name'],
                properties: { name: { type: 'string', maxLength: 100 }, mode: { type: 'string', enum: ['x', 'y'] }, opt: { type: 'integer' } },
              },
            },
          },
        },
        responses: {
          200: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } },
          400: { description: 'bad' },
        },
      },
      get: { operationId: 'listThings', tags: ['Things'], responses: { 200: { description: 'ok' } } },
    },
  },
});
// The tools run as `npm run` runs them, from a folder that has no node_modules of its own.
const TSX = pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href;
const body = (d: Doc) => d.paths['/v1/things'].post.requestBody.content['application/json'].schema;
const changed = (edit: (d: Doc) => void): Change[] => {
  const after = base();
  edit(after);
  return compare(base(), after);
};
const kinds = (changes: Change[]) => [...new Set(changes.map((c) => c.kind))];

describe('each kind of change, classified for clients', () => {
  const cases: [string, (d: Doc) => void, 'breaking' | 'not breaking' | 'documentation', RegExp][] = [
    ['a removed operation', (d) => delete d.paths['/v1/things'].get, 'breaking', /GET \/v1\/things.*operation removed/],
    [
      'an added operation',
      (d) => (d.paths['/v1/other'] = { get: { operationId: 'o', responses: { 200: { description: 'ok' } } } }),
      'not breaking',
      /GET \/v1\/other.*operation added/,
    ],
    ['a removed response field', (d) => delete d.components.schemas.Thing.properties.n, 'breaking', /response 200 \(application\/json\) field `n` removed/],
    ['a response field no longer required', (d) => (d.components.schemas.Thing.required = ['id']), 'breaking', /`status` no longer required/],
    ['an added response field', (d) => (d.components.schemas.Thing.properties.extra = { type: 'string' }), 'not breaking', /field `extra` added/],
    [
      'a new required request field',
      (d) => {
        body(d).properties.need = { type: 'string' };
        body(d).required.push('need');
      },
      'breaking',
      /`need` now required/,
    ],
    ['a new optional request field', (d) => (body(d).properties.more = { type: 'string' }), 'not breaking', /field `more` added/],
    [
      'a new required parameter',
      (d) => d.paths['/v1/things'].post.parameters.push({ name: 'r', in: 'query', required: true, schema: { type: 'string' } }),
      'breaking',
      /parameter `r` \(query\) added/,
    ],
    ['a narrowed limit', (d) => (body(d).properties.name.maxLength = 50), 'breaking', /field `name`: `maxLength` 100 → 50/],
    ['a widened limit', (d) => (body(d).properties.name.maxLength = 200), 'not breaking', /`maxLength` 100 → 200/],
    ['a request enum value removed', (d) => (body(d).properties.mode.enum = ['x']), 'breaking', /field `mode`: enum value `y` removed/],
    ['a request enum value added', (d) => (body(d).properties.mode.enum = ['x', 'y', 'z']), 'not breaking', /enum value `z` added/],
    [
      'a response enum value added',
      (d) => (d.components.schemas.Thing.properties.status.enum = ['a', 'b', 'c']),
      'breaking',
      /field `status`: enum value `c` added/,
    ],
    ['a changed type in a request', (d) => (body(d).properties.opt.type = 'string'), 'breaking', /`type` integer → string/],
    ['a changed type in a response', (d) => (d.components.schemas.Thing.properties.n.type = 'string'), 'breaking', /response 200.*`type` integer → string/],
    ['a status code removed', (d) => delete d.paths['/v1/things'].post.responses[400], 'breaking', /response 400 removed/],
    ['a status code added', (d) => (d.paths['/v1/things'].post.responses[409] = { description: 'conflict' }), 'not breaking', /response 409 added/],
    [
      'security made optional',
      (d) => (d.paths['/v1/things'].get.security = [{ bearerAuth: [] }, {}]),
      'not breaking',
      /security: bearerAuth → none or bearerAuth|security: bearerAuth → bearerAuth or none/,
    ],
    ['a description', (d) => (d.paths['/v1/things'].get.description = 'All things.'), 'documentation', /description added/],
  ];
  test.each(cases)('%s', (_name, edit, kind, what) => {
    const changes = changed(edit);
    expect(kinds(changes), JSON.stringify(changes, null, 1)).toEqual([kind]);
    expect(changes.map((c) => `${c.where}: ${c.what}`).join('\n')).toMatch(what);
  });

  test('security required where none was: breaking', () => {
    const before = base();
    before.paths['/v1/things'].get.security = [];
    const changes = compare(before, base());
    expect(kinds(changes)).toEqual(['breaking']);
    expect(changes.map((c) => `${c.where}: ${c.what}`)).toEqual(['GET /v1/things: security: none → bearerAuth']);
  });

  test('the report: counts, then each kind by operation, breaking ones with the pointer to accept them by', () => {
    const after = base();
    delete after.components.schemas.Thing.properties.n;
    body(after).properties.more = { type: 'string' };
    const text = report(compare(base(), after), 'v1 → working tree', { before: '1.0.0', after: '1.0.0' });
    expect(text).toContain('**1 breaking**, 1 not breaking, 0 documentation only.');
    expect(text).toMatch(
      /### Breaking\n\n- `POST \/v1\/things`\n {2}- response 200 \(application\/json\) field `n` removed \(`\/paths\/~1v1~1things\/post\/responses\/200\/content\/application~1json\/schema\/properties\/n`\)/,
    );
    expect(text).toMatch(/### Not breaking\n\n- `POST \/v1\/things`\n {2}- request body \(application\/json\) field `more` added/);
    expect(report([], 'a → b', { before: '1.0.0', after: '1.0.0' })).toContain('No change to the contract.');
  });
});

describe('in a git repository: --check, accepted breaks, the major version, the changelog', () => {
  const dir = mkdtempSync(join(tmpdir(), 'spec-diff-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const git = (...args: string[]) => execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { encoding: 'utf8' });
  const write = (doc: Doc) => {
    const { paths, components, tags, ...top } = doc;
    mkdirSync(join(dir, 'spec/tags'), { recursive: true });
    writeFileSync(join(dir, 'spec/openapi.yaml'), stringify({ ...top, tags: [], paths: {} }));
    writeFileSync(join(dir, 'spec/tags/things.yaml'), stringify({ tags, paths, components }));
  };
  const run = (...args: string[]) => {
    const r = spawnSync(process.execPath, ['--import', TSX, join(root, 'server/tools/spec-diff.ts'), ...args], { cwd: dir, encoding: 'utf8' });
    return { status: r.status, out: r.stdout + r.stderr };
  };

  test('an unlisted break fails --check; listed with its reason, or with a new major version, it passes', () => {
    git('init', '-q', '-b', 'main');
    write(base());
    git('add', '.');
    git('commit', '-qm', 'v1');
    const after = base();
    delete after.components.schemas.Thing.properties.n;
    write(after);
    git('commit', '-qam', 'drop n');

    const refused = run('--check');
    expect(refused.status, refused.out).toBe(1);
    expect(refused.out).toContain('## Contract changes: HEAD~1 → working tree');
    expect(refused.out).toContain('1 breaking change(s) without a major version or an entry in spec/accepted-breaks.yaml');
    const pointer = '/paths/~1v1~1things/post/responses/200/content/application~1json/schema/properties/n';
    expect(refused.out).toContain(`pointer: ${pointer}`);

    writeFileSync(join(dir, 'spec/accepted-breaks.yaml'), stringify([{ pointer }]));
    expect(run('--check').out).toContain('needs a pointer and a reason');
    writeFileSync(join(dir, 'spec/accepted-breaks.yaml'), stringify([{ pointer, reason: 'n was never filled in.' }]));
    const accepted = run('--check');
    expect(accepted.status, accepted.out).toBe(0);
    expect(accepted.out).toContain('no unaccepted breaking change');

    rmSync(join(dir, 'spec/accepted-breaks.yaml'));
    write({ ...after, info: { ...after.info, version: '2.0.0' } });
    const major = run('--check');
    expect(major.status, major.out).toBe(0);
    expect(major.out).toContain('`info.version`: 1.0.0 → 2.0.0');
  });

  test("--changelog writes the version's section against the previous version, and keeps the older ones", () => {
    git('commit', '-qam', 'v2');
    expect(run('--changelog').status).toBe(0);
    const changelog = readFileSync(join(dir, 'CHANGELOG.md'), 'utf8');
    expect(changelog).toMatch(/^# Changelog\n/);
    expect(changelog).toMatch(
      /## \[2\.0\.0\] - \d{4}-\d\d-\d\d\n[^#]*(### Changed\n\n[^#]*)?### Removed\n\n- \*\*Breaking:\*\* `POST \/v1\/things`: response 200 \(application\/json\) field `n` removed/,
    );
    // Run again: the section is replaced, not repeated; an older version's section stays.
    writeFileSync(join(dir, 'CHANGELOG.md'), `${changelog}\n## [1.0.0] - 2026-01-01\n\n- First.\n`);
    run('--changelog');
    const again = readFileSync(join(dir, 'CHANGELOG.md'), 'utf8');
    expect(again.match(/## \[2\.0\.0\]/g)).toHaveLength(1);
    expect(again).toContain('## [1.0.0] - 2026-01-01');
  });

  test('withSection puts a new version first, after the header', () => {
    const text = withSection('# Changelog\n\nIntro.\n\n## [1.0.0] - x\n\n- a\n', '1.1.0', '## [1.1.0] - y\n\n- b\n');
    expect(text).toBe('# Changelog\n\nIntro.\n\n## [1.1.0] - y\n\n- b\n\n## [1.0.0] - x\n\n- a\n');
  });
});

describe("this repository's changelog and its docs", () => {
  const spec = JSON.parse(readFileSync(join(root, 'generated/openapi.json'), 'utf8'));
  test('CHANGELOG.md holds the current contract version, and the client package has that version', () => {
    expect(readFileSync(join(root, 'CHANGELOG.md'), 'utf8')).toContain(`## [${spec.info.version}]`);
    expect(JSON.parse(readFileSync(join(root, 'client/package.json'), 'utf8')).version).toBe(spec.info.version);
  });
});

describe('lint where the author works', () => {
  test('a broken tag file: npm run lint:spec names that file and line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lint-spec-'));
    try {
      cpSync(join(root, 'spec'), join(dir, 'spec'), { recursive: true });
      mkdirSync(join(dir, 'generated'));
      writeFileSync(join(dir, 'generated/openapi.json'), '{}\n');
      symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
      const file = join(dir, 'spec/tags/files.yaml');
      const lines = readFileSync(file, 'utf8').split('\n');
      const at = lines.findIndex((l) => /^ {6}summary: /.test(l));
      lines[at] = lines[at].replace('summary:', 'summry:');
      writeFileSync(file, lines.join('\n'));
      const r = spawnSync(process.execPath, ['--import', TSX, join(root, 'server/tools/lint-spec.ts')], {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      });
      expect(r.status, r.stdout + r.stderr).toBe(1);
      expect(r.stdout).toContain(`spec/tags/files.yaml:${at + 1}:7  error  struct  Property \`summry\` is not expected here.`);
      expect(r.stdout).not.toContain('generated/openapi.json');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a tag file that is not YAML: npm run lint:spec names its file, line and column, without a stack', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lint-spec-'));
    try {
      cpSync(join(root, 'spec'), join(dir, 'spec'), { recursive: true });
      const file = join(dir, 'spec/tags/files.yaml');
      writeFileSync(file, `${readFileSync(file, 'utf8')}broken: [\n`);
      const line = readFileSync(file, 'utf8').split('\n').length;
      const r = spawnSync(process.execPath, ['--import', TSX, join(root, 'server/tools/lint-spec.ts')], { cwd: dir, encoding: 'utf8' });
      expect(r.status, r.stdout + r.stderr).toBe(1);
      expect(r.stdout).toMatch(new RegExp(`^spec/tags/files\\.yaml:${line}:1  error  yaml-syntax  Flow sequence`));
      expect(r.stdout + r.stderr).not.toMatch(/YAMLParseError|at .*\.ts:\d+/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
