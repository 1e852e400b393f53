# syntax=docker/dockerfile:1
# The durable-mcp worker, CLI and HTTP API. No Go and no Temporal CLI inside: it connects to the
# cluster named by TEMPORAL_ADDRESS (or a Temporal TOML profile), and keeps large payloads in the
# store the DMCP_S3_* settings name.
#   docker build -t durable-mcp:local .
#   docker run --rm -e TEMPORAL_ADDRESS=temporal:7233 durable-mcp:local worker
ARG NODE_IMAGE=node:20.19.5-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Scripts off: `prepare` would build and try to install the Temporal CLI, which the image never needs.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npx tsc -p tsconfig.json

FROM ${NODE_IMAGE}
# tini as PID 1: forwards SIGTERM to the worker and reaps the MCP servers' orphaned children.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini ca-certificates \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY deploy/healthcheck.mjs ./deploy/healthcheck.mjs
# The data dir holds the turn key (shared by workers and clients of one deployment); /srv/mcp is
# where operators put the mcp.json files workers may read (DMCP_ALLOWED_CONFIG_DIRS).
RUN mkdir -p /data /srv/mcp && chown node:node /data
ENV DMCP_DATA_DIR=/data
USER node
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 CMD ["node", "/app/deploy/healthcheck.mjs"]
ENTRYPOINT ["/usr/bin/tini", "-g", "--", "node", "/app/dist/cli/main.js"]
CMD ["worker"]
