# Hoist as it ships: the TypeScript is compiled to dist/ in a build stage; the image holds dist/, bin/
# and the production packages only, and node runs dist/ directly. Used by docker-compose.yml.
# NODE_IMAGE: an image with node and npm of a version package.json's engines allow.
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The packages in a layer of their own (reused while the lockfile is unchanged), with their install
# scripts (argon2's binding) but not Hoist's `prepare`, which needs the sources copied next.
RUN npm ci --no-audit --no-fund --ignore-scripts && npm rebuild --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
WORKDIR /app
# NODE_COMPILE_CACHE: Node 22 keeps the modules' compiled code there, for a faster next start.
ENV HOIST_DATA_DIR=/var/lib/hoist HOIST_HOST=0.0.0.0 NODE_COMPILE_CACHE=/tmp/hoist-compile-cache
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY --from=build /app/bin bin
RUN mkdir -p /var/lib/hoist && chown node:node /var/lib/hoist
USER node
EXPOSE 3000 8080
# `docker compose exec api node bin/hoist.js accounts ...` works too; bin/hoist.js loads the same file.
ENTRYPOINT ["node", "dist/adapters/cli/main.js"]
CMD ["start"]
