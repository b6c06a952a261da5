/**
 * Preloaded into relayer-server (`node --import`) by the test of a machine without the optional
 * `pg` package: resolving 'pg' fails exactly as it does when the package is not installed.
 */
import { registerHooks } from 'node:module';

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === 'pg') {
      throw Object.assign(new Error(`Cannot find package 'pg' imported from ${context.parentURL}`), {
        code: 'ERR_MODULE_NOT_FOUND',
      });
    }
    return nextResolve(specifier, context);
  },
});
