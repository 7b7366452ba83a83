// Multipart bodies for the operations that take an upload (files, audio), streamed: a file is read as it is sent,
// never held in memory whole. The text fields go first and the files last, as the platform asks (`model` before
// `file`). A file given by its path, as bytes or as a Blob can be sent again, so such an upload is retried like any
// call; one given as a stream can be read once, so it is not retried.

/** Where an upload's bytes come from. */
export type FileSource =
  | Blob
  | Uint8Array
  | ArrayBuffer
  /** A file on disk (Node), read as it is sent. */
  | { path: string; filename?: string; contentType?: string }
  /** Bytes in memory or a Blob, with the name and type the part is sent with. */
  | { data: Blob | Uint8Array | ArrayBuffer; filename?: string; contentType?: string }
  /** A stream (a web ReadableStream, or anything async-iterable such as a Node Readable), read once. */
  | { stream: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>; filename?: string; contentType?: string };

interface NodeFs {
  createReadStream(path: string): AsyncIterable<Uint8Array>;
  promises: { stat(path: string): Promise<{ size: number }> };
}
// Loaded only for an upload from a path, so the rest of the client runs where there is no file system.
const nodeFs = (): Promise<NodeFs> => import('node:fs' as string) as Promise<NodeFs>;

interface Part {
  name: string;
  filename: string;
  contentType: string;
  size: number | undefined;
  /** The part's bytes, from the start; undefined once a one-time stream has been handed out. */
  open: () => AsyncIterable<Uint8Array>;
  once: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** Whether a form's value is a file (sent as a file part) rather than a text field. */
export function isFileSource(value: unknown): value is FileSource {
  return (
    value instanceof Blob ||
    value instanceof Uint8Array ||
    value instanceof ArrayBuffer ||
    (isObject(value) && ('path' in value || 'data' in value || 'stream' in value))
  );
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

async function* fromBlob(blob: Blob): AsyncIterable<Uint8Array> {
  const reader = blob.stream().getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

async function* fromStream(stream: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  if (Symbol.asyncIterator in stream) {
    for await (const chunk of stream as AsyncIterable<Uint8Array>) yield typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk;
    return;
  }
  yield* fromBlobStream(stream as ReadableStream<Uint8Array>);
}

async function* fromBlobStream(stream: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

async function filePart(name: string, source: FileSource): Promise<Part> {
  const meta = isObject(source) && !(source instanceof Blob) && !(source instanceof Uint8Array) && !(source instanceof ArrayBuffer) ? source : {};
  const filename = (meta as { filename?: string }).filename;
  const contentType = (meta as { contentType?: string }).contentType ?? 'application/octet-stream';
  if (isObject(source) && 'path' in source) {
    const fs = await nodeFs();
    const { size } = await fs.promises.stat(source.path);
    const base = source.path.split(/[\\/]/).pop() || name;
    return { name, filename: filename ?? base, contentType, size, open: () => fs.createReadStream(source.path), once: false };
  }
  if (isObject(source) && 'stream' in source) {
    let taken = false;
    const stream = source.stream;
    return {
      name,
      filename: filename ?? name,
      contentType,
      size: undefined,
      open: () => {
        if (taken) throw new Error('an upload from a stream can be sent once');
        taken = true;
        return fromStream(stream);
      },
      once: true,
    };
  }
  const data = isObject(source) && 'data' in source ? source.data : source;
  if (data instanceof Blob) {
    return {
      name,
      filename: filename ?? (data as Blob & { name?: string }).name ?? name,
      contentType: meta === source ? contentType : data.type || contentType,
      size: data.size,
      open: () => fromBlob(data),
      once: false,
    };
  }
  const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : (data as Uint8Array);
  return { name, filename: filename ?? name, contentType, size: bytes.byteLength, open: () => once(bytes), once: false };
}

// Quotes in names and file names are escaped as the WHATWG FormData encoding does.
const quoted = (s: string) => s.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

export interface MultipartBody {
  contentType: string;
  /** The body's length when every part's size is known (sent as Content-Length, so a too large upload is refused early). */
  length: number | undefined;
  /** A fresh body, from the start; null once a one-time stream has been sent. */
  open: () => ReadableStream<Uint8Array>;
  /** Whether the body can be sent again (no part is a one-time stream). */
  replayable: boolean;
}

/**
 * The multipart body of `form`: strings, numbers and booleans as text fields (an array as repeated `name[]`
 * fields, as the platform reads them), file sources as file parts after every text field; undefined and null
 * values are left out.
 */
export async function multipartBody(form: Record<string, unknown>): Promise<MultipartBody> {
  const encoder = new TextEncoder();
  const boundary = `----inference-platform-${Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, '0')).join('')}`;
  const fields: Uint8Array[] = [];
  const files: Part[] = [];
  for (const [name, value] of Object.entries(form)) {
    if (value === undefined || value === null) continue;
    if (isFileSource(value)) {
      files.push(await filePart(name, value));
      continue;
    }
    const values = Array.isArray(value) ? value : [value];
    const fieldName = Array.isArray(value) ? `${name}[]` : name;
    for (const v of values) {
      const text = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
      fields.push(encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="${quoted(fieldName)}"\r\n\r\n${text}\r\n`));
    }
  }
  const heads = files.map((f) =>
    encoder.encode(
      `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(f.name)}"; filename="${quoted(f.filename)}"\r\nContent-Type: ${f.contentType}\r\n\r\n`,
    ),
  );
  const crlf = encoder.encode('\r\n');
  const end = encoder.encode(`--${boundary}--\r\n`);
  const sizes = files.map((f) => f.size);
  const length = sizes.every((s) => s !== undefined)
    ? [...fields, ...heads, end].reduce((n, b) => n + b.byteLength, 0) + (sizes as number[]).reduce((n, s) => n + s + crlf.byteLength, 0)
    : undefined;
  async function* chunks(): AsyncIterable<Uint8Array> {
    yield* fields;
    for (const [i, f] of files.entries()) {
      yield heads[i]!;
      yield* f.open();
      yield crlf;
    }
    yield end;
  }
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    length,
    replayable: files.every((f) => !f.once),
    open: () => {
      const iterator = chunks()[Symbol.asyncIterator]();
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = await iterator.next();
          if (done) controller.close();
          else controller.enqueue(value);
        },
        async cancel() {
          await iterator.return?.();
        },
      });
    },
  };
}
