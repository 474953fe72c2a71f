/**
 * Every configuration key Hoist reads: its type, default, environment variable and meaning.
 * The README's configuration table is generated from this list (`node scripts/config-table.ts`).
 */
export type SettingType = 'string' | 'integer' | 'boolean' | 'secret';

export interface Setting {
  type: SettingType;
  env: string;
  default?: string | number | boolean;
  min?: number;
  max?: number;
  oneOf?: readonly string[];
  /** A secret's shortest accepted value, in bytes (UTF-8); placeholders are refused whatever their length. */
  minBytes?: number;
  /** A secret of comma-separated `id:base64` keys: the bytes each key must decode to. */
  keyBytes?: number;
  doc: string;
}

export const settings = {
  dataDir: {
    type: 'string',
    env: 'HOIST_DATA_DIR',
    default: './.hoist',
    doc: 'Directory for the SQLite file, local storage, keys and releases.',
  },
  host: { type: 'string', env: 'HOIST_HOST', default: '127.0.0.1', doc: 'Address the API and the edge listen on.' },
  port: { type: 'integer', env: 'HOIST_PORT', default: 3000, min: 0, max: 65535, doc: 'API port.' },
  edgePort: {
    type: 'integer',
    env: 'HOIST_EDGE_PORT',
    default: 8080,
    min: 0,
    max: 65535,
    doc: 'Edge port (serves deployed projects by Host header, and nothing else: no health or metrics).',
  },
  edgeAdminPort: {
    type: 'integer',
    env: 'HOIST_EDGE_ADMIN_PORT',
    default: 8081,
    min: 0,
    max: 65535,
    doc:
      'Port where an edge running without the API (`hoist edge`) answers /healthz, ' +
      '/readyz and /metrics, on edgeAdminHost.',
  },
  edgeAdminHost: {
    type: 'string',
    env: 'HOIST_EDGE_ADMIN_HOST',
    default: '127.0.0.1',
    doc:
      "Address of the edge's health and metrics listener (edgeAdminPort): loopback " +
      'unless a private interface is named; never the public one.',
  },
  routesRevalidateSeconds: {
    type: 'integer',
    env: 'HOIST_ROUTES_REVALIDATE_SECONDS',
    default: 30,
    min: 1,
    doc:
      'Every this many seconds the edge reloads its whole routing table from the database, bounding how ' +
      'stale a lost change notification can leave it.',
  },
  edgeUsageFlushSeconds: {
    type: 'integer',
    env: 'HOIST_EDGE_USAGE_FLUSH_SECONDS',
    default: 60,
    min: 1,
    max: 3600,
    doc:
      "Seconds between two additions of what an edge process counted (each project's requests and bytes) to the " +
      'stored usage (GET /api/v1/projects/{id}/usage); an edge that dies loses at most this long of counts.',
  },
  edgeAccessLogEvery: {
    type: 'integer',
    env: 'HOIST_EDGE_ACCESS_LOG_EVERY',
    default: 0,
    min: 0,
    doc:
      'Access log of the static files the edge serves directly: one request in this many is logged ' +
      'at info (1: all of them). 0 (the default) logs none; metrics count every request either way.',
  },
  publicUrl: {
    type: 'string',
    env: 'HOIST_PUBLIC_URL',
    doc: 'Public base URL of the API, used in links sent by e-mail. Default: http://localhost:<port>.',
  },
  appsDomain: {
    type: 'string',
    env: 'HOIST_APPS_DOMAIN',
    default: 'localhost',
    doc: 'Service-owned apps domain; a project is served at <slug>.<appsDomain>.',
  },
  appsScheme: {
    type: 'string',
    env: 'HOIST_APPS_SCHEME',
    default: 'http',
    oneOf: ['http', 'https'],
    doc: 'Scheme of project URLs.',
  },
  appsPort: {
    type: 'integer',
    env: 'HOIST_APPS_PORT',
    min: 0,
    max: 65535,
    doc: 'Port shown in project URLs. Default: the edge port (omitted when 80 or 443).',
  },
  db: { type: 'string', env: 'HOIST_DB', default: 'sqlite', doc: 'Database plugin: sqlite (embedded) or postgres.' },
  sqliteSynchronous: {
    type: 'string',
    env: 'HOIST_SQLITE_SYNCHRONOUS',
    default: 'normal',
    oneOf: ['normal', 'full'],
    doc:
      "SQLite's synchronous mode (db=sqlite, in WAL): normal keeps every commit through a crash of Hoist, while a " +
      'power loss or an OS crash may undo the last few; full makes each commit wait for the disk.',
  },
  databaseUrl: {
    type: 'secret',
    env: 'HOIST_DATABASE_URL',
    doc: 'PostgreSQL connection URL (db=postgres), e.g. postgres://user@127.0.0.1:5432/hoist.',
  },
  storage: {
    type: 'string',
    env: 'HOIST_STORAGE',
    default: 'local',
    doc: 'Storage plugin: local (data directory) or minio.',
  },
  s3Endpoint: {
    type: 'string',
    env: 'HOIST_S3_ENDPOINT',
    doc: 'S3 API URL Hoist talks to (storage=minio), e.g. http://minio:9000 or https://s3.eu-west-1.amazonaws.com.',
  },
  s3PublicEndpoint: {
    type: 'string',
    env: 'HOIST_S3_PUBLIC_ENDPOINT',
    doc: 'S3 URL that clients reach, used in presigned URLs (direct uploads). Default: s3Endpoint.',
  },
  s3AccessKey: { type: 'string', env: 'HOIST_S3_ACCESS_KEY', doc: 'S3 access key id (storage=minio).' },
  s3SecretKey: { type: 'secret', env: 'HOIST_S3_SECRET_KEY', doc: 'S3 secret access key (storage=minio).' },
  s3Bucket: {
    type: 'string',
    env: 'HOIST_S3_BUCKET',
    default: 'hoist',
    doc: 'Bucket that holds uploads, artifacts and logs (storage=minio).',
  },
  s3Region: {
    type: 'string',
    env: 'HOIST_S3_REGION',
    default: 'us-east-1',
    doc: 'Region of the bucket (storage=minio).',
  },
  s3CreateBucket: {
    type: 'boolean',
    env: 'HOIST_S3_CREATE_BUCKET',
    default: false,
    doc: 'Create the bucket at start when it is missing; otherwise a missing bucket fails the start.',
  },
  queue: {
    type: 'string',
    env: 'HOIST_QUEUE',
    default: 'local',
    doc: 'Queue plugin: local (in-process, kept in the database) or nats.',
  },
  changes: {
    type: 'string',
    env: 'HOIST_CHANGES',
    default: 'auto',
    oneOf: ['auto', 'memory', 'postgres'],
    doc:
      'How processes tell each other that something changed (a release switch reaches every ' +
      "edge's routing table): memory (this process only), postgres (LISTEN/NOTIFY on the " +
      'database), or auto (postgres when db=postgres, else memory).',
  },
  natsUrl: {
    type: 'string',
    env: 'HOIST_NATS_URL',
    default: 'nats://127.0.0.1:4222',
    doc: 'NATS server URL(s), comma-separated (queue=nats); JetStream must be enabled.',
  },
  natsStream: {
    type: 'string',
    env: 'HOIST_NATS_STREAM',
    default: 'HOIST_JOBS',
    doc:
      'JetStream work-queue stream of the jobs (queue=nats); created if missing. Its ' +
      'subjects are <stream>.<topic>.<key>.',
  },
  natsConsumer: {
    type: 'string',
    env: 'HOIST_NATS_CONSUMER',
    default: 'hoist-workers',
    doc: 'Durable pull consumer name prefix (queue=nats): every worker shares <consumer>_<topic>.',
  },
  deployer: {
    type: 'string',
    env: 'HOIST_DEPLOYER',
    default: 'local',
    doc: 'Deployer plugin: local, docker or pulumi.',
  },
  dockerHost: {
    type: 'string',
    env: 'HOIST_DOCKER_HOST',
    default: 'unix:///var/run/docker.sock',
    doc: 'Docker Engine API endpoint (deployer=docker or pulumi): unix:///path/to/docker.sock or tcp://host:port.',
  },
  dockerBaseImage: {
    type: 'string',
    env: 'HOIST_DOCKER_BASE_IMAGE',
    default: 'hoist-node-base:local',
    doc:
      'Image every release image is built on (deployer=docker or pulumi); it needs ' +
      "node, npm and sh. The default is built from this machine's Node.js by " +
      'scripts/docker-base-image.sh.',
  },
  dockerNetwork: {
    type: 'string',
    env: 'HOIST_DOCKER_NETWORK',
    default: 'hoist',
    doc:
      'Bridge network release containers run on (deployer=docker or pulumi); created ' +
      'when missing. The edge reaches releases at their address on it.',
  },
  pulumiPassphrase: {
    type: 'secret',
    env: 'HOIST_PULUMI_PASSPHRASE',
    minBytes: 16,
    doc:
      'Passphrase of the secrets of the Pulumi stacks (deployer=pulumi), whose state is ' +
      'kept in <dataDir>/pulumi. Default: empty.',
  },
  sandbox: {
    type: 'string',
    env: 'HOIST_SANDBOX',
    default: 'bwrap',
    oneOf: ['bwrap', 'docker', 'none'],
    doc:
      'Where tenant code (installs, builds, Node.js releases of deployer=local) runs: ' +
      'bwrap (bubblewrap namespaces, the default on Linux), docker (throwaway hardened ' +
      "containers), or none (on the host with Hoist's privileges: only for a machine " +
      'with one trusted user; every start warns).',
  },
  sandboxUidBase: {
    type: 'integer',
    env: 'HOIST_SANDBOX_UID_BASE',
    default: 1900000000,
    min: 1000,
    max: 4294900000,
    doc:
      'When Hoist runs as root, each sandboxed run gets its own host uid/gid from this ' +
      "base upwards (never Hoist's, never root).",
  },
  sandboxDenyCidrs: {
    type: 'string',
    env: 'HOIST_SANDBOX_DENY_CIDRS',
    doc:
      'Comma-separated address ranges that sandboxed code may never reach besides the ' +
      "built-in ones (the host's own addresses, loopback, link-local, Docker's " +
      'networks): put the private network of PostgreSQL, NATS, S3 and Docker here.',
  },
  dockerRuntime: {
    type: 'string',
    env: 'HOIST_DOCKER_RUNTIME',
    doc:
      'OCI runtime of every tenant container, builds and releases alike (e.g. runsc for ' +
      "gVisor). Default: the engine's default (runc).",
  },
  mailer: {
    type: 'string',
    env: 'HOIST_MAILER',
    default: 'outbox',
    doc: 'Mailer plugin: outbox (stored; `hoist mail list`) or smtp.',
  },
  smtpUrl: {
    type: 'secret',
    env: 'HOIST_SMTP_URL',
    doc: 'SMTP connection URL (mailer=smtp), e.g. smtp://user:pass@mail.example.com:587.',
  },
  mailFrom: {
    type: 'string',
    env: 'HOIST_MAIL_FROM',
    default: 'Hoist <hoist@localhost>',
    doc: 'Sender of the mail Hoist sends.',
  },
  masterKey: {
    type: 'secret',
    env: 'HOIST_MASTER_KEY',
    keyBytes: 32,
    doc:
      'Master keys that wrap the per-project keys of environment variables: `id:base64` ' +
      'entries (32 bytes each) separated by commas, the first one current. Overrides ' +
      'masterKeyFile.',
  },
  masterKeyFile: {
    type: 'string',
    env: 'HOIST_MASTER_KEY_FILE',
    doc:
      'JSON file holding the master keys (mode 0600; `hoist keys rotate` adds one). ' +
      'Default: <dataDir>/master-keys.json, created with one key on first start (a ' +
      'warning says so).',
  },
  jwtSecret: {
    type: 'secret',
    env: 'HOIST_JWT_SECRET',
    minBytes: 32,
    doc: 'HS256 signing secret. Default: generated once into <dataDir>/jwt.key.',
  },
  tokenTtlSeconds: {
    type: 'integer',
    env: 'HOIST_TOKEN_TTL_SECONDS',
    default: 43200,
    min: 60,
    max: 2592000,
    doc: 'Lifetime of a REST token (default 12 h).',
  },
  authCacheSize: {
    type: 'integer',
    env: 'HOIST_AUTH_CACHE_SIZE',
    default: 10000,
    min: 0,
    max: 1000000,
    doc:
      'Verified REST tokens each API process keeps in memory (least recently used dropped first), so a request ' +
      'skips the signature check and the session lookup; 0 turns the cache off.',
  },
  authCacheSeconds: {
    type: 'integer',
    env: 'HOIST_AUTH_CACHE_SECONDS',
    default: 60,
    min: 1,
    max: 3600,
    doc:
      'Longest time a cached token is trusted without reading its session again; a logout or a password reset ' +
      'drops it at once (other processes: on the change feed).',
  },
  answerCacheSeconds: {
    type: 'integer',
    env: 'HOIST_ANSWER_CACHE_SECONDS',
    default: 1,
    min: 0,
    max: 3600,
    doc:
      'Longest time an API process answers GET /me, or GET /operations/{id} of a finished operation, from ' +
      'memory; every write that changes one drops it at once (other processes: on the change feed), this bound ' +
      'is for writes the feed does not carry (the admin CLI on SQLite). 0 reads the database every time.',
  },
  loginMaxPerAccount: {
    type: 'integer',
    env: 'HOIST_LOGIN_MAX_PER_ACCOUNT',
    default: 10,
    min: 1,
    doc:
      'Failed logins allowed per account from one client address per window (past it ' +
      'that address gets 429 for that account); failures of an account from all ' +
      'addresses past it slow its logins down, never refuse them.',
  },
  loginMaxPerAddress: {
    type: 'integer',
    env: 'HOIST_LOGIN_MAX_PER_ADDRESS',
    default: 30,
    min: 1,
    doc:
      'Login attempts allowed per client address per window, whatever the account; sign-in attempts to private ' +
      'projects (codes and passwords) per client address per window, whatever the project, apart.',
  },
  loginWindowSeconds: {
    type: 'integer',
    env: 'HOIST_LOGIN_WINDOW_SECONDS',
    default: 900,
    min: 1,
    doc: 'Sliding rate-limit window of logins and of sign-ins to private projects.',
  },
  mailMaxPerRecipient: {
    type: 'integer',
    env: 'HOIST_MAIL_MAX_PER_RECIPIENT',
    default: 3,
    min: 1,
    doc:
      'Password-recovery mails to one e-mail address, access requests for one, and sign-in codes of private ' +
      'projects to one (all projects together), each apart, per mailWindowSeconds; past it the answer is the same ' +
      'and nothing is sent or stored. Member invitations to ' +
      'one address, apart: past it 429.',
  },
  mailMaxPerAddress: {
    type: 'integer',
    env: 'HOIST_MAIL_MAX_PER_ADDRESS',
    default: 10,
    min: 1,
    doc:
      'Password-recovery requests, access requests, sign-in code requests to private projects (all projects ' +
      'together) and member invitations (each apart), one client address may send per mailWindowSeconds, and ' +
      'member invitations one account may send; past it 429 with Retry-After.',
  },
  mailWindowSeconds: {
    type: 'integer',
    env: 'HOIST_MAIL_WINDOW_SECONDS',
    default: 3600,
    min: 1,
    doc: 'Sliding window of mailMaxPerRecipient and mailMaxPerAddress.',
  },
  accessMaxAttempts: {
    type: 'integer',
    env: 'HOIST_ACCESS_MAX_ATTEMPTS',
    default: 10,
    min: 1,
    doc:
      'Sign-in attempts (codes and passwords together, and code requests apart) one ' +
      'client address may make on one private project per window.',
  },
  accessPasswordMaxPerProject: {
    type: 'integer',
    env: 'HOIST_ACCESS_PASSWORD_MAX_PER_PROJECT',
    default: 100,
    min: 1,
    doc:
      'Password attempts on one private project from all client addresses together per loginWindowSeconds ' +
      '(right or wrong); past it 429 with Retry-After, which bounds password guessing from many addresses and the ' +
      "edge's argon2 work for one project.",
  },
  accessCookieTtlSeconds: {
    type: 'integer',
    env: 'HOIST_ACCESS_COOKIE_TTL_SECONDS',
    default: 604800,
    min: 60,
    max: 31536000,
    doc: "Lifetime of the access cookie a private project's visitor gets after signing in (default 7 days).",
  },
  trustProxy: {
    type: 'boolean',
    env: 'HOIST_TRUST_PROXY',
    default: false,
    doc:
      'Trust the X-Forwarded-* headers of the one reverse proxy in front (set behind one): the address it saw is the ' +
      "client's (what a client wrote in X-Forwarded-For before it is not believed).",
  },
  requestTimeoutMs: {
    type: 'integer',
    env: 'HOIST_REQUEST_TIMEOUT_MS',
    default: 300000,
    min: 1000,
    doc: 'Whole-request timeout, including slow uploads.',
  },
  headersTimeoutMs: {
    type: 'integer',
    env: 'HOIST_HEADERS_TIMEOUT_MS',
    default: 10000,
    min: 100,
    doc:
      "Time a client has to send a request's headers, from the moment it connects (or " +
      'starts its next request on a kept-alive connection); then 408 request_timeout ' +
      'and the connection closes. API and edge.',
  },
  minBodyBytesPerSecond: {
    type: 'integer',
    env: 'HOIST_MIN_BODY_BYTES_PER_SECOND',
    default: 1024,
    min: 0,
    doc:
      'Slowest request body accepted (uploads, the upload URL, bodies the edge forwards ' +
      'to apps), averaged over bodyRateWindowMs; a slower one gets 408 request_timeout ' +
      'and the connection closes. Time Hoist itself is behind reading does not count. 0 ' +
      'turns it off.',
  },
  bodyRateWindowMs: {
    type: 'integer',
    env: 'HOIST_BODY_RATE_WINDOW_MS',
    default: 30000,
    min: 100,
    doc: 'Window minBodyBytesPerSecond is averaged over (default 30 s).',
  },
  keepAliveTimeoutMs: {
    type: 'integer',
    env: 'HOIST_KEEP_ALIVE_TIMEOUT_MS',
    min: 100,
    doc:
      'How long an idle kept-alive connection of the API or the edge stays open. ' +
      "Default: 5000, or 72000 with trustProxy (longer than a load balancer's usual 60 " +
      's idle timeout, so the balancer closes first; set it above yours).',
  },
  apiRequestsPerMinute: {
    type: 'integer',
    env: 'HOIST_API_REQUESTS_PER_MINUTE',
    default: 1200,
    min: 0,
    doc:
      'Requests each account may send to one API process in a minute (any of its tokens, every member), and each ' +
      'client address without a good token; past it 429 rate_limited with Retry-After, and every answer carries ' +
      'x-ratelimit-limit, -remaining and -reset. Health routes are not counted. 0: no limit.',
  },
  maxConnectionsPerAddress: {
    type: 'integer',
    env: 'HOIST_MAX_CONNECTIONS_PER_ADDRESS',
    default: 64,
    min: 0,
    doc:
      'Open connections one client address (an IPv6 /64) may hold on the API and on the ' +
      'edge at once; past it a new connection gets 429 rate_limited and is closed. Not ' +
      'applied with trustProxy (every connection then comes from the proxy: cap there). ' +
      '0 turns it off.',
  },
  buildTimeoutSeconds: {
    type: 'integer',
    env: 'HOIST_BUILD_TIMEOUT_SECONDS',
    default: 900,
    min: 1,
    doc: 'Time limit of one build (install and build commands).',
  },
  buildMemoryMb: {
    type: 'integer',
    env: 'HOIST_BUILD_MEMORY_MB',
    default: 2048,
    min: 64,
    doc:
      'Memory of one build command and all its processes (a cgroup where the sandbox ' +
      'can make one, else a per-process limit); the Node.js processes it runs get a ' +
      'heap cap of three quarters of it (NODE_OPTIONS --max-old-space-size).',
  },
  npmRegistry: {
    type: 'string',
    env: 'HOIST_NPM_REGISTRY',
    doc:
      'npm registry Node.js builds install from (npm_config_registry; the only one they ' +
      'use). Default: the registry npm is configured with on this host (`npm config get ' +
      'registry`, read once, at the first build), else https://registry.npmjs.org/.',
  },
  buildProcesses: {
    type: 'integer',
    env: 'HOIST_BUILD_PROCESSES',
    default: 512,
    min: 16,
    doc: 'Processes and threads one build may have at once.',
  },
  buildDiskMb: {
    type: 'integer',
    env: 'HOIST_BUILD_DISK_MB',
    default: 4096,
    min: 16,
    doc: 'Disk one build may fill (workspace, HOME and /tmp), and its largest file, MiB.',
  },
  buildCacheMb: {
    type: 'integer',
    env: 'HOIST_BUILD_CACHE_MB',
    default: 512,
    min: 0,
    doc:
      "Disk each account's build cache may keep between its builds (npm's download cache: a warm one halves an " +
      'install), MiB; at most half of buildDiskMb is used. 0 turns the cache off.',
  },
  buildCacheDays: {
    type: 'integer',
    env: 'HOIST_BUILD_CACHE_DAYS',
    default: 30,
    min: 1,
    doc:
      "Days an account's build cache is kept after its last build gave it back; workers remove older ones " +
      '(every 10 minutes).',
  },
  buildOutputBytes: {
    type: 'integer',
    env: 'HOIST_BUILD_OUTPUT_BYTES',
    default: 16777216,
    min: 1024,
    doc: 'Output (stdout and stderr) one build command may print before it is stopped.',
  },
  releaseMemoryMb: {
    type: 'integer',
    env: 'HOIST_RELEASE_MEMORY_MB',
    default: 512,
    min: 32,
    doc:
      "Memory of a running release and all its processes: its sandbox's limit with " +
      "deployer=local, its container's with deployer=docker or pulumi; the Node.js heap " +
      'cap is three quarters of it.',
  },
  releaseCpuMillis: {
    type: 'integer',
    env: 'HOIST_RELEASE_CPU_MILLIS',
    default: 1000,
    min: 10,
    doc:
      "CPU of a running release and all its processes, in thousandths of a CPU: its sandbox's limit with " +
      "deployer=local (bwrap: where its cgroup has the cpu controller, else none), its container's with " +
      'deployer=docker or pulumi. A build command gets one CPU.',
  },
  releaseProcesses: {
    type: 'integer',
    env: 'HOIST_RELEASE_PROCESSES',
    default: 256,
    min: 16,
    doc: 'Processes and threads one running release may have at once.',
  },
  releaseDiskMb: {
    type: 'integer',
    env: 'HOIST_RELEASE_DISK_MB',
    default: 1024,
    min: 16,
    doc:
      'Disk one running release may write (its HOME and /tmp; its release directory is ' +
      'read-only), and its largest file, MiB.',
  },
  healthTimeoutSeconds: {
    type: 'integer',
    env: 'HOIST_HEALTH_TIMEOUT_SECONDS',
    default: 60,
    min: 1,
    doc: 'A Node.js release must answer HTTP on PORT within this time, or its deploy fails.',
  },
  requeueSeconds: {
    type: 'integer',
    env: 'HOIST_REQUEUE_SECONDS',
    default: 15,
    min: 1,
    doc:
      'Every this many seconds a worker enqueues again each deployment stage still queued after this long (one ' +
      'whose enqueue failed while the queue was away), so that it runs once the queue answers again.',
  },
  stuckAfterSeconds: {
    type: 'integer',
    env: 'HOIST_STUCK_AFTER_SECONDS',
    default: 120,
    min: 1,
    doc: 'A running stage with no heartbeat for this long marks its operation maybe_stuck.',
  },
  eventStreamsPerAccount: {
    type: 'integer',
    env: 'HOIST_EVENT_STREAMS_PER_ACCOUNT',
    default: 20,
    min: 1,
    doc:
      'Event streams (Accept: text/event-stream) one account may hold open per API process, and one client ' +
      'address whichever accounts it uses; beyond, 429.',
  },
  eventStreamsMax: {
    type: 'integer',
    env: 'HOIST_EVENT_STREAMS_MAX',
    default: 1000,
    min: 1,
    doc: 'Event streams one API process holds open in all; beyond, 503.',
  },
  eventStreamHeartbeatSeconds: {
    type: 'integer',
    env: 'HOIST_EVENT_STREAM_HEARTBEAT_SECONDS',
    default: 15,
    min: 1,
    max: 300,
    doc: 'An event stream sends a comment line this often, so proxies and clients see it is alive.',
  },
  buildLogLineDays: {
    type: 'integer',
    env: 'HOIST_BUILD_LOG_LINE_DAYS',
    default: 7,
    min: 1,
    doc:
      'Days the build-log lines of a finished operation stay in the database (build_log_chunks) for event ' +
      "streams to replay; then a worker moves them out, and streams read them from the build's stored log.",
  },
  deploymentFileDays: {
    type: 'integer',
    env: 'HOIST_DEPLOYMENT_FILE_DAYS',
    default: 7,
    min: 1,
    doc:
      "Days an upload's archive and its build's artifact stay in Storage when no retained release (live, kept " +
      'by release_retention, a serving preview) or unfinished operation uses them; then a worker removes them, ' +
      'and retrying that build or deployment answers 409 not_retryable.',
  },
  buildLogDays: {
    type: 'integer',
    env: 'HOIST_BUILD_LOG_DAYS',
    default: 30,
    min: 1,
    doc:
      'Days a stored build log stays after its build started, unless a retained release uses the build; then a ' +
      'worker removes it (and its lines), and reading it answers 410 gone.',
  },
  queueVisibilitySeconds: {
    type: 'integer',
    env: 'HOIST_QUEUE_VISIBILITY_SECONDS',
    default: 30,
    min: 1,
    doc:
      'A stage job whose worker stops sending heartbeats for this long is delivered ' +
      'again (to any worker), and its stage claim lapses. With queue=nats, the ' +
      "consumer's ack wait.",
  },
  queueMaxDeliveries: {
    type: 'integer',
    env: 'HOIST_QUEUE_MAX_DELIVERIES',
    default: 5,
    min: 1,
    doc:
      'Deliveries of a stage job before its operation fails with guidance. With ' +
      "queue=nats, the consumer's max_deliver.",
  },
  workerPort: {
    type: 'integer',
    env: 'HOIST_WORKER_PORT',
    default: 3001,
    min: 0,
    max: 65535,
    doc: 'Port where a worker running without the API (`hoist worker`) answers /healthz, /readyz and /metrics.',
  },
  metricsToken: {
    type: 'secret',
    env: 'HOIST_METRICS_TOKEN',
    minBytes: 16,
    doc:
      'When set, GET /metrics needs `Authorization: Bearer <token>`, and GET /readyz says why a backend is down ' +
      'only with it. Unset: /metrics is open (keep the ports private) and /readyz never says why.',
  },
  workerConcurrency: {
    type: 'integer',
    env: 'HOIST_WORKER_CONCURRENCY',
    default: 2,
    min: 1,
    doc: 'Stages one worker process runs at once.',
  },
  reservedWorkerSlots: {
    type: 'integer',
    env: 'HOIST_RESERVED_WORKER_SLOTS',
    default: 1,
    min: 0,
    doc:
      'Slots of all live workers that no single account may take, kept for the deployments of others: an account ' +
      'runs at most (live slots − this, at least 1) deployments at once, and its further ones (within its plan) ' +
      'wait, held, until one of its own ends. 0 lets one account fill every slot (a one-account installation).',
  },
  dnsServers: {
    type: 'string',
    env: 'HOIST_DNS_SERVERS',
    doc:
      'DNS servers that check customer domains: comma-separated `ip`, `ip:port` or ' +
      "`[ipv6]:port`. Default: the system's resolvers.",
  },
  dnsTimeoutMs: {
    type: 'integer',
    env: 'HOIST_DNS_TIMEOUT_MS',
    default: 3000,
    min: 50,
    max: 60000,
    doc: 'Time allowed for one try of a DNS lookup.',
  },
  dnsTries: {
    type: 'integer',
    env: 'HOIST_DNS_TRIES',
    default: 2,
    min: 1,
    max: 10,
    doc:
      'Tries per DNS server before a lookup counts as failed (the check is retried ' +
      'later; the domain keeps its state).',
  },
  webhookTimeoutSeconds: {
    type: 'integer',
    env: 'HOIST_WEBHOOK_TIMEOUT_SECONDS',
    default: 10,
    min: 1,
    max: 60,
    doc: 'Time a webhook endpoint has to answer a delivery (connecting included); past it the try failed.',
  },
  webhookPrivateAddresses: {
    type: 'boolean',
    env: 'HOIST_WEBHOOK_PRIVATE_ADDRESSES',
    default: false,
    doc:
      'Deliver webhooks to private, loopback and link-local addresses too. Off: a URL whose host is, or resolves ' +
      'to, such an address is never posted to (its deliveries fail with address_refused), so no account reaches ' +
      "Hoist's network through one.",
  },
  domainCheckSeconds: {
    type: 'integer',
    env: 'HOIST_DOMAIN_CHECK_SECONDS',
    default: 60,
    min: 1,
    doc:
      'First recheck of a pending, verified or misconfigured customer domain; each ' +
      'further failed check doubles the wait, up to domainCheckMaxSeconds.',
  },
  domainCheckMaxSeconds: {
    type: 'integer',
    env: 'HOIST_DOMAIN_CHECK_MAX_SECONDS',
    default: 3600,
    min: 1,
    doc: 'Longest wait between checks of a domain that is not active.',
  },
  domainActiveCheckSeconds: {
    type: 'integer',
    env: 'HOIST_DOMAIN_ACTIVE_CHECK_SECONDS',
    default: 3600,
    min: 1,
    doc: 'Wait between checks of an active customer domain (a failed check marks it misconfigured).',
  },
  domainPendingTtlSeconds: {
    type: 'integer',
    env: 'HOIST_DOMAIN_PENDING_TTL_SECONDS',
    default: 604800,
    min: 60,
    doc:
      'A customer domain still pending this long after it was added (its TXT record ' +
      'never held its token) is removed by the next scheduled check (default 7 days). ' +
      "Pending domains never block another project's claim.",
  },
  domainSchedulerSeconds: {
    type: 'integer',
    env: 'HOIST_DOMAIN_SCHEDULER_SECONDS',
    default: 15,
    min: 1,
    doc:
      'How often a worker looks for customer domains due for a check (claimed one at a ' +
      'time, so several workers never check one domain at once).',
  },
  uploadSessionTtlSeconds: {
    type: 'integer',
    env: 'HOIST_UPLOAD_SESSION_TTL_SECONDS',
    default: 900,
    min: 60,
    max: 86400,
    doc: "Lifetime of an upload session's one-time upload URL (default 15 min).",
  },
  maxArchiveBytes: {
    type: 'integer',
    env: 'HOIST_MAX_ARCHIVE_BYTES',
    default: 95000000,
    min: 1,
    doc: 'Largest ZIP accepted by proxied multipart upload (the spec: 95,000,000).',
  },
  plugins: {
    type: 'string',
    env: 'HOIST_PLUGINS',
    doc:
      'Plugins from outside Hoist: comma-separated npm package names or paths (in the config file, also a JSON ' +
      "array; a relative path is resolved from the file's folder, else from the working directory). " +
      'See "Writing a plugin".',
  },
  logLevel: {
    type: 'string',
    env: 'HOIST_LOG_LEVEL',
    default: 'info',
    oneOf: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    doc: 'Log level.',
  },
  logFormat: {
    type: 'string',
    env: 'HOIST_LOG_FORMAT',
    default: 'auto',
    oneOf: ['auto', 'json', 'pretty'],
    doc:
      'Log lines on stdout: json (one JSON object a line), pretty (readable, ' +
      'pino-pretty), or auto (pretty when stdout is a terminal, else json).',
  },
} as const satisfies Record<string, Setting>;

type Value<S extends Setting> = S['type'] extends 'integer' ? number : S['type'] extends 'boolean' ? boolean : string;
type Req<S> = S extends { default: unknown } ? true : false;

/** The validated configuration: keys with a default are always present. */
export type HoistConfig = {
  -readonly [K in keyof typeof settings as Req<(typeof settings)[K]> extends true ? K : never]: Value<
    (typeof settings)[K]
  >;
} & {
  -readonly [K in keyof typeof settings as Req<(typeof settings)[K]> extends true ? never : K]?: Value<
    (typeof settings)[K]
  >;
};

export type ConfigKey = keyof typeof settings;
