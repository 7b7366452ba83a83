// Module `images`: what the auth matrix needs (tests only).
import type { Fixtures } from '../types.ts';

export const fixtures: Fixtures<'images'> = {
  crossProject: {
    getImageContent: async ({ owner }) => {
      const { data } = await owner.api.POST('/v1/images/generations', {
        body: {
          model: 'black-forest-labs/FLUX.1-schnell',
          prompt: 'a fixture',
          width: 64,
          height: 64,
          steps: 1,
          n: 1,
          guidance_scale: 3.5,
          output_format: 'png',
          response_format: 'url',
        },
      });
      const url = (data!.data[0] as { url: string }).url;
      return { params: { id: url.split('/').at(-2)! } };
    },
  },
};
