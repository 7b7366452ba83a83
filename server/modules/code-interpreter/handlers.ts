// POST /v1/tci/execute and GET /v1/tci/sessions. A session is a row; each call's code is a cell recorded in order
// before it runs, so any process can rebuild a session's interpreter by running its cells again (the tag's
// description: "Every process tells the same story").
import { apiError, badRequest, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Database } from '../../db/index.ts';
import { type Cell, type Interpreter, LocalPythonEngine, type PythonFile } from '../../engines/python.ts';
import { isUniqueViolation } from '../../http/unique.ts';
import type { Context, Services } from '../types.ts';
import { executionWire, sessionWire } from './wire.ts';

const MAX_CODE = 1_000_000;
const MAX_FILES = 100;
const MAX_NAME = 255;

// One engine (its live interpreters) per platform, made when first used.
const engines = new WeakMap<Database, LocalPythonEngine>();
const engineOf = (s: Services) => {
  let engine = engines.get(s.db);
  if (!engine) {
    engine = new LocalPythonEngine(s.config.codeInterpreter);
    engines.set(s.db, engine);
  }
  return engine;
};

/** Stops this platform's interpreters (the platform is closing). */
export const stopInterpreters = (s: Services) => engines.get(s.db)?.stop();

function checkFiles(files: PythonFile[]): void {
  if (files.length > MAX_FILES) throw badRequest(`At most ${MAX_FILES} files can be given with one call; ${files.length} were.`, 'files', 'maxItems');
  files.forEach((f, i) => {
    const segments = f.name.split('/');
    if (!f.name || f.name.length > MAX_NAME || f.name.startsWith('/') || segments.some((s) => s === '..' || s === ''))
      throw badRequest(
        `A file's name must be a relative path of 1 to ${MAX_NAME} characters without empty or '..' segments; '${f.name.slice(0, 100)}' is not.`,
        `files.${i}.name`,
      );
    if (f.encoding === 'base64' && !/^[A-Za-z0-9+/]*={0,2}$/.test(f.content.replace(/\s+/g, '')))
      throw badRequest(`The content of '${f.name}' is not base64.`, `files.${i}.content`);
  });
}

export async function executeCode(ctx: Context<'executeCode'>) {
  const { db, clock, identity } = ctx;
  const body = ctx.body;
  if (body.code.length > MAX_CODE) throw badRequest(`code is at most ${MAX_CODE} characters; this one has ${body.code.length}.`, 'code', 'maxLength');
  const files = (body.files ?? []) as PythonFile[];
  checkFiles(files);
  const now = clock.now();
  let sessionId = body.session_id;
  if (sessionId !== undefined) {
    const session = await db.prisma.tciSession.findFirst({ where: { id: sessionId, projectId: identity.projectId } });
    if (!session) throw notFound('code interpreter session', sessionId, 'session_id');
    if (Number(session.expiresAt) <= now)
      throw apiError(
        404,
        'session_expired',
        `The code interpreter session '${sessionId}' expired (sessions live ${ctx.config.codeInterpreter.sessionMs / 60_000} minutes); leave out session_id to start a new one.`,
        'session_id',
      );
  } else {
    sessionId = newId('ses', now);
    const start = BigInt(now);
    await db.writeStatement((tx) =>
      tx.tciSession.create({
        data: {
          id: sessionId!,
          projectId: identity.projectId,
          startedAt: start,
          expiresAt: start + BigInt(ctx.config.codeInterpreter.sessionMs),
          lastExecuteAt: start,
          executeCount: 0,
        },
      }),
    );
  }
  const cell: Cell = { code: body.code, files };
  const engine = engineOf(ctx);
  for (;;) {
    const { interpreter, release } = await engine.acquire(sessionId);
    try {
      // Catch up (a fresh interpreter, or one behind another process), then claim the next place: a place another
      // process took meanwhile is a unique violation, and the cells it missed are run before trying again.
      if (!(await catchUp(db, sessionId, interpreter))) continue;
      const seq = interpreter.position + 1;
      try {
        await db.write(async (tx) => {
          await tx.tciCell.create({
            data: { sessionId: sessionId!, projectId: identity.projectId, seq, code: cell.code, files: JSON.stringify(files), createdAt: BigInt(now) },
          });
          await tx.tciSession.update({ where: { id: sessionId }, data: { executeCount: { increment: 1 }, lastExecuteAt: BigInt(now) } });
        });
      } catch (err) {
        if (isUniqueViolation(err)) continue;
        throw err;
      }
      const result = await interpreter.run(cell);
      interpreter.position = seq;
      await db.writeStatement((tx) => tx.tciCell.update({ where: { sessionId_seq: { sessionId: sessionId!, seq } }, data: { outcome: result.outcome } }));
      return executionWire(sessionId, result.outputs);
    } finally {
      release();
    }
  }
}

/**
 * Runs the session's recorded cells this interpreter has not accounted for, in order, skipping those that ran out
 * of time or stopped their interpreter. False when a cell does so now (it is marked so, and the caller starts over
 * with a fresh interpreter).
 */
async function catchUp(db: Database, sessionId: string, interpreter: Interpreter): Promise<boolean> {
  const missed = await db.prisma.tciCell.findMany({ where: { sessionId, seq: { gt: interpreter.position } }, orderBy: { seq: 'asc' } });
  for (const c of missed) {
    if (c.outcome !== 'timeout' && c.outcome !== 'crashed') {
      const again = await interpreter.run({ code: c.code, files: JSON.parse(c.files) });
      if (again.outcome !== 'ran') {
        await db.writeStatement((tx) => tx.tciCell.update({ where: { sessionId_seq: { sessionId, seq: c.seq } }, data: { outcome: again.outcome } }));
        return false;
      }
    }
    interpreter.position = c.seq;
  }
  return true;
}

export async function listCodeInterpreterSessions(ctx: Context<'listCodeInterpreterSessions'>) {
  const rows = await ctx.db.prisma.tciSession.findMany({
    where: { projectId: ctx.identity.projectId, expiresAt: { gt: BigInt(ctx.clock.now()) } },
    orderBy: { startedAt: 'desc' },
  });
  return { data: { sessions: rows.map(sessionWire) } };
}
