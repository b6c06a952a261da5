/**
 * State shared by everything that uses one node client, under a key (a signer and chain, a clock):
 * kept as long as the client is (a WeakMap), made on first use.
 */
export function perClient<K, V>(): (client: object, key: K, make: () => V) => V {
  const byClient = new WeakMap<object, Map<K, V>>();
  return (client, key, make) => {
    let byKey = byClient.get(client);
    if (!byKey) {
      byKey = new Map();
      byClient.set(client, byKey);
    }
    let value = byKey.get(key);
    if (value === undefined) {
      value = make();
      byKey.set(key, value);
    }
    return value;
  };
}
