/**
 * A log sink for node streams that writes the lines of one event-loop turn in one call.
 *
 * process.stdout is synchronous for files and pipes on Linux, so a write per request log line is a
 * write(2) per request, the largest single item of a CPU profile of GET /relay under load
 * (bench/http.ts with BENCH_CPU_PROF). Lines are gathered and written together `delayMs` after the
 * first of them, or at once when `maxBytes` are waiting. The order of lines is kept.
 *
 * What can be lost: lines of the current turn when the process is killed with SIGKILL. A normal
 * exit loses nothing as long as the owner calls flush() on process 'exit' (relayer-server does).
 */
export interface LineSink {
  write(line: string): void;
  /** Writes whatever is waiting, now. */
  flush(): void;
}

export interface LineSinkOptions {
  /** Write at once when this many characters are waiting. Default 64 KiB. */
  maxBytes?: number;
  /** Longest time a line waits before it is written. Default 10 ms. */
  delayMs?: number;
}

export function createLineSink(stream: { write(chunk: string): unknown }, options: LineSinkOptions = {}): LineSink {
  const maxBytes = options.maxBytes ?? 64 * 1024;
  const delayMs = options.delayMs ?? 10;
  let pending: string[] = [];
  let size = 0;
  let scheduled: ReturnType<typeof setTimeout> | undefined;

  function flush(): void {
    if (scheduled !== undefined) {
      clearTimeout(scheduled);
      scheduled = undefined;
    }
    if (pending.length === 0) return;
    const text = pending.length === 1 ? pending[0] : pending.join('');
    pending = [];
    size = 0;
    stream.write(text);
  }

  return {
    write(line) {
      pending.push(line);
      size += line.length;
      if (size >= maxBytes) flush();
      else if (scheduled === undefined) {
        scheduled = setTimeout(flush, delayMs);
        scheduled.unref();
      }
    },
    flush,
  };
}
