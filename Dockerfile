# relayer-api on Node 24 (docs/deploy.md#the-container): the tarball of `npm pack`, installed as
# docs/deploy.md#the-package says and test/process/install.test.ts checks, plus the base image.
# Build it from a clone, where `npm pack` builds dist/ and writes relayer-api-VERSION.tgz:
#   npm pack && docker build -t relayer-api .
FROM node:24-bookworm-slim

WORKDIR /opt/relayer
COPY relayer-api-*.tgz /tmp/
# viem (the worker) and pg (PostgreSQL) are optional peers: the versions the suite runs.
RUN npm install --omit=dev --no-audit --no-fund /tmp/relayer-api-*.tgz viem@2.57.20 pg@8.23.1 \
    && rm /tmp/relayer-api-*.tgz \
    && npm cache clean --force \
    && mkdir /data \
    && chown node:node /data

ENV PATH=/opt/relayer/node_modules/.bin:$PATH \
    NODE_ENV=production
# The working directory is the volume: the default database, ./relayer.db, is /data/relayer.db.
# A config's "db", RELAYER_DB or --db (postgres://… for replicas) choose another as anywhere else.
VOLUME ["/data"]
WORKDIR /data
# Not root: the files under /opt/relayer stay root's, read-only to the relayer.
USER node
EXPOSE 9090 9091

# /ready: 200 while the database answers. A worker's container sets RELAYER_HEALTH_URL to its ops port.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["node", "-e", "fetch(process.env.RELAYER_HEALTH_URL ?? 'http://127.0.0.1:9090/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# Exec form: the command is PID 1 and gets docker stop's SIGTERM itself (clean shutdown, exit 0).
# The worker: `docker run … relayer-api relayer-worker --host 0.0.0.0 --config /etc/relayer/relayer.json`.
CMD ["relayer-server", "--host", "0.0.0.0", "--config", "/etc/relayer/relayer.json"]
