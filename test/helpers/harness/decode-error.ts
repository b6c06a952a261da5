import assert from 'node:assert/strict';
import { DecodeError } from '../../../lib/errors/classes.ts';

/** Runs `fn`, which must throw a DecodeError, and returns its code (fails the test otherwise). */
export function decodeCode(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof DecodeError, `expected DecodeError, got ${String(error)}`);
    return error.code;
  }
  assert.fail('expected a DecodeError');
}
