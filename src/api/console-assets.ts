import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Where scripts/build.mjs puts the console's bundle: `<project>/dist/console`, found from this module whether it
 * runs from src/ (tests, tsx) or from dist/src/ (npm start).
 */
export function consoleAssetsDir(): string {
  let dir = __dirname;
  while (!existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return path.join(dir, 'dist', 'console');
}
