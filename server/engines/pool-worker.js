// A worker thread of the pool (pool.ts): registers tsx, then serves the tasks of pool-tasks.ts by name.
import { register } from 'tsx/esm/api';

register();
const { tasks } = await import('./pool-tasks.ts');

export const image = tasks.image;
export const schema = tasks.schema;
