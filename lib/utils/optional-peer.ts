/**
 * Loads an optional peer dependency the way the app loads it: with `require()` in the
 * CommonJS build (Node ≥ 20.19 also requires ES-module packages, and CommonJS Jest provides
 * its own `require`), with `import()` where the library runs as an ES module.
 *
 * @returns the module, or `undefined` when the package is not installed.
 * @throws what loading an installed package threw (a broken install, a missing dependency of it).
 */
export function loadOptionalPeer<T>(specifier: string): T | undefined | Promise<T | undefined> {
  if (typeof require === 'function') {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- a peer that may be absent, loaded like the app loads it
      return require(specifier) as T;
    } catch (error) {
      return notInstalled(error, specifier);
    }
  }
  return (import(specifier) as Promise<T>).catch((error: unknown) => notInstalled(error, specifier));
}

function notInstalled(error: unknown, specifier: string): undefined {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : '';
  // Only the package itself missing; a missing dependency *of* the package is a broken install.
  if ((code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && message.includes(`'${specifier}'`)) return undefined;
  throw error;
}
