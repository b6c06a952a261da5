/**
 * relayer-worker's command line run in this process: bin/relayer-worker.ts's workerCommand, what
 * the bin runs before its worker serves (flags, config, the commands, gas policy, key, viem,
 * database, the destinations' nodes), with `args` and `env` only. A refusal ends as the bin ends
 * it (runCommand: `relayer-worker: MESSAGE` on stderr, its exit code); a worker that passed every
 * start-up check is closed again, code null. It saves a process start and the loading of lib/
 * per case; the tests that use it keep a real process for each kind of ending
 * (BENCHMARKS.md#test-suite).
 */
import { CommandLineError } from '../../../bin/lib/command-line.ts';
import { createLineSink } from '../../../lib/node/log-sink.ts';

export interface WorkerRun {
  code: number | null;
  /** Log lines and what the command printed on stdout, as the process would have written them. */
  stdout: string;
  stderr: string;
  /** Both, stdout first (a process's output as test/helpers/harness/processes.ts collects it, give or take the order). */
  output: string;
}

export async function workerInProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<WorkerRun> {
  const { workerCommand } = await import('../../../bin/relayer-worker.ts');
  let stdout = '';
  let stderr = '';
  const out = { write: (text: string) => (stdout += text) };
  const err = { write: (text: string) => (stderr += text) };
  const sink = createLineSink(out);
  let code: number | null;
  try {
    const checked = await workerCommand(args, { ...env }, { stdout: out, stderr: err }, sink);
    if (typeof checked === 'number') code = checked;
    else {
      await checked.store.close();
      code = null;
    }
  } catch (error) {
    if (!(error instanceof CommandLineError)) throw error;
    code = error.exitCode;
    stderr += `relayer-worker: ${error.message}\n`;
  }
  sink.flush();
  return { code, stdout, stderr, output: stdout + stderr };
}
