/**
 * Preloaded into relayer-server (`node --import`) by tests that need it to believe it binds a
 * non-loopback address such as 0.0.0.0: every listen() goes to 127.0.0.1 instead, so a test
 * can check the start-up warning without exposing a port beyond the machine.
 */
import { Server } from 'node:net';

const listen = Server.prototype.listen;

Server.prototype.listen = function (this: Server, ...args: unknown[]) {
  if (typeof args[1] === 'string') args[1] = '127.0.0.1';
  else if (typeof args[0] === 'object' && args[0] !== null && 'host' in args[0])
    args[0] = { ...args[0], host: '127.0.0.1' };
  return (listen as (...a: unknown[]) => Server).apply(this, args);
} as typeof listen;
