/**
 * lib/log.ts's fromPinoLogger (docs/embedding.md#options): the package's `(msg, fields)` calls reach
 * a fields-first logger as pino's `(obj, msg)`, each level to its own.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fromPinoLogger, type FieldsFirstLogger } from '../../lib/log.ts';

test('docs/embedding.md#options: fromPinoLogger calls the target as (fields, msg), level by level', () => {
  const calls: unknown[][] = [];
  const record =
    (level: string) =>
    (...args: unknown[]) =>
      calls.push([level, ...args]);
  const target: FieldsFirstLogger = {
    debug: record('debug'),
    info: record('info'),
    warn: record('warn'),
    error: record('error'),
  };
  const logger = fromPinoLogger(target);
  logger.info('relayed', { messages: 2 });
  logger.warn('slow node');
  logger.error('store unavailable', { route: '/relay' });
  logger.debug('claim', { limit: 10 });
  assert.deepEqual(calls, [
    ['info', { messages: 2 }, 'relayed'],
    ['warn', {}, 'slow node'],
    ['error', { route: '/relay' }, 'store unavailable'],
    ['debug', { limit: 10 }, 'claim'],
  ]);
});
