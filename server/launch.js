// How the checkout runs its server (`npm start`, the bin): from its start copy in server/.built/, the server built
// with the packages it imports (server/tools/build.ts), which starts in about two thirds of the time of the TypeScript
// through tsx. The copy is used only while it matches every file it was built from (size and modification time, the way
// make decides); otherwise it is built again first (about 2 s, once after a change). Plain JavaScript, so that a
// start that finds the copy current loads nothing else.
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const built = new URL('./.built/', import.meta.url);

/**
 * Why the start copy is not current: the first file it was built from that is gone or differs from the one recorded
 * (its path), or that there is no copy; undefined when it is current. `record` is the copy's record of its inputs.
 */
export function staleBecause(record = new URL('inputs.json', built)) {
  let inputs;
  try {
    inputs = JSON.parse(readFileSync(record, 'utf8')).inputs;
  } catch {
    return 'no start copy';
  }
  for (const [path, size, mtimeMs] of inputs) {
    const s = statSync(root + path, { throwIfNoEntry: false });
    if (!s || s.size !== size || s.mtimeMs !== mtimeMs) return path;
  }
  return undefined;
}

let ensured;

/**
 * Builds the start copy unless it is current; once per process. What starts server processes (the test suite's setup,
 * its server-process helper, the bench) calls this first, so that its processes never build it side by side.
 */
export function ensureBuilt() {
  ensured ??= (async () => {
    if (staleBecause() === undefined) return;
    const { register } = await import('tsx/esm/api');
    const unregister = register();
    try {
      const { buildStart } = await import('./tools/build.ts');
      await buildStart();
    } finally {
      await unregister();
    }
  })();
  return ensured;
}

/** Runs an entry of the start copy: `main` (the server) or `cli` (the bin). */
export async function launch(entry) {
  await ensureBuilt();
  await import(new URL(`${entry}.js`, built).href);
}
