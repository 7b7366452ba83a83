// The safetensors format (a little-endian u64 header length, a JSON header naming each tensor's dtype, shape and byte
// range, then the raw bytes), written and read here for the RL engine's state and its checkpoint files: the same
// bytes a user downloads are what the server keeps, and any safetensors reader (Python's `safetensors`, PyTorch,
// numpy) loads them. Only the two dtypes the engine uses: F32 (weights, optimizer moments) and I32 (token ids).

export type TensorData = Float32Array | Int32Array;

export interface Tensor {
  data: TensorData;
  shape: number[];
}

/** Tensors by name, and string metadata (`__metadata__`). */
export interface TensorFile {
  tensors: Record<string, Tensor>;
  metadata: Record<string, string>;
}

const dtypeOf = (t: TensorData) => (t instanceof Float32Array ? 'F32' : 'I32');

export function writeSafetensors(file: TensorFile): Uint8Array {
  const names = Object.keys(file.tensors).sort();
  const header: Record<string, unknown> = { __metadata__: file.metadata };
  let offset = 0;
  for (const name of names) {
    const t = file.tensors[name]!;
    header[name] = { dtype: dtypeOf(t.data), shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  // The header is padded with spaces to a multiple of 8 bytes, so every tensor starts aligned.
  let json = Buffer.from(JSON.stringify(header), 'utf8');
  const padded = Math.ceil(json.length / 8) * 8;
  json = Buffer.concat([json, Buffer.alloc(padded - json.length, 0x20)]);
  const out = Buffer.alloc(8 + json.length + offset);
  out.writeBigUInt64LE(BigInt(json.length), 0);
  json.copy(out, 8);
  let at = 8 + json.length;
  for (const name of names) {
    const t = file.tensors[name]!.data;
    // Typed arrays are in the machine's byte order; every platform Node runs on here is little-endian.
    Buffer.from(t.buffer, t.byteOffset, t.byteLength).copy(out, at);
    at += t.byteLength;
  }
  return out;
}

export function readSafetensors(bytes: Uint8Array): TensorFile {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + length).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const base = 8 + length;
  const tensors: Record<string, Tensor> = {};
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [from, to] = entry.data_offsets;
    // A copy: the typed array must own aligned memory, whatever the source buffer's offset.
    const raw = new Uint8Array(buf.subarray(base + from, base + to));
    const data = entry.dtype === 'F32' ? new Float32Array(raw.buffer, 0, raw.byteLength / 4) : new Int32Array(raw.buffer, 0, raw.byteLength / 4);
    tensors[name] = { data, shape: entry.shape };
  }
  return { tensors, metadata: (header.__metadata__ as unknown as Record<string, string>) ?? {} };
}
