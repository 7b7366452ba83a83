// Module `code-interpreter` (spec/tags/code-interpreter.yaml): Python in sandboxed sessions (engines/python.ts),
// recorded cell by cell so every process can serve every session.
import type { ModuleDescriptor } from '../types.ts';
import { executeCode, listCodeInterpreterSessions, stopInterpreters } from './handlers.ts';

export const codeInterpreter: ModuleDescriptor<'code-interpreter'> = {
  name: 'code-interpreter',
  handlers: { executeCode, listCodeInterpreterSessions },
  stop: stopInterpreters,
};
