// The README's first section, as an application's test suite writes it.
import { startPlatform } from 'inference-platform/testing';

export default async function () {
  const platform = await startPlatform();
  Object.assign(process.env, { PLATFORM_URL: platform.url, PLATFORM_API_KEY: platform.apiKey, PLATFORM_CONTROL_KEY: platform.controlKey });
  return () => platform.stop();
}
