// Bytes the server keeps under DATA_DIR (uploaded files, rendered images and videos), found before they are sent:
// present, they are served; missing while their storage area (DATA_DIR/files, images, videos) is in place, they were
// deleted behind the server's back and are gone for good (410); otherwise the storage itself is failing (a folder
// removed, replaced by a file, unreadable: 503 `storage_unavailable`, which a retry may cure).
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type ApiError, storageFailure } from './errors.ts';

/** The absolute path of the bytes at `relative` (under `dataDir`), once found; `gone` when they are gone. */
export async function storedBytes(dataDir: string, relative: string, gone: () => ApiError): Promise<string> {
  const path = join(dataDir, relative);
  try {
    if ((await stat(path)).isFile()) return path;
  } catch (err) {
    const area = join(dataDir, relative.split(/[\\/]/)[0] ?? '');
    const inPlace = await stat(area).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && inPlace) throw gone();
    throw storageFailure(err);
  }
  // Something else than a file where the bytes should be.
  throw storageFailure(new Error(`not a file: ${path}`));
}
