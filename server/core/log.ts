// Structured logs (pino). Whatever is logged passes through one redactor: the Authorization header and any field
// whose name looks like a secret are replaced, at any depth, so a value cannot reach a log line by accident.
import pino, { type DestinationStream, type Logger } from 'pino';

const SECRET_NAME = /authorization|secret|password|passwd|token|api[-_]?key|credential|^value$/i;
export const REDACTED = '[redacted]';

export function redact(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== 'object' || value instanceof Error) return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  let out: Record<string, unknown> | undefined;
  for (const k in value) {
    const v = (value as Record<string, unknown>)[k];
    const clean = SECRET_NAME.test(k) ? REDACTED : redact(v, depth + 1);
    // Copy only when something changes: most lines (every request line) have nothing to hide.
    if (clean === v) continue;
    out ??= { ...(value as Record<string, unknown>) };
    out[k] = clean;
  }
  return out ?? value;
}

/** How often buffered lines are written out at the latest. */
export const LOG_FLUSH_MS = 250;

export function createLogger(level: string, destination?: DestinationStream): Logger {
  // Buffered writes to stdout (one syscall per line was a tenth of a request's cost), flushed when the buffer fills,
  // every LOG_FLUSH_MS, and on shutdown (`log.flush`), so no line waits long and none is lost at exit.
  let stream = destination;
  if (!stream) {
    const buffered = pino.destination({ dest: 1, sync: false, minLength: 4096 });
    setInterval(() => buffered.flush(), LOG_FLUSH_MS).unref();
    stream = buffered;
  }
  return pino(
    {
      level,
      base: undefined,
      formatters: { log: (obj) => redact(obj) as Record<string, unknown> },
      serializers: { err: pino.stdSerializers.err },
    },
    stream,
  );
}
