/**
 * Preloaded into relayer-worker (`node --import`) by the test of a machine without the optional
 * `viem` package: resolving 'viem' fails exactly as it does when the package is not installed.
 */
import { registerHooks } from 'node:module';

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === 'viem' || specifier.startsWith('viem/')) {
      throw Object.assign(new Error(`Cannot find package 'viem' imported from ${context.parentURL}`), {
        code: 'ERR_MODULE_NOT_FOUND',
      });
    }
    return nextResolve(specifier, context);
  },
});
