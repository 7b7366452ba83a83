// The code interpreter's engine: Python sessions, each an interpreter in a sandbox process of its own
// (engines/python-sandbox.mjs: Pyodide under Node's permission model, with the host's doors shut). Processes rather
// than worker threads, because what shuts the doors (the permission model, no code generation from strings, an
// empty environment) is set per process. An interpreter keeps its session's state between cells; the module
// decides which cells it runs (a session another process ran is rebuilt by running its recorded cells again).
//
// Limits: each cell runs at most `timeoutMs` (past it the process is killed: the cell ends in an error output and
// the session's next cell starts a fresh interpreter); the WebAssembly heap is at most `memoryBytes` (past it
// Python raises MemoryError, the session lives on), the process's JavaScript heap at most 128 MB; at most
// `maxSandboxes` interpreters live in this process at once (the least recently used one is stopped to make room;
// its session is rebuilt when it is next used).
import { type ChildProcess, fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Mutex } from 'async-mutex';

export interface PythonFile {
  name: string;
  encoding: 'string' | 'base64';
  content: string;
}

export interface Cell {
  code: string;
  files: PythonFile[];
}

export type Output = { type: 'stdout' | 'stderr' | 'error'; data: string } | { type: 'display_data' | 'execute_result'; data: Record<string, unknown> };

/** How a cell ended: ran (with or without an exception), ran past its time, or its interpreter stopped under it. */
export type Outcome = 'ran' | 'timeout' | 'crashed';

export interface CellResult {
  outputs: Output[];
  outcome: Outcome;
}

export interface PythonLimits {
  timeoutMs: number;
  memoryBytes: number;
  maxSandboxes: number;
}

/** One session's interpreter, held exclusively between `acquire` and `release`. */
export interface Interpreter {
  /** The last of the session's cells this interpreter has accounted for, run or skipped (0 for a fresh one): the module keeps it. */
  position: number;
  run(cell: Cell): Promise<CellResult>;
}

export interface PythonEngine {
  /** The session's interpreter (a fresh one when this process holds none), exclusively until `release`. */
  acquire(sessionId: string): Promise<{ interpreter: Interpreter; release: () => void }>;
  /** Stops the session's interpreter (its session expired), or every one. */
  stop(sessionId?: string): void;
}

const require = createRequire(import.meta.url);
const pyodideDir = dirname(require.resolve('pyodide/package.json'));
const wsDir = dirname(require.resolve('ws/package.json'));
const script = join(dirname(fileURLToPath(import.meta.url)), 'python-sandbox.mjs');
// Node 20's permission model is `--experimental-permission`; from Node 22.13 it is `--permission`.
const permission = process.allowedNodeEnvironmentFlags.has('--permission') ? '--permission' : '--experimental-permission';

class Sandbox implements Interpreter {
  position = 0;
  readonly lock = new Mutex();
  private child: ChildProcess;
  private ready: Promise<void>;
  private pending?: { id: number; resolve: (r: CellResult) => void };
  private next = 0;
  dead = false;

  constructor(
    private limits: PythonLimits,
    private onExit: () => void,
  ) {
    this.child = fork(script, [String(limits.memoryBytes), join(pyodideDir, 'pyodide.mjs')], {
      env: {},
      cwd: pyodideDir,
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      execArgv: [
        permission,
        `--allow-fs-read=${pyodideDir}/`,
        `--allow-fs-read=${wsDir}/`,
        `--allow-fs-read=${script}`,
        '--disallow-code-generation-from-strings',
        '--max-old-space-size=128',
        '--no-warnings',
      ],
    });
    this.ready = new Promise((resolve, reject) => {
      this.child.once('message', () => resolve());
      this.child.once('exit', () => reject(new Error('the Python sandbox stopped while starting')));
    });
    this.ready.catch(() => {});
    this.child.on('message', (m: { id?: number; outputs?: Output[]; fatal?: boolean }) => {
      if (this.pending && m.id === this.pending.id && Array.isArray(m.outputs)) {
        const { resolve } = this.pending;
        this.pending = undefined;
        if (m.fatal) this.dead = true;
        resolve({ outputs: m.outputs, outcome: m.fatal ? 'crashed' : 'ran' });
      }
    });
    this.child.once('exit', () => {
      this.dead = true;
      this.pending?.resolve({ outputs: [{ type: 'error', data: 'InterpreterError: the interpreter stopped while running this cell' }], outcome: 'crashed' });
      this.pending = undefined;
      this.onExit();
    });
  }

  async run(cell: Cell): Promise<CellResult> {
    await this.ready;
    if (this.dead) return { outputs: [{ type: 'error', data: 'InterpreterError: the interpreter is not running' }], outcome: 'crashed' };
    const id = this.next++;
    const result = await new Promise<CellResult>((resolve) => {
      const timer = setTimeout(() => {
        if (this.pending?.id !== id) return;
        this.pending = undefined;
        this.kill();
        resolve({
          outputs: [
            {
              type: 'error',
              data: `TimeoutError: the cell ran past its limit of ${this.limits.timeoutMs / 1000} s and was stopped; the session's interpreter was restarted`,
            },
          ],
          outcome: 'timeout',
        });
      }, this.limits.timeoutMs);
      this.pending = {
        id,
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
      };
      this.child.send({ id, code: cell.code, files: cell.files });
    });
    return result;
  }

  kill(): void {
    this.dead = true;
    this.child.kill('SIGKILL');
  }
}

export class LocalPythonEngine implements PythonEngine {
  /** Live interpreters by session, least recently used first. */
  private sandboxes = new Map<string, Sandbox>();

  constructor(private limits: PythonLimits) {}

  async acquire(sessionId: string): Promise<{ interpreter: Interpreter; release: () => void }> {
    let box = this.sandboxes.get(sessionId);
    if (!box || box.dead) {
      box = this.start(sessionId);
    }
    this.sandboxes.delete(sessionId);
    this.sandboxes.set(sessionId, box);
    const release = await box.lock.acquire();
    if (box.dead) {
      // Killed while this caller waited (the previous cell's time ran out): a fresh one.
      release();
      return this.acquire(sessionId);
    }
    return { interpreter: box, release };
  }

  private start(sessionId: string): Sandbox {
    // Room for one more: the least recently used idle interpreter goes.
    if (this.sandboxes.size >= this.limits.maxSandboxes) {
      for (const [id, b] of this.sandboxes) {
        if (!b.lock.isLocked()) {
          b.kill();
          this.sandboxes.delete(id);
          break;
        }
      }
    }
    const box: Sandbox = new Sandbox(this.limits, () => {
      if (this.sandboxes.get(sessionId) === box) this.sandboxes.delete(sessionId);
    });
    this.sandboxes.set(sessionId, box);
    return box;
  }

  stop(sessionId?: string): void {
    for (const [id, b] of this.sandboxes) {
      if (sessionId === undefined || id === sessionId) {
        b.kill();
        this.sandboxes.delete(id);
      }
    }
  }
}
