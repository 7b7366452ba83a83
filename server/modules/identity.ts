// Tag Identity (seed 2.15): who the caller is.
import type { ModuleHandlers } from '../handlers.ts';
import { wire } from '../wire/index.ts';

export const identityHandlers = {
  whoami: async ({ identity }) => wire.identity(identity),
} satisfies ModuleHandlers;
