FROM oven/bun:1 AS dependencies
WORKDIR /app
COPY package.json bun.lock ./
# The postgres.js patch (patchedDependencies) is applied by the install.
COPY patches ./patches
RUN bun install --frozen-lockfile --production

FROM oven/bun:1-slim
WORKDIR /app
ENV NODE_ENV=production PORT=3000 HOST=0.0.0.0
COPY --from=dependencies /app/node_modules ./node_modules
COPY package.json bun.lock ./
COPY src ./src
COPY sql ./sql
# Without DATABASE_URL the embedded PostgreSQL keeps its data here (mount a volume to keep it).
RUN mkdir -p /app/.data && chown bun:bun /app/.data
USER bun
EXPOSE 3000
# The slim image has no curl: Bun's own fetch probes the liveness endpoint.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["bun", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["bun", "run", "start"]
