/**
 * Ends the SQLite store's worker thread the way a crash does, without a hook in the store itself.
 * Imported (or preloaded into relayer-server with `node --import`), it wraps worker_threads'
 * Worker so that every thread this process starts is kept; `terminateWorkers()` (or SIGUSR2 sent
 * to the process) stops them with Worker.terminate(): the thread ends at once, mid-call, exit
 * code 1, exactly what the main thread sees when the thread dies of a fatal error or of memory.
 */
import { syncBuiltinESMExports } from 'node:module';
import threads from 'node:worker_threads';

const started = new Set<threads.Worker>();
const Original = threads.Worker;

class TrackedWorker extends Original {
  constructor(...args: ConstructorParameters<typeof Original>) {
    super(...args);
    started.add(this);
    this.once('exit', () => started.delete(this));
  }
}

threads.Worker = TrackedWorker;
// `import { Worker } from 'node:worker_threads'` elsewhere now resolves to the wrapper too.
syncBuiltinESMExports();

/** The threads started and not yet ended, oldest first. */
export function liveWorkers(): threads.Worker[] {
  return [...started];
}

/** Terminates every live thread; resolves with their exit codes once they have ended. */
export function terminateWorkers(): Promise<number[]> {
  return Promise.all(liveWorkers().map((worker) => worker.terminate()));
}

process.on('SIGUSR2', () => void terminateWorkers());
