/**
 * docs/api.md#decisions-where-the-specification-is-silent: a request refused before its body is
 * read (413 over the limit, 401 without the admin token, 415 without JSON) must reach a client
 * that is still sending. Closing a socket with unread bytes in its receive buffer makes the
 * kernel send a reset, and the reset discards the answer on the client before it reads it. The
 * server answers, half-closes, drains what the client still sends (bounded in bytes and time,
 * like nginx's lingering close), then closes. Each client here streams 64 MiB and must read the
 * documented error: fetch, a raw socket, and curl.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { before, describe, test, type TestContext } from 'node:test';
import { systemClock } from '../../lib/clock.ts';
import { LINGER } from '../../lib/http/body.ts';
import type { MerkleStore } from '../../lib/types.ts';
import { testConfig } from '../helpers/fixtures/config.ts';
import { startApi } from '../helpers/harness/server.ts';

const BODY_BYTES = 64 * 1024 * 1024;
const CHUNK = Buffer.alloc(256 * 1024, 0x20); // spaces: a body that is valid JSON whitespace so far
const ADMIN_TOKEN = 'early-refusal-admin-token';
const MERKLE = '/merkle_tree_insertions';

const merkle: MerkleStore = { insertMerkle: () => 0, listMerkle: () => [] };
let openPort: number;
let guardedPort: number;

// A top-level `before` runs in the file's root test, whose after hooks run once the file is done.
// Real time: real clients stream into these servers while they drain.
before(async (root) => {
  const t = root as TestContext;
  ({ port: openPort } = await startApi(t, {
    config: testConfig({ server: { maxMerkleBodyBytes: 1024 * 1024 } }),
    merkle,
    clock: systemClock,
  }));
  ({ port: guardedPort } = await startApi(t, {
    config: testConfig({ server: { adminToken: ADMIN_TOKEN } }),
    merkle,
    clock: systemClock,
  }));
});

/** 64 MiB of body, produced as fast as the connection takes it. */
function bigBody(): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= BODY_BYTES) return controller.close();
      sent += CHUNK.length;
      controller.enqueue(new Uint8Array(CHUNK));
    },
  });
}

interface Case {
  name: string;
  port: () => number;
  path: string;
  headers: Record<string, string>;
  status: number;
  reason: string;
}

const CASES: Case[] = [
  {
    name: '413 payload_too_large (body grows past the limit)',
    port: () => openPort,
    path: MERKLE,
    headers: { 'content-type': 'application/json' },
    status: 413,
    reason: 'payload_too_large',
  },
  {
    name: '401 unauthorized (no admin token)',
    port: () => guardedPort,
    path: MERKLE,
    headers: { 'content-type': 'application/json' },
    status: 401,
    reason: 'unauthorized',
  },
  {
    name: '415 unsupported_media_type (no JSON content type)',
    port: () => openPort,
    path: MERKLE,
    headers: { 'content-type': 'text/plain' },
    status: 415,
    reason: 'unsupported_media_type',
  },
  {
    name: '413 on POST /relay (64 KiB limit)',
    port: () => openPort,
    path: '/relay',
    headers: { 'content-type': 'application/json' },
    status: 413,
    reason: 'payload_too_large',
  },
];

describe('docs/api.md#decisions-where-the-specification-is-silent: fetch streaming 64 MiB reads the early refusal', () => {
  for (const c of CASES) {
    test(`${c.name}: chunked upload`, async () => {
      const res = await fetch(`http://127.0.0.1:${c.port()}${c.path}`, {
        method: 'POST',
        headers: c.headers,
        body: bigBody(),
        duplex: 'half',
      } as RequestInit);
      assert.equal(res.status, c.status);
      assert.equal((await res.json()).reason, c.reason);
    });
  }

  test('413 with a declared Content-Length of 64 MiB: refused before the body, still read by fetch', async () => {
    const res = await fetch(`http://127.0.0.1:${openPort}${MERKLE}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(BODY_BYTES, 0x20),
    });
    assert.equal(res.status, 413);
    assert.equal((await res.json()).reason, 'payload_too_large');
  });
});

/**
 * A client as simple HTTP clients are written: it sends the whole request (headers, then 64 MiB of
 * body as fast as the socket takes it) and only then reads the answer. Resolves with what it read
 * and how the connection ended.
 */
function sendThenRead(
  port: number,
  head: string,
): Promise<{ received: string; error: string | undefined; written: number }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.pause(); // nothing is read before the request is sent
    let received = '';
    let error: string | undefined;
    let written = 0;
    socket.on('error', (err: NodeJS.ErrnoException) => (error ??= err.code));
    socket.on('close', () => resolve({ received, error, written }));
    const read = () => {
      socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
      socket.resume();
    };
    const writeMore = () => {
      while (written < BODY_BYTES && socket.writable) {
        written += CHUNK.length;
        if (!socket.write(CHUNK)) return void socket.once('drain', writeMore);
      }
      if (socket.writable) socket.end();
      read();
    };
    socket.once('connect', () => {
      socket.write(head);
      writeMore();
    });
  });
}

describe('docs/api.md#decisions-where-the-specification-is-silent: a socket sending 64 MiB before reading is refused early', () => {
  // The raw socket gets the early refusal, then the server closes.
  for (const c of CASES) {
    test(c.name, async () => {
      const headers = Object.entries(c.headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      const head = `POST ${c.path} HTTP/1.1\r\nHost: x\r\n${headers}Content-Length: ${BODY_BYTES}\r\n\r\n`;
      const { received, error, written } = await sendThenRead(c.port(), head);
      assert.equal(error, undefined, `no reset or broken pipe while sending (sent ${written} bytes)`);
      assert.equal(written, BODY_BYTES, 'the server read the whole body it refused');
      assert.match(received, new RegExp(`^HTTP/1\\.1 ${c.status} `), received.slice(0, 200));
      assert.match(received, /\r\nconnection: close\r\n/i, 'the answer says the connection ends');
      const body = received.slice(received.indexOf('\r\n\r\n') + 4);
      assert.equal(JSON.parse(body).reason, c.reason);
    });
  }

  test(`the drain is bounded in bytes: a client that never stops sending is cut off, and the server stays up`, async () => {
    // Cut off after LINGER.maxBytes (MiB).
    const socket = connect(openPort, '127.0.0.1');
    let received = '';
    socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
    socket.on('error', () => {});
    const closed = once(socket, 'close');
    await once(socket, 'connect');
    socket.write(
      `POST ${MERKLE} HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    const chunk = Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from('\r\n')]);
    const endless = 8 * LINGER.maxBytes;
    let sent = 0;
    while (!socket.destroyed && sent < endless) {
      sent += chunk.length;
      if (!socket.write(chunk)) await Promise.race([once(socket, 'drain'), closed]);
    }
    await closed;
    assert.match(received, /^HTTP\/1\.1 413 /);
    assert.ok(sent < endless, `the server closed the connection before the client sent everything (${sent} bytes)`);
    assert.equal((await fetch(`http://127.0.0.1:${openPort}/relay`)).status, 200);
  });

  test(`the drain is bounded in time: a client that neither sends nor closes is cut off (fake clock)`, async (t) => {
    // Cut off after LINGER.maxMs.
    const { port, server, clock } = await startApi(t, {
      config: testConfig({ server: { maxMerkleBodyBytes: 1024 } }),
      merkle,
    });
    let closedAt: number | undefined;
    server.server.once('connection', (serverSide) => serverSide.once('close', () => (closedAt = clock.now())));
    // allowHalfOpen: the server's FIN does not make this client close its side.
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    t.after(() => socket.destroy());
    let received = '';
    socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
    socket.on('error', () => {});
    await once(socket, 'connect');
    const started = clock.now();
    socket.write(
      `POST ${MERKLE} HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\nContent-Length: ${BODY_BYTES}\r\n\r\n` +
        ' '.repeat(10),
    );
    while (!received.includes('\r\n\r\n{')) await clock.flush();
    assert.match(received, /^HTTP\/1\.1 413 /);
    await clock.advance(LINGER.maxMs - 1);
    assert.equal(closedAt, undefined, 'still lingering just before the bound');
    await clock.advance(1);
    for (let i = 0; i < 50 && closedAt === undefined; i++) await clock.flush();
    assert.equal(closedAt, started + LINGER.maxMs);
  });
});

const hasCurl = spawnSync('curl', ['--version']).status === 0;

describe('docs/api.md#decisions-where-the-specification-is-silent: curl streaming 64 MiB reads the early refusal', () => {
  for (const c of CASES) {
    test(c.name, {
      skip: hasCurl ? false : 'curl is not installed (fetch and raw sockets above cover the same)',
    }, async () => {
      const args = ['-sS', '-o', '-', '-w', '\n%{http_code}', '-X', 'POST', '--data-binary', '@-'];
      for (const [k, v] of Object.entries(c.headers)) args.push('-H', `${k}: ${v}`);
      // With a body from stdin curl sends it chunked, as it reads it: a true streaming upload.
      args.push('-H', 'Transfer-Encoding: chunked', `http://127.0.0.1:${c.port()}${c.path}`);
      const child = spawn('curl', args, { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d));
      child.stderr.on('data', (d: Buffer) => (err += d));
      child.stdin.on('error', () => {}); // curl may stop reading once it has the answer
      // One wait for the exit, shared by every pause of the writer (a new once() per pause left a
      // listener behind each time: Node's MaxListenersExceededWarning).
      const exited = once(child, 'exit');
      (async () => {
        for (let sent = 0; sent < BODY_BYTES && !child.stdin.destroyed; sent += CHUNK.length) {
          if (!child.stdin.write(CHUNK)) await Promise.race([once(child.stdin, 'drain'), exited]);
        }
        child.stdin.end();
      })();
      const [code] = (await exited) as [number];
      const [body, status] = [out.slice(0, out.lastIndexOf('\n')), out.slice(out.lastIndexOf('\n') + 1)];
      assert.equal(status, String(c.status), `curl exit ${code}: ${err}`);
      assert.equal(JSON.parse(body).reason, c.reason, err);
    });
  }
});
