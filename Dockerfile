# Untested here: no Docker engine runs on our machines. See README, "Deploy".
FROM oven/bun:1 AS dependencies
WORKDIR /app
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile --production

FROM oven/bun:1-slim
WORKDIR /app
ENV NODE_ENV=production PORT=3000
COPY --from=dependencies /app/node_modules ./node_modules
COPY package.json bun.lock ./
COPY src ./src
COPY sql ./sql
USER bun
EXPOSE 3000
CMD ["bun", "run", "start"]
