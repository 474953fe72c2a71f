# Hoist from its sources (run through tsx; there is no build step). Used by docker-compose.yml.
FROM node:22-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN mkdir -p /var/lib/hoist && chown node:node /var/lib/hoist
USER node
ENV HOIST_DATA_DIR=/var/lib/hoist HOIST_HOST=0.0.0.0
EXPOSE 3000 8080
ENTRYPOINT ["node", "bin/hoist.js"]
CMD ["start"]
