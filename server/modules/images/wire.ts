// Module `images`: a generation's images -> the wire shape (the platform's ImageResponse, which the official
// client's images.generate parses), with the seeds, the engine and its warnings.
import type { Wire } from '../types.ts';

export interface Rendered {
  id: string;
  model: string;
  seed: number;
  engine: 'local' | 'upstream';
  warnings: string[];
  /** Per image, in order: its bytes (base64 answers) or where this server serves it (url answers). */
  images: ({ file: Buffer } | { url: string })[];
}

export function imageWire(r: Rendered): Wire<'ImageResponse'> {
  // Each image's own seed only where this server knows it: the local engine renders image i with seed + i.
  const seedOf = (index: number) => (r.engine === 'local' ? { seed: r.seed + index } : {});
  return {
    id: r.id,
    model: r.model,
    object: 'list',
    data: r.images.map((image, index) =>
      'url' in image
        ? { index, type: 'url' as const, url: image.url, ...seedOf(index) }
        : { index, type: 'b64_json' as const, b64_json: image.file.toString('base64'), ...seedOf(index) },
    ),
    seed: r.seed,
    engine: r.engine,
    warnings: r.warnings,
  };
}
