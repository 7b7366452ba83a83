// Packages loaded when first used rather than at start: a start need not pay for what few requests use (a native
// addon, a megabyte of code). `require` makes the load synchronous, where the package is first called.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** `name`'s module, loaded the first time the answer is called. */
export function onFirstUse<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(name) as T);
}
