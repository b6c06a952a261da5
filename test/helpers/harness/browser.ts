/**
 * A real headless Chromium for the browser tests and the latency benchmark: the binary the npm
 * package @sparticuz/chromium ships (a devDependency: `npm install` brings it, nothing is
 * downloaded at run time), driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
 * JSON messages separated by NUL bytes), so no driver library is needed. Web security stays on:
 * pages get CORS and origins as a user's browser gives them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

export interface Page {
  /** Evaluates `expression` in the page, awaiting a promise it returns; the value as JSON. */
  evaluate<T = unknown>(expression: string): Promise<T>;
}

export interface Browser {
  /** Opens `url` in a new tab; resolves once its load event fired. */
  open(url: string): Promise<Page>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  const { default: chromium } = await import('@sparticuz/chromium');
  const executable = await chromium.executablePath();
  const profile = mkdtempSync(join(tmpdir(), 'relayer-chromium-'));
  const child: ChildProcess = spawn(
    executable,
    [
      '--headless=shell',
      '--no-sandbox',
      '--no-zygote',
      '--single-process',
      '--disable-gpu',
      '--no-first-run',
      '--disable-extensions',
      '--disable-background-networking',
      '--remote-debugging-pipe',
      `--user-data-dir=${profile}`,
      'about:blank',
    ],
    { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] },
  );
  const input = child.stdio[3] as Writable;
  const output = child.stdio[4] as Readable;
  let nextId = 0;
  let buffer = '';
  const pending = new Map<number, { resolve(v: any): void; reject(e: Error): void }>();
  const listeners = new Set<(message: any) => void>();
  output.setEncoding('utf8');
  output.on('data', (chunk: string) => {
    buffer += chunk;
    let at: number;
    while ((at = buffer.indexOf('\0')) !== -1) {
      const message = JSON.parse(buffer.slice(0, at));
      buffer = buffer.slice(at + 1);
      const waiting = message.id === undefined ? undefined : pending.get(message.id);
      if (waiting) {
        pending.delete(message.id);
        if (message.error) waiting.reject(new Error(`${message.error.message} (${message.error.code})`));
        else waiting.resolve(message.result);
      }
      for (const listener of listeners) listener(message);
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  exited.then(() => {
    for (const w of pending.values()) w.reject(new Error('the browser exited'));
  });
  const send = (method: string, params: object = {}, sessionId?: string): Promise<any> =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, { resolve, reject });
      input.write(`${JSON.stringify({ id, method, params, sessionId })}\0`);
    });

  return {
    async open(url) {
      const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
      const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
      await send('Page.enable', {}, sessionId);
      const loaded = new Promise<void>((resolve) => {
        const listener = (m: any) => {
          if (m.sessionId === sessionId && m.method === 'Page.loadEventFired') {
            listeners.delete(listener);
            resolve();
          }
        };
        listeners.add(listener);
      });
      await send('Page.navigate', { url }, sessionId);
      await loaded;
      return {
        async evaluate(expression) {
          const answer = await send(
            'Runtime.evaluate',
            { expression, awaitPromise: true, returnByValue: true },
            sessionId,
          );
          if (answer.exceptionDetails)
            throw new Error(
              `in the page: ${answer.exceptionDetails.exception?.description ?? answer.exceptionDetails.text}`,
            );
          return answer.result.value;
        },
      };
    },
    async close() {
      child.kill();
      await exited;
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
