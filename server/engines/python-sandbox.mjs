// The code interpreter's sandbox: one Python interpreter (Pyodide, CPython compiled to WebAssembly) in a process of
// its own, started by engines/python.ts under Node's permission model (reads only of Pyodide's files and this
// script, no writes, no child processes, no native addons), with code generation from strings disallowed (no
// eval, no `new Function`, so no dynamic import of anything) and an empty environment. Pyodide on Node reaches the
// host on purpose (os.system runs a shell, sockets connect through node:net, mountNodeFS mounts host folders), so
// before it loads every such door is shut here, in JavaScript, where Python cannot undo it: TCP connects and
// listens, UDP, child processes, process.kill and friends, the network globals. Python then sees the ordinary
// errors of a machine without a network or a shell. Plain JavaScript, run by node itself (not tsx), so the
// permission model need allow nothing else.
//
// Protocol (IPC): the parent sends {id, code, files}; the sandbox answers {id, outputs} once the cell has run. It
// sends {ready: true} once loaded. A cell's time limit and the process's memory are the parent's to enforce (it
// kills this process); the WebAssembly heap's limit is enforced here, so Python sees MemoryError.
import cp from 'node:child_process';
import dgram from 'node:dgram';
import dns from 'node:dns';
import { constants } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

const heapLimit = Number(process.argv[2]);
const pyodideEntry = process.argv[3];
const send = process.send.bind(process);
const on = process.on.bind(process);
const exit = process.exit.bind(process);

// Refusals carry Emscripten's EACCES (errno 2), so a system call that meets one fails with PermissionError in Python
// rather than stopping the interpreter.
const denied = (what) =>
  function denied() {
    throw Object.assign(new Error(`${what} is not available in the code interpreter's sandbox`), { name: 'ErrnoError', errno: 2, code: 'EACCES' });
  };

// The WebAssembly heap grows only up to the limit: past it, the growth Python's allocator asks for fails and Python
// raises MemoryError (the session lives on).
const grow = WebAssembly.Memory.prototype.grow;
WebAssembly.Memory.prototype.grow = function (pages) {
  if (this.buffer.byteLength + pages * 65536 > heapLimit) throw new RangeError('the sandbox memory limit is reached');
  return grow.call(this, pages);
};

// No network: every TCP connection and server, UDP socket and name lookup fails, whatever module asks for it.
net.Socket.prototype.connect = denied('opening a network connection');
net.Server.prototype.listen = denied('listening for network connections');
dgram.Socket.prototype.bind = denied('opening a UDP socket');
dgram.Socket.prototype.send = denied('sending UDP packets');
for (const k of ['lookup', 'resolve', 'resolve4', 'resolve6', 'resolveAny', 'reverse']) dns[k] = denied('resolving host names');
for (const k of ['fetch', 'WebSocket', 'EventSource', 'XMLHttpRequest']) delete globalThis[k];
// No child processes (the permission model refuses them too; this makes os.system answer "not found", 127).
cp.spawnSync = () => ({ pid: 0, status: 127, signal: null, output: [null, '', ''], stdout: '', stderr: '' });
for (const k of ['spawn', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) cp[k] = denied('starting a process');
syncBuiltinESMExports();
// Nothing reaches other processes or native code. Pyodide reads the file-system constants at load (NODEFS).
process.binding = (name) => {
  if (name === 'constants') return { fs: constants };
  throw new Error('process.binding is not available in the sandbox');
};
for (const k of ['kill', '_kill', '_debugProcess', '_debugEnd', 'dlopen', '_linkedBinding', 'setuid', 'setgid', 'seteuid', 'setegid', 'setgroups', 'initgroups', 'chdir']) {
  if (typeof process[k] === 'function') process[k] = denied(`process.${k}`);
}

const { loadPyodide } = await import(pyodideEntry);
let fdText = [];
const py = await loadPyodide({ env: { HOME: '/home/pyodide' }, stdout: (s) => fdText.push(`${s}\n`), stderr: (s) => fdText.push(`${s}\n`) });
// The JavaScript side is not Python's to reach: the `js` and `pyodide_js` modules are gone, and host folders cannot be mounted.
py.unregisterJsModule('js');
py.unregisterJsModule('pyodide_js');
py.mountNodeFS = denied('mounting host folders');
py.loadPackage = denied('loading packages');
py.FS.filesystems.NODEFS = undefined;
py.runPython(`
import sys, os, ast, traceback, base64, builtins, importlib.abc

_BLOCKED = ('js', 'pyodide_js', 'pyodide.http', 'pyodide.code', 'pyodide.ffi', 'pyodide.webloop', 'micropip')
for _name in list(sys.modules):
    if _name in _BLOCKED or _name.startswith('pyodide.http.'):
        del sys.modules[_name]

class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in _BLOCKED or name.split('.')[0] in ('js', 'pyodide_js'):
            raise ModuleNotFoundError(f"No module named '{name}' (the code interpreter's sandbox has no JavaScript bridge and no network)", name=name)
        return None

sys.meta_path.insert(0, _Refuse())

_outputs = []

class _Stream:
    def __init__(self, kind):
        self.kind = kind
    def write(self, text):
        text = str(text)
        if text:
            if _outputs and _outputs[-1]['type'] == self.kind:
                _outputs[-1]['data'] += text
            else:
                _outputs.append({'type': self.kind, 'data': text})
        return len(text)
    def flush(self):
        pass
    def isatty(self):
        return False
    @property
    def encoding(self):
        return 'utf-8'

sys.stdout = _Stream('stdout')
sys.stderr = _Stream('stderr')

_REPRS = {'text/html': '_repr_html_', 'text/markdown': '_repr_markdown_', 'text/latex': '_repr_latex_', 'image/svg+xml': '_repr_svg_',
          'image/png': '_repr_png_', 'image/jpeg': '_repr_jpeg_', 'application/json': '_repr_json_', 'application/javascript': '_repr_javascript_'}

def _bundle(value):
    data = {'text/plain': repr(value)}
    for mime, method in _REPRS.items():
        f = getattr(value, method, None)
        if callable(f):
            try:
                got = f()
            except Exception:
                continue
            if got is None:
                continue
            if isinstance(got, bytes):
                got = base64.b64encode(got).decode()
            data[mime] = got
    return data

def display(*objs):
    for obj in objs:
        _outputs.append({'type': 'display_data', 'data': _bundle(obj)})

builtins.display = display
_ns = {'__name__': '__main__', '__builtins__': builtins}

def _error():
    kind, value, tb = sys.exc_info()
    # The cell's own frames only: the runner's frame is not the caller's.
    while tb is not None and tb.tb_frame.f_code.co_filename != '<cell>':
        tb = tb.tb_next
    return ''.join(traceback.format_exception(kind, value, tb))

def _run(code):
    _outputs.clear()
    try:
        tree = ast.parse(code, '<cell>')
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, '<cell>', 'exec'), _ns)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), '<cell>', 'eval'), _ns)
            if value is not None:
                _ns['_'] = value
                _outputs.append({'type': 'execute_result', 'data': _bundle(value)})
    except BaseException:
        _outputs.append({'type': 'error', 'data': _error()})
    import json
    return json.dumps(_outputs)

def _put(name, content, binary):
    folder = os.path.dirname(name)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(name, 'wb') as f:
        f.write(base64.b64decode(content) if binary else content.encode())
`);
const run = py.globals.get('_run');
const put = py.globals.get('_put');

on('message', (msg) => {
  fdText = [];
  let outputs;
  try {
    for (const f of msg.files ?? []) put(f.name, f.content, f.encoding === 'base64');
    outputs = JSON.parse(run(msg.code));
  } catch (err) {
    // Pyodide cannot go on after a fatal error (a JavaScript exception inside a system call): this process ends, and
    // the session's next cell gets a fresh interpreter.
    send({ id: msg.id, fatal: true, outputs: [{ type: 'error', data: `InterpreterError: the interpreter stopped: ${String(err?.message ?? err)}` }] }, () =>
      exit(1),
    );
    return;
  }
  // What reached the process's own descriptors (os.write(1, ...), C extensions) follows the cell's outputs.
  if (fdText.length) outputs.push({ type: 'stdout', data: fdText.join('') });
  send({ id: msg.id, outputs });
});
send({ ready: true });
