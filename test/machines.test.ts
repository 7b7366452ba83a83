// Every state machine is declared once, and the spec carries its table in one exact form that this test builds
// from the declaration (moves, terminal states, timed steps with their DURATION_ names and defaults). A move added
// to the code but not to the contract, or the other way round, fails here.
import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { defineMachine } from '../server/core/machine.ts';
import { specPath } from '../server/core/paths.ts';
import { modules } from '../server/modules/index.ts';

const spec = JSON.parse(readFileSync(specPath, 'utf8'));
const descriptions: string[] = [];
(function walk(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  for (const [k, v] of Object.entries(node)) {
    if (k === 'description' && typeof v === 'string') descriptions.push(v);
    else walk(v);
  }
})(spec);

const declared = modules.flatMap((m) => (m.machines ?? []).map((machine) => ({ module: m.name, machine })));

test('the modules declare the nineteen machines', () => {
  expect(declared.map((d) => d.machine.name).sort()).toEqual([
    'batch',
    'cluster',
    'container deployment',
    'deployment',
    'evaluation',
    'file',
    'fine-tune',
    'model resources',
    'queue job',
    'remediation',
    'remote upload',
    'rollout',
    'rollout step',
    'shared volume',
    'training operation',
    'training session',
    'upload job',
    'v1 endpoint',
    'video',
  ]);
});

test.each(declared)("$machine.name: the spec's table is the declaration's", ({ module, machine }) => {
  const rows = machine.moves().map((m) => `| ${m.from} | ${m.event} | ${m.to} |`);
  const timed =
    Object.entries(machine.timed ?? {})
      .map(([state, t]) => `${state} after \`DURATION_${t!.duration.toUpperCase()}_MS\` (default ${t!.defaultMs} ms)`)
      .join('; ') || 'none';
  const block = [
    `**State machine \`${machine.name}\`** (server/modules/${module}/machine.ts):`,
    '',
    '| from | event | to |',
    '|---|---|---|',
    ...rows,
    '',
    `Terminal: ${machine.terminal.join(', ') || 'none'}. Timed (the runner leaves these by itself): ${timed}.`,
  ].join('\n');
  expect(
    descriptions.filter((d) => d.includes(block)),
    block,
  ).toHaveLength(1);
});

test('a declaration that names an unknown state or event, or lets a terminal state move, does not load', () => {
  const base = { name: 'm', kind: 'm', states: ['A', 'B'], events: ['go'], terminal: ['B'] } as const;
  expect(() => defineMachine({ ...base, transitions: { A: { go: 'C' as 'B' } } })).toThrow(/undeclared/);
  expect(() => defineMachine({ ...base, transitions: { B: { go: 'A' } } })).toThrow(/terminal/);
  expect(() => defineMachine({ ...base, transitions: { A: { go: 'B' } }, timed: { B: { duration: 'x', defaultMs: 1 } } })).toThrow(/terminal/);
  const m = defineMachine({ ...base, transitions: { A: { go: 'B' } }, timed: { A: { duration: 'a_step', defaultMs: 5 } } });
  expect(m.next('A', 'go')).toBe('B');
  expect(() => m.next('B', 'go')).toThrow(expect.objectContaining({ status: 409, code: 'invalid_state_transition', param: null }));
  expect(m.delayMs('A', { durations: {} })).toBe(5);
  expect(m.delayMs('A', { durations: { a_step: 7 } })).toBe(7);
  expect(m.delayMs('B', { durations: {} })).toBeUndefined();
});

// One refusal for every machine: 409 invalid_state_transition, param null. The only exception is the one a
// requirement demands its own error for: starting (restarting) a v1 endpoint is 403 endpoints_v1_create_access_disabled.
const OWN_REFUSALS: Record<string, { event: string; status: number; code: string }> = {
  'v1 endpoint': { event: 'start', status: 403, code: 'endpoints_v1_create_access_disabled' },
};

test.each(declared)('$machine.name: every move its table does not allow is refused with the one 409 (param null)', ({ machine }) => {
  const own = OWN_REFUSALS[machine.name];
  for (const from of machine.states) {
    for (const event of machine.events) {
      if (machine.can(from, event)) continue;
      const expected =
        own?.event === event
          ? { status: own.status, code: own.code, param: null }
          : { status: 409, code: 'invalid_state_transition', type: 'invalid_request_error', param: null };
      expect(() => machine.next(from, event), `${machine.name}: ${from} --${event}-->`).toThrow(expect.objectContaining(expected));
    }
  }
});
