/**
 * The two ways a test starts the relay API, each cleaned up by the test that started it:
 * - `startApi(t, options)`: createRelayServer in this process on 127.0.0.1 port 0, with a fake clock
 *   and the test config unless told otherwise;
 * - `startRelayerServer(t, args)`: the real bin/relayer-server.ts as a child process on the Node that
 *   runs the tests, ready once it printed "listening on http://HOST:PORT".
 * (`relayerServerRefusal(args)` runs the server's start-up checks in this process instead.)
 * `t` is whatever has `after(fn)`: a TestContext, or the root context a top-level `before` gets.
 */
import type { Clock } from '../../../lib/clock.ts';
import { createRelayServer, type RelayServer, type RelayServerOptions } from '../../../lib/http/server.ts';
import type { RelayApi } from '../../../lib/http/handler.ts';
import { testConfig } from '../fixtures/config.ts';
import { createFakeClock, type FakeClock } from '../fakes/clock.ts';
import { httpRequest, postJson, type RawResponse } from './http.ts';
import type { Cleanup } from './server-process.ts';

// The child-process half lives in server-process.ts, which loads neither lib/http nor the OpenAPI
// checker: a file that only spawns bin/relayer-server.ts can import it from there.
export {
  launchRelayerServer,
  REPO_ROOT,
  type RelayerProcess,
  type RelayerServerOptions,
  runRelayerServer,
  SERVER_BIN,
  startRelayerServer,
  type Cleanup,
} from './server-process.ts';

export type StartApiOptions<C extends Clock> = Omit<Partial<RelayServerOptions>, 'clock'> & { clock?: C };

export interface StartedApi<C extends Clock> {
  /** http://127.0.0.1:PORT */
  url: string;
  port: number;
  server: RelayServer;
  api: RelayApi;
  clock: C;
  /** POST /relay with a JSON body. */
  relay(body: unknown, headers?: Record<string, string>): Promise<RawResponse>;
  get(path: string, headers?: Record<string, string>): Promise<RawResponse>;
}

export async function startApi<C extends Clock = FakeClock>(
  t: Cleanup,
  options: StartApiOptions<C> = {},
): Promise<StartedApi<C>> {
  const clock = options.clock ?? (createFakeClock() as Clock as C);
  const server = createRelayServer({ ...options, config: options.config ?? testConfig(), clock });
  const { url, port } = await server.listen(0, '127.0.0.1');
  t.after(() => server.close(100));
  return {
    url,
    port,
    server,
    api: server.api,
    clock,
    relay: (body, headers) => postJson(url, '/relay', body, headers),
    get: (path, headers) => httpRequest(url, { path, headers }),
  };
}

/**
 * What relayer-server refuses to start with, found in this process: the function its start runs
 * first on its arguments and environment (bin/lib/command-line.ts parseCommandLine, with relayer-server's
 * --host/--port going to config.server), and, with `openStore`, the store it opens next
 * (openRelayerStore). `output` is the line the process would print on stderr, `code` its exit code;
 * both null when the start is accepted (a store opened is closed at once). The bin turns the
 * refusal into that line and exit code in one place (runCommand): test/process/bin.test.ts checks that
 * through the process for each kind of refusal, this checks the rest.
 */
export async function relayerServerRefusal(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; openStore?: boolean } = {},
): Promise<{ code: number | null; output: string | null }> {
  const [{ CommandLineError, parseCommandLine }, { openRelayerStore }] = await Promise.all([
    import('../../../bin/lib/command-line.ts'),
    import('../../../bin/lib/store.ts'),
  ]);
  const { silentLogger } = await import('../../../lib/log.ts');
  try {
    const parsed = parseCommandLine(
      { help: 'Usage: relayer-server', listen: (config) => config.server },
      args,
      options.env ?? {},
    );
    if (parsed !== 'help' && options.openStore) await (await openRelayerStore(parsed.config, silentLogger)).close();
    return { code: null, output: null };
  } catch (error) {
    if (!(error instanceof CommandLineError)) throw error;
    return { code: error.exitCode, output: `relayer-server: ${error.message}\n` };
  }
}
