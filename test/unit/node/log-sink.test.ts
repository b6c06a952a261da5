/**
 * createLineSink (lib/node/log-sink.ts): the request log's lines are gathered and written in one
 * call, in order, within delayMs, at once past maxBytes, and on flush(). Timers are mocked.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLineSink } from '../../../lib/node/log-sink.ts';

function stream() {
  const writes: string[] = [];
  return { writes, write: (chunk: string) => writes.push(chunk) };
}

test('log sink: lines of one turn are written in one call, in order, after delayMs', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const out = stream();
  const sink = createLineSink(out, { delayMs: 10 });
  sink.write('a\n');
  sink.write('b\n');
  sink.write('c\n');
  assert.deepEqual(out.writes, []);
  t.mock.timers.tick(9);
  assert.deepEqual(out.writes, []);
  t.mock.timers.tick(1);
  assert.deepEqual(out.writes, ['a\nb\nc\n']);
  sink.write('d\n');
  t.mock.timers.tick(10);
  assert.deepEqual(out.writes, ['a\nb\nc\n', 'd\n']);
});

test('log sink: flush() writes what waits at once and cancels the pending timer', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const out = stream();
  const sink = createLineSink(out);
  sink.flush();
  assert.deepEqual(out.writes, [], 'nothing waiting: no empty write');
  sink.write('x\n');
  sink.flush();
  assert.deepEqual(out.writes, ['x\n']);
  t.mock.timers.tick(1000);
  assert.deepEqual(out.writes, ['x\n'], 'the timer of a flushed batch writes nothing more');
});

test('log sink: a batch reaching maxBytes is written at once', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const out = stream();
  const sink = createLineSink(out, { maxBytes: 10 });
  sink.write('12345\n');
  assert.equal(out.writes.length, 0);
  sink.write('67890\n');
  assert.deepEqual(out.writes, ['12345\n67890\n']);
  sink.write('z\n');
  t.mock.timers.tick(10);
  assert.deepEqual(out.writes, ['12345\n67890\n', 'z\n']);
});
