// The Files module's API for other modules (evaluations write their result files here; fine-tuning reads its
// datasets): store a file owned by a project, find one, read its content as a stream. Files live on disk under
// DATA_DIR/files/<project>/<id>; the row says what they are.
import { createReadStream, createWriteStream, type ReadStream } from 'node:fs';
import { link, mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { File } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { conflict, notFound, storageFailure } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Db, Tx } from '../../db/index.ts';
import { enter, transition } from '../../runner/progress.ts';
import type { Services } from '../types.ts';
import { AWAITING_BYTES, fileMachine, files } from './machine.ts';
import type { FileType, Purpose } from './rules.ts';

export type { File };
export type StoreServices = Pick<Services, 'db' | 'clock' | 'config'>;

/** A new file id: `file-` and 26 characters that sort by creation time. */
export const newFileId = (nowMs: number) => newId('file', nowMs).replace(/^file_/, 'file-');

/** Where a project's file is kept, relative to DATA_DIR. */
export const fileLocation = (projectId: string, id: string) => join('files', projectId, id);

/** The absolute path of a stored file's bytes. */
export const filePath = (config: Pick<StoreServices['config'], 'dataDir'>, f: Pick<File, 'path'>) => join(config.dataDir, f.path);

export interface NewFile {
  projectId: string;
  filename: string;
  purpose: Purpose;
  fileType: FileType;
}

/**
 * Records a file whose bytes are already at its place (`fileLocation`), in the caller's transaction: a
 * `fine-tune` file starts PENDING and its validation is scheduled; any other is COMPLETED at once.
 */
export async function recordFile(tx: Tx, services: Pick<Services, 'clock' | 'config'>, id: string, input: NewFile, bytes: number): Promise<File> {
  const status = input.purpose === 'fine-tune' ? 'PENDING' : 'COMPLETED';
  const f = await tx.file.create({
    data: {
      id,
      projectId: input.projectId,
      filename: input.filename,
      purpose: input.purpose,
      fileType: input.fileType,
      bytes: BigInt(bytes),
      path: fileLocation(input.projectId, id),
      status,
      createdAt: instant(services.clock),
    },
  });
  await enter(tx, services, fileMachine, { id, projectId: f.projectId, state: status });
  return f;
}

/**
 * Records a signed upload's file, awaiting its bytes (UPLOADING, 0 bytes), in the caller's transaction; entering
 * the state schedules its expiry.
 */
export async function recordUpload(tx: Tx, services: Pick<Services, 'clock' | 'config'>, id: string, input: NewFile): Promise<File> {
  const f = await tx.file.create({
    data: {
      id,
      projectId: input.projectId,
      filename: input.filename,
      purpose: input.purpose,
      fileType: input.fileType,
      bytes: 0n,
      path: fileLocation(input.projectId, id),
      status: AWAITING_BYTES,
      createdAt: instant(services.clock),
    },
  });
  await enter(tx, services, fileMachine, { id, projectId: f.projectId, state: AWAITING_BYTES });
  return f;
}

/**
 * Gives an UPLOADING file its bytes (a temporary file of `bytes` bytes): linked into place (a link, not a rename,
 * so that of two uploads racing for one file the second finds the place taken instead of replacing the first's
 * bytes), then the file moved on as a multipart upload would be recorded: PENDING (validation scheduled) for a
 * `fine-tune` file, COMPLETED for the others. Refused (409) when the bytes have arrived already; on any failure the
 * placed bytes are removed again.
 */
export async function receiveBytes(services: StoreServices, f: File, from: string, bytes: number): Promise<File> {
  const to = filePath(services.config, f);
  await mkdir(dirname(to), { recursive: true }).catch(failed);
  try {
    await link(from, to);
  } catch (e) {
    // EEXIST of the file itself (its folder is there): another upload of it placed its bytes first.
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw alreadyUploaded(f.id);
    failed(e);
  }
  try {
    return await services.db.write(async (tx) => {
      const now = await tx.file.findUnique({ where: { id: f.id } });
      if (!now) throw notFound('file', f.id);
      if (now.status !== AWAITING_BYTES) throw alreadyUploaded(f.id);
      return transition(tx, services, files, now, now.purpose === 'fine-tune' ? 'receive' : 'accept', { data: { bytes: BigInt(bytes) } });
    });
  } catch (e) {
    await rm(to, { force: true });
    throw e;
  }
}

export const alreadyUploaded = (id: string) =>
  conflict(`The bytes of file '${id}' have already been uploaded: an upload URL is good for one upload.`, 'file_already_uploaded', 'id');

/** Moves bytes written elsewhere (an upload) to the file's place. */
export async function placeFile(services: StoreServices, projectId: string, id: string, from: string): Promise<void> {
  const to = join(services.config.dataDir, fileLocation(projectId, id));
  await mkdir(dirname(to), { recursive: true }).catch(failed);
  await rename(from, to).catch(failed);
}

/**
 * A file system failure while placing bytes (DATA_DIR/files replaced by a file, the upload's temporary file removed
 * with DATA_DIR/tmp while it streamed, a folder made unwritable): the storage's, 503 `storage_unavailable`.
 */
const failed = (err: unknown): never => {
  throw storageFailure(err);
};

/**
 * Stores a file owned by a project (e.g. an evaluation's results): the content (a string, bytes or a stream) is
 * written to disk, then the row committed; on failure nothing is left behind. Answers the stored row.
 */
export async function storeFile(services: StoreServices, input: NewFile, content: string | Buffer | Readable | AsyncIterable<string | Buffer>): Promise<File> {
  const id = newFileId(services.clock.now());
  const path = join(services.config.dataDir, fileLocation(input.projectId, id));
  await mkdir(dirname(path), { recursive: true });
  try {
    const source = typeof content === 'string' || Buffer.isBuffer(content) ? Readable.from([content]) : content;
    let bytes = 0;
    await pipeline(
      source,
      async function* (chunks: AsyncIterable<string | Buffer>) {
        for await (const c of chunks) {
          const b = typeof c === 'string' ? Buffer.from(c) : c;
          bytes += b.length;
          yield b;
        }
      },
      createWriteStream(path),
    );
    return await services.db.write((tx) => recordFile(tx, services, id, input, bytes));
  } catch (e) {
    await rm(path, { force: true });
    throw e;
  }
}

/** The project's file, or null (another project's file is absent, and so is a signed upload still awaiting its bytes). */
export function findFile(services: Pick<Services, 'db'>, projectId: string, id: string): Promise<File | null> {
  return findFileIn(services.db.prisma, projectId, id);
}

/** findFile, read through `db` (a transaction's view: a fixture's file made in the same transaction). */
export function findFileIn(db: Db | Tx, projectId: string, id: string): Promise<File | null> {
  return db.file.findFirst({ where: { id, projectId, status: { not: AWAITING_BYTES } } });
}

/** The project's newest file uploaded as `filename` (its bytes arrived), or null. */
export function findFileNamed(db: Db | Tx, projectId: string, filename: string): Promise<File | null> {
  return db.file.findFirst({ where: { projectId, filename, status: { not: AWAITING_BYTES } }, orderBy: { id: 'desc' } });
}

/** A stored file's content, as a stream. */
export function readFileContent(services: { config: Pick<Services['config'], 'dataDir'> }, f: Pick<File, 'path'>): ReadStream {
  return createReadStream(filePath(services.config, f));
}

/** Deletes a file's row (in the caller's transaction) and then, once committed, its bytes (`removeBytes`). */
export const removeBytes = (services: StoreServices, f: Pick<File, 'path'>) => rm(filePath(services.config, f), { force: true });
