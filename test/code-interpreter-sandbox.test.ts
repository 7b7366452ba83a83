// The code interpreter's sandbox (spec/tags/code-interpreter.yaml) through the official client: sessions that keep
// their state, files, every kind of output, a sandbox that cannot reach the host, and a loop and a memory hog ending in
// their errors while the server answers. What a session keeps in the database (a restart, another process, expiry)
// is code-interpreter.test.ts's, on both databases.
import { createServer, type Server } from 'node:net';
import type Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type CodeInterpreterPlatform, startCodeInterpreterPlatform, stdout, TIMEOUT_LIMITS } from './support/code-interpreter.ts';
import { expectError } from './support/expect.ts';
import type { TestPlatform } from './support/platform.ts';

let p: CodeInterpreterPlatform;
let t: TestPlatform;
let together: Together;
let run: CodeInterpreterPlatform['run'];

beforeAll(async () => {
  p = await startCodeInterpreterPlatform();
  ({ t, together, run } = p);
});
afterAll(() => t?.close());

describe('sessions', () => {
  let session: string;

  test('a session keeps its state; outputs come as the contract shapes them, in order', async () => {
    const first = await run('x = 41\nprint("hello")\nimport sys\nprint("oops", file=sys.stderr)\nx + 1');
    session = first.session_id;
    expect(session).toMatch(/^ses_/);
    expect(first.outputs).toEqual([
      { type: 'stdout', data: 'hello\n' },
      { type: 'stderr', data: 'oops\n' },
      { type: 'execute_result', data: { 'text/plain': '42' } },
    ]);
    const html = `class T:\n    def _repr_html_(self): return '<b>t</b>'\ndisplay(T())\nprint(x)\n1/0`;
    const second = await run(html, session);
    expect(second.session_id).toBe(session);
    expect(second.outputs[0]).toMatchObject({ type: 'display_data', data: { 'text/html': '<b>t</b>' } });
    expect(second.outputs[1]).toEqual({ type: 'stdout', data: '41\n' });
    expect(second.outputs[2].type).toBe('error');
    expect(second.outputs[2].data).toMatch(/^Traceback \(most recent call last\):\n {2}File "<cell>", line 5[\s\S]*ZeroDivisionError: division by zero\n$/);
  });

  test('files given with the request are in the working directory before the code runs', async () => {
    const data = await run("print(open('notes/a.txt').read(), open('b.bin', 'rb').read())", session, [
      { name: 'notes/a.txt', encoding: 'string', content: 'héllo' },
      { name: 'b.bin', encoding: 'base64', content: Buffer.from([0, 1, 255]).toString('base64') },
    ]);
    expect(stdout(data.outputs)).toBe("héllo b'\\x00\\x01\\xff'\n");
  });

  test('the list shows the session; a bad file name, an unknown or foreign session answer 4xx naming the field', async () => {
    const { data } = await together.codeInterpreter.sessions.list();
    const listed = data!.sessions.find((s) => s.id === session)!;
    expect(listed).toMatchObject({ execute_count: 3 });
    expect(Date.parse(listed.expires_at) - Date.parse(listed.started_at)).toBe(3_600_000);
    const bad = await t.caller.http
      .post('/v1/tci/execute')
      .send({ code: '1', language: 'python', session_id: session, files: [{ name: '../x', encoding: 'string', content: '' }] });
    expectError(bad, 400, { param: 'files.0.name' });
    expectError(await t.other.http.post('/v1/tci/execute').send({ code: '1', language: 'python', session_id: session }), 404, {
      code: 'not_found',
      param: 'session_id',
    });
  });

  test("nothing in the sandbox reaches the server's files, its network or its processes", async () => {
    let connections = 0;
    const server: Server = createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const probe = `
import os, socket, urllib.request
def attempt(f):
    try:
        return 'OK ' + repr(f())[:60]
    except BaseException as e:
        return type(e).__name__
print(attempt(lambda: open('/etc/passwd').read()))
print(sorted(os.listdir('/')))
print(attempt(lambda: os.listdir('${process.cwd()}')))
print(os.system('id'))
def connect():
    s = socket.create_connection(('127.0.0.1', ${port}), timeout=1)
    s.sendall(b'hi')
    return s.recv(10)
print(attempt(connect))
print(attempt(lambda: urllib.request.urlopen('http://127.0.0.1:${port}/', timeout=1).read()))
def listen():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    s.listen()
print(attempt(listen))
for name in ['js', 'pyodide_js', 'pyodide.http', 'pyodide.code', 'pyodide.ffi', 'micropip']:
    print(name, attempt(lambda: __import__(name)))
print(attempt(lambda: __import__('subprocess').run(['id'])))
print(sorted(k for k in os.environ if k.startswith(('DATABASE', 'SECRETS', 'CONTROL'))))`;
    const lines = stdout((await run(probe)).outputs)
      .trim()
      .split('\n');
    server.close();
    expect(lines).toEqual([
      'FileNotFoundError',
      "['dev', 'home', 'lib', 'proc', 'tmp']",
      'FileNotFoundError',
      '32512',
      expect.stringMatching(/^(BlockingIOError|ConnectionRefusedError|OSError|TimeoutError)$/),
      expect.stringMatching(/^(URLError|RemoteDisconnected|ConnectionResetError|OSError)$/),
      'PermissionError',
      'js ModuleNotFoundError',
      'pyodide_js ModuleNotFoundError',
      'pyodide.http ModuleNotFoundError',
      'pyodide.code ModuleNotFoundError',
      'pyodide.ffi ModuleNotFoundError',
      'micropip ModuleNotFoundError',
      'OSError',
      '[]',
    ]);
    expect(connections).toBe(0);
  });
});

describe('limits: the server keeps answering', () => {
  test('an infinite loop ends in a TimeoutError output within its limit; the session goes on with its state', async () => {
    // A platform whose cells have 2 s: the loop runs until then.
    const short = await startCodeInterpreterPlatform(TIMEOUT_LIMITS);
    try {
      const { session_id } = await short.run('kept = "still here"');
      let done = false;
      const started = Date.now();
      const looping = short.run('while True:\n    pass', session_id).finally(() => (done = true));
      expect((await short.t.http.get('/healthz')).status).toBe(200);
      expect(done).toBe(false);
      const { outputs } = await looping;
      expect(Date.now() - started).toBeLessThan(TIMEOUT_LIMITS.timeoutMs + 15_000);
      expect(outputs).toEqual([{ type: 'error', data: expect.stringMatching(/^TimeoutError: the cell ran past its limit of 2 s/) }]);
      // A fresh interpreter, rebuilt from the recorded cells (the loop not among them).
      expect(stdout((await short.run('print(kept)', session_id)).outputs)).toBe('still here\n');
    } finally {
      await short.t.close();
    }
  });

  test('10 GB of allocations end in MemoryError (one 10 GB object in OverflowError); the session keeps its state', async () => {
    const { session_id } = await run('kept = 7');
    const hog = run('blocks = [bytearray(2**30) for _ in range(10)]', session_id);
    expect((await t.http.get('/healthz')).status).toBe(200);
    const { outputs } = await hog;
    expect(outputs).toEqual([{ type: 'error', data: expect.stringMatching(/MemoryError\n$/) }]);
    const one = await run('bytearray(10 * 2**30)', session_id);
    expect(one.outputs[0].data).toMatch(/OverflowError/);
    expect(stdout((await run('print(kept)', session_id)).outputs)).toBe('7\n');
  });
});
