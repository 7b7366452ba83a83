// Structured logs (pino). Whatever is logged passes through one redactor: the Authorization header and any field
// whose name looks like a secret are replaced, at any depth, so a value cannot reach a log line by accident.
import pino, { type DestinationStream, type Logger } from 'pino';

const SECRET_NAME = /authorization|secret|password|passwd|token|api[-_]?key|credential|^value$/i;
export const REDACTED = '[redacted]';

export function redact(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_NAME.test(k) ? REDACTED : redact(v, depth + 1);
  return out;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      formatters: { log: (obj) => redact(obj) as Record<string, unknown> },
      serializers: { err: pino.stdSerializers.err },
    },
    destination,
  );
}
