/**
 * A loopback port nothing listens on, for the tests of a refused connection. A port bound on 0 and
 * closed again is not enough: the kernel hands it to the next server started on port 0, in this
 * process or in another file's running beside it, and the "refused" endpoint then answers HTTP 404.
 * This one is taken below the kernel's ephemeral range (the ports listen(0) hands out), where no
 * server of the test run is put, and checked refused before it is returned.
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';

/** The first port of the ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 2048) return low;
  } catch {
    // not Linux: the IANA range's start below
  }
  return 49_152;
}

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

export async function refusedPort(): Promise<number> {
  for (let port = ephemeralLow() - 1; port > 1024; port -= 101) {
    if (await refuses(port)) return port;
  }
  throw new Error('no loopback port below the ephemeral range refuses connections');
}
