// The architecture, checked on every run: no import cycle in server/ or client/ (type-only imports included), the
// layers of .dependency-cruiser.cjs (http below modules, the control plane imported by no module), and modules
// meeting only at each other's index.ts; one module folder per spec tag file, each exporting its descriptor, all of
// them in the registry but the guest's (the control plane, made by its factory); and every handler a named function
// (so a request can be followed into it by name); and no createMany, whose query plan Prisma 7 compiles anew at
// every call (db/rows.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { cruise } from 'dependency-cruiser';
import { expect, test } from 'vitest';
import { operations } from '../generated/operations.ts';
import { root } from '../server/core/paths.ts';
import { type ControlPlane, controlModule } from '../server/modules/control/index.ts';
import { modules } from '../server/modules/index.ts';
import { ONE_DATABASE } from './support/databases.ts';

test('no import cycle and no layer breach in server/ or client/', async () => {
  const config = createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs'));
  // validate: without it, cruise() collects the graph but checks no rule (and reports no violation).
  const result = await cruise(['server', 'client'], { ...config.options, validate: true, ruleSet: { forbidden: config.forbidden }, baseDir: root });
  const output = result.output as { summary: { violations: { rule: { name: string }; from: string; to: string; cycle?: { name: string }[] }[] } };
  const violations = output.summary.violations.map(
    (v) => `${v.rule.name}: ${v.from} -> ${v.to}${v.cycle ? ` (${v.cycle.map((c) => c.name).join(' -> ')})` : ''}`,
  );
  expect(violations).toEqual([]);
}, 60_000);

test('one module per spec tag file, in the registry, implementing exactly its operations with named handlers', () => {
  const tagFiles = readdirSync(join(root, 'spec/tags'))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.replace(/\.yaml$/, ''))
    .sort();
  const folders = readdirSync(join(root, 'server/modules'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  expect(folders).toEqual(tagFiles);
  // The guest's handlers only close over its plane: made here to be looked at, never called.
  const all = [...modules, controlModule({} as ControlPlane)];
  expect(all.map((m) => m.name).sort()).toEqual(tagFiles);
  for (const m of all) {
    const expected = Object.entries(operations)
      .filter(([, op]) => op.module === m.name)
      .map(([id]) => id)
      .sort();
    expect(Object.keys(m.handlers).sort(), m.name).toEqual(expected);
    for (const [id, handler] of Object.entries(m.handlers)) expect((handler as { name: string }).name, `${m.name}.${id}`).toBe(id);
  }
});

test('every test file left out of the PostgreSQL pass exists and says why (test/support/databases.ts)', () => {
  const files = new Set(readdirSync(join(root, 'test')).filter((f) => f.endsWith('.test.ts')));
  for (const [file, why] of Object.entries(ONE_DATABASE)) {
    expect(files.has(file), file).toBe(true);
    expect(why.length, file).toBeGreaterThan(10);
  }
});

test('many rows are written by insertRows (db/rows.ts), never by createMany, whose plan is compiled at every call', () => {
  const calls = (readdirSync(join(root, 'server'), { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts') && !f.startsWith('.built'))
    .flatMap((f) =>
      readFileSync(join(root, 'server', f), 'utf8')
        .split('\n')
        .flatMap((line, i) => (/\.createMany(AndReturn)?\(/.test(line) ? [`server/${f}:${i + 1}`] : [])),
    );
  expect(calls).toEqual([]);
});
