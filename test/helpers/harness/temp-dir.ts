/**
 * A fresh folder under the system's temporary directory, removed when the tests that own it end:
 * those of the calling file (its `after` hook; call it when the file loads) or, given a test's
 * context `t`, that test. `prefix` names it (`relayer-bin-`), so a folder left by a killed run
 * says which file made it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

export function tempDir(prefix: string, t?: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  if (t) t.after(remove);
  else after(remove);
  return dir;
}
