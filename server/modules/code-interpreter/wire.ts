// Rows to the Code Interpreter tag's wire shapes (formatting only).
import { iso } from '../../core/clock.ts';
import type { Output } from '../../engines/python.ts';
import type { Wire } from '../types.ts';

interface SessionRow {
  id: string;
  startedAt: bigint;
  expiresAt: bigint;
  lastExecuteAt: bigint;
  executeCount: number;
}

export const sessionWire = (s: SessionRow): Wire<'CodeInterpreterSession'> => ({
  id: s.id,
  started_at: iso(s.startedAt),
  expires_at: iso(s.expiresAt),
  last_execute_at: iso(s.lastExecuteAt),
  execute_count: s.executeCount,
});

// `errors` is always null here: the generated Readable type drops a field whose only type is null, hence the cast.
export const executionWire = (sessionId: string, outputs: Output[]): Wire<'ExecuteResponse'> => {
  const wire = { data: { session_id: sessionId, status: 'success' as const, outputs: outputs as Wire<'ExecuteResponse'>['data']['outputs'] }, errors: null };
  return wire;
};
