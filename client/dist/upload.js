// Multipart bodies for the operations that take an upload (files, audio), streamed: a file is read as it is sent,
// never held in memory whole. The text fields go first and the files last, as the platform asks (`model` before
// `file`). A file given by its path, as bytes or as a Blob can be sent again, so such an upload is retried like any
// call; one given as a stream can be read once, so it is not retried.
// Loaded only for an upload from a path, so the rest of the client runs where there is no file system.
const nodeFs = () => import('node:fs');
const isObject = (v) => typeof v === 'object' && v !== null;
/** Whether a form's value is a file (sent as a file part) rather than a text field. */
export function isFileSource(value) {
    return (value instanceof Blob ||
        value instanceof Uint8Array ||
        value instanceof ArrayBuffer ||
        (isObject(value) && ('path' in value || 'data' in value || 'stream' in value)));
}
async function* once(bytes) {
    yield bytes;
}
async function* fromBlob(blob) {
    const reader = blob.stream().getReader();
    for (;;) {
        const { done, value } = await reader.read();
        if (done)
            return;
        yield value;
    }
}
async function* fromStream(stream) {
    if (Symbol.asyncIterator in stream) {
        for await (const chunk of stream)
            yield typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk;
        return;
    }
    yield* fromBlobStream(stream);
}
async function* fromBlobStream(stream) {
    const reader = stream.getReader();
    for (;;) {
        const { done, value } = await reader.read();
        if (done)
            return;
        yield value;
    }
}
async function filePart(name, source) {
    const meta = isObject(source) && !(source instanceof Blob) && !(source instanceof Uint8Array) && !(source instanceof ArrayBuffer) ? source : {};
    const filename = meta.filename;
    const contentType = meta.contentType ?? 'application/octet-stream';
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
                if (taken)
                    throw new Error('an upload from a stream can be sent once');
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
            filename: filename ?? data.name ?? name,
            contentType: meta === source ? contentType : data.type || contentType,
            size: data.size,
            open: () => fromBlob(data),
            once: false,
        };
    }
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : data;
    return { name, filename: filename ?? name, contentType, size: bytes.byteLength, open: () => once(bytes), once: false };
}
// Quotes in names and file names are escaped as the WHATWG FormData encoding does.
const quoted = (s) => s.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
/**
 * The multipart body of `form`: strings, numbers and booleans as text fields (an array as repeated `name[]`
 * fields, as the platform reads them), file sources as file parts after every text field; undefined and null
 * values are left out.
 */
export async function multipartBody(form) {
    const encoder = new TextEncoder();
    const boundary = `----inference-platform-${Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, '0')).join('')}`;
    const fields = [];
    const files = [];
    for (const [name, value] of Object.entries(form)) {
        if (value === undefined || value === null)
            continue;
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
    const heads = files.map((f) => encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="${quoted(f.name)}"; filename="${quoted(f.filename)}"\r\nContent-Type: ${f.contentType}\r\n\r\n`));
    const crlf = encoder.encode('\r\n');
    const end = encoder.encode(`--${boundary}--\r\n`);
    const sizes = files.map((f) => f.size);
    const length = sizes.every((s) => s !== undefined)
        ? [...fields, ...heads, end].reduce((n, b) => n + b.byteLength, 0) + sizes.reduce((n, s) => n + s + crlf.byteLength, 0)
        : undefined;
    async function* chunks() {
        yield* fields;
        for (const [i, f] of files.entries()) {
            yield heads[i];
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
            return new ReadableStream({
                async pull(controller) {
                    const { done, value } = await iterator.next();
                    if (done)
                        controller.close();
                    else
                        controller.enqueue(value);
                },
                async cancel() {
                    await iterator.return?.();
                },
            });
        },
    };
}
