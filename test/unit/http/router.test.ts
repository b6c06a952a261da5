import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileRoutes, type RouteHandler } from '../../../lib/http/router.ts';

const handler: RouteHandler = () => {};

test('docs/design.md#http-surface: the route table derives Allow from the methods each route lists', () => {
  // HEAD comes with GET, OPTIONS always.
  const table = compileRoutes([
    { path: '/relay', GET: handler, POST: handler },
    { path: '/metrics', GET: handler },
    { path: '/submit', POST: handler },
  ]);
  assert.equal(table.exact('/relay')?.allow, 'GET, HEAD, POST, OPTIONS');
  assert.equal(table.exact('/metrics')?.allow, 'GET, HEAD, OPTIONS');
  assert.equal(table.exact('/submit')?.allow, 'POST, OPTIONS');
  assert.equal(table.exact('/nothing'), undefined);
});

test('a {name} segment matches one non-empty segment and only that; exact paths win', () => {
  const table = compileRoutes([
    { path: '/relay', GET: handler },
    { path: '/relay/latest', GET: handler },
    { path: '/relay/{message_id}', GET: handler },
    { path: '/chains/{chain}/blocks/{block}', GET: handler },
  ]);
  const cases: [string, string | undefined, Record<string, string>][] = [
    ['/relay', '/relay', {}],
    ['/relay/latest', '/relay/latest', {}],
    ['/relay/0xabc', '/relay/{message_id}', { message_id: '0xabc' }],
    ['/relay/', undefined, {}],
    ['/relay/0xabc/more', undefined, {}],
    ['/chains/base/blocks/7', '/chains/{chain}/blocks/{block}', { chain: 'base', block: '7' }],
    ['/chains/base/block/7', undefined, {}],
  ];
  for (const [path, route, params] of cases) {
    const found: Record<string, string> = {};
    assert.equal(table.match(path, found)?.path, route, path);
    assert.deepEqual(found, params, path);
  }
  // The exact lookup never matches a pattern: it is the fast path for a request line with no parameters.
  assert.equal(table.exact('/relay/0xabc'), undefined);
});
