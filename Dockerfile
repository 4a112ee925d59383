# The gateway image: `api` by default; docker-compose.yml also runs it as `worker`.
# The TypeScript is compiled to dist/ by scripts/build.mjs (esbuild, a runtime dependency) while building the image.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 DATA_DIR=/app/data
# A 4 MB young-generation semi-space: about 25 MB less resident memory under load at the same throughput
# (bench/RESULTS.md, relay; docs/decisions/0032-compiled-gateway-and-heap-growth.md).
ENV NODE_OPTIONS=--max-semi-space-size=4
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY scripts/build.mjs ./scripts/build.mjs
COPY src ./src
# The web console is bundled by the same build (dist/console, served at /console).
COPY console ./console
RUN node scripts/build.mjs
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
# node directly (not npm), so SIGTERM reaches the gateway and it shuts down in order.
CMD ["node", "dist/src/cli/main.js", "api"]
