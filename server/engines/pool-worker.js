// A worker thread of the pool (pool.ts) run from the TypeScript: registers tsx, then serves the tasks of
// pool-tasks.ts by name. (A built server has pool-tasks.ts itself built as its pool-worker.js.)
import { register } from 'tsx/esm/api';

register();
const { image, schema } = await import('./pool-tasks.ts');

export { image, schema };
