// Module `images` (spec/tags/images.yaml): image generation from the catalogue's image models, through the image
// engine (server/engines/image.ts: local, or upstream per model), answered as base64 or as URLs this server serves.
import type { ModuleDescriptor } from '../types.ts';
import { createImage, getImageContent } from './handlers.ts';

export const images: ModuleDescriptor<'images'> = {
  name: 'images',
  handlers: { createImage, getImageContent },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
