/**
 * Preloaded into relayer-server (`node --import`) by test/process/sqlite-worker.test.ts: at exit it writes
 * one stderr line `{"probe":"sqlite","loaded":[…]}` listing the node:sqlite modules and bindings
 * loaded in the MAIN thread (process.moduleLoadList is per thread; the store's worker has its own).
 * An empty list proves no request path called node:sqlite on the main thread.
 */
process.on('exit', () => {
  const loaded = (process as unknown as { moduleLoadList: string[] }).moduleLoadList.filter((name) =>
    /sqlite/i.test(name),
  );
  process.stderr.write(JSON.stringify({ probe: 'sqlite', loaded }) + '\n');
});
