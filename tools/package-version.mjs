// @ts-check
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * The path of an installed package's `package.json`.
 * @param {string} name
 * @returns {string}
 */
export function packageJsonPath(name) {
  return require.resolve(`${name}/package.json`);
}

/**
 * The version of an installed package.
 * @param {string} name
 * @returns {string}
 */
export function packageVersion(name) {
  return /** @type {{ version: string }} */ (JSON.parse(readFileSync(packageJsonPath(name), 'utf8'))).version;
}
