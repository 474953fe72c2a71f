import type { FastifyPluginAsync } from 'fastify';
import { invalid } from '../../../core/errors.js';
import {
  BUILD_SETTING_KEYS,
  COMMAND_MAX,
  DIRECTORY_MAX,
  FRAMEWORKS,
  NODE_VERSION_MAX,
  RUNTIMES,
} from '../../../core/projects/build-settings.js';
import { PROJECT_DELETER, type ProjectDeleter } from '../../../core/projects/project-deleter.js';
import {
  ACCESS_PASSWORD_MAX,
  ACCESS_PASSWORD_MIN,
  NAME_MAX,
  PROJECT_SERVICE,
  VISIBILITIES,
  type ProjectService,
} from '../../../core/projects/project-service.js';
import { projectView } from '../../../core/projects/project-view.js';
import { bearer, principalOf } from '../auth.js';
import { PageQuery } from '../record-schemas.js';
import { errorResponses, Timestamp, Uuid } from '../schemas.js';
import type { RouteOptions } from './index.js';

const command = (what: string) => ({
  type: ['string', 'null'],
  minLength: 1,
  maxLength: COMMAND_MAX,
  description: `${what}; overrides what Analyze detects. null clears it.`,
});

const settingFields = {
  root_directory: {
    type: ['string', 'null'],
    maxLength: DIRECTORY_MAX,
    description: 'Directory inside the archive to build from: relative, no .. segments ("." is the archive root).',
  },
  install_command: command('Command that installs dependencies'),
  build_command: command('Command that builds the project'),
  start_command: command('Command that starts a node project'),
  output_directory: {
    type: ['string', 'null'],
    maxLength: DIRECTORY_MAX,
    description: 'Directory (relative to root_directory) holding the built static files: relative, no .. segments.',
  },
  node_version: {
    type: ['string', 'null'],
    maxLength: NODE_VERSION_MAX,
    description: 'Node.js semver range, e.g. 20, 20.x, >=18 <23.',
  },
  framework: {
    type: ['string', 'null'],
    enum: [...FRAMEWORKS, null],
    description: 'Framework, or null to let Analyze detect it.',
  },
  runtime: {
    type: ['string', 'null'],
    enum: [...RUNTIMES, null],
    description: 'Runtime, or null to let Analyze detect it.',
  },
} as const;

const SettingsInput = {
  type: 'object',
  additionalProperties: false,
  description: 'Build settings. They may also be given at the top level of the body (not both for one key).',
  properties: settingFields,
} as const;

const Project = {
  type: 'object',
  required: [
    'id',
    'name',
    'slug',
    'url',
    'visibility',
    'access_password_set',
    'settings',
    'preview_visibility',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: Uuid,
    name: { type: 'string' },
    slug: { type: 'string', description: 'Unique across the service; the project is served at <slug>.<apps domain>.' },
    url: { type: 'string', description: 'Public URL of the project.' },
    visibility: { type: 'string', enum: VISIBILITIES },
    access_password_set: {
      type: 'boolean',
      description: 'Whether the site has an access password (the password is never shown).',
    },
    settings: {
      type: 'object',
      required: BUILD_SETTING_KEYS,
      properties: Object.fromEntries(BUILD_SETTING_KEYS.map((k) => [k, { type: ['string', 'null'] }])),
      description: 'Build settings; null means Analyze decides.',
    },
    preview_visibility: {
      type: 'string',
      enum: ['private', 'public'],
      description:
        'Who sees the previews (uploads with target=preview, at <slug>--<short id>.<apps domain>): private ' +
        "(the default: behind the project's gate, its access password or granted addresses) or public " +
        '(anyone with the URL; never indexed).',
    },
    created_at: Timestamp,
    updated_at: Timestamp,
  },
} as const;

const previewVisibility = Project.properties.preview_visibility;

const ProjectParams = {
  type: 'object',
  required: ['projectID'],
  properties: { projectID: { type: 'string', description: 'Project id (UUID).' } },
} as const;

const name = {
  type: 'string',
  minLength: 1,
  maxLength: NAME_MAX,
  description: `1 to ${NAME_MAX} characters.`,
} as const;
const visibility = {
  type: 'string',
  enum: VISIBILITIES,
  description:
    'draft (the default: served at its URL, unlisted — every answer carries ' +
    'X-Robots-Tag: noindex), public (served and indexable), ' +
    'or private (served only to granted e-mail addresses or the access password; ' +
    'noindex too). The plan says which are allowed.',
} as const;

const accessPassword = {
  type: ['string', 'null'],
  description:
    `Access password of the site while the project is private: ${ACCESS_PASSWORD_MIN} ` +
    `to ${ACCESS_PASSWORD_MAX} characters (shorter or longer → 400 invalid_request, ` +
    `field access_password). ` +
    'Visitors who enter it on the sign-in page get in, besides granted e-mail ' +
    'addresses. Stored only as an argon2id hash and never returned (see ' +
    'access_password_set); ' +
    'setting it again, or null to remove it, ends every visitor session opened with the old one.',
} as const;

type SettingsBody = Record<string, unknown> & { settings?: Record<string, unknown> };

/** The build settings of a body: those under `settings` and those at the top level, merged. */
function settingsOf(body: SettingsBody): Record<string, unknown> | undefined {
  const top = Object.fromEntries(
    Object.entries(body).filter(([k]) => (BUILD_SETTING_KEYS as readonly string[]).includes(k)),
  );
  for (const k of Object.keys(top))
    if (body.settings && k in body.settings)
      throw invalid(`${k} is given twice (top level and settings)`, { field: k });
  return body.settings === undefined && Object.keys(top).length === 0 ? undefined : { ...body.settings, ...top };
}

/** Projects: list, create, read, update and queue deletion of the account's projects. */
const projects: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const service = kernel.get<ProjectService>(PROJECT_SERVICE);
  const deleter = kernel.get<ProjectDeleter>(PROJECT_DELETER);
  const view = projectView.bind(null, kernel.config);

  // Deletions run after their 202 and are awaited on close; ones a restart interrupted are finished at start.
  const running = new Set<Promise<void>>();
  const track = (work: () => Promise<unknown>) => {
    const p: Promise<void> = work().then(
      () => undefined,
      (err) => app.log.error({ err }, 'project deletion failed; it is retried at the next start'),
    );
    running.add(p);
    void p.finally(() => running.delete(p));
  };
  app.addHook('onReady', async () => track(() => deleter.finishUnfinished()));
  app.addHook('onClose', async () => {
    await Promise.all(running);
  });

  app.addHook('onRequest', app.authenticate);

  app.get<{ Querystring: { cursor?: string; limit: number } }>(
    '/projects/',
    {
      schema: {
        tags: ['Projects'],
        summary: 'List projects',
        description:
          "The account's projects, newest first, cursor-paginated: pass next_cursor back " +
          'unchanged as cursor until it is null.',
        security: bearer,
        querystring: PageQuery,
        response: {
          200: {
            type: 'object',
            required: ['projects', 'next_cursor'],
            properties: { projects: { type: 'array', items: Project }, next_cursor: { type: ['string', 'null'] } },
          },
          ...errorResponses(400, 401),
        },
      },
    },
    async (req) => {
      const page = await service.list(principalOf(req).accountId, { cursor: req.query.cursor, limit: req.query.limit });
      return { projects: page.projects.map(view), next_cursor: page.nextCursor };
    },
  );

  app.post<{ Body: SettingsBody & { name: string; visibility?: string; access_password?: string | null } }>(
    '/projects/',
    {
      schema: {
        tags: ['Projects'],
        summary: 'Create a project',
        description:
          'Creates a project with a slug derived from its name (suffixed when taken). Visibility defaults to draft. ' +
          'A visibility or a project count the plan does not allow is refused with 403 plan_restricted. ' +
          'access_password sets the password that opens the site while the project is ' +
          'private (see access-grants for the other way in).',
        security: bearer,
        body: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: { name, visibility, access_password: accessPassword, settings: SettingsInput, ...settingFields },
        },
        response: { 201: Project, ...errorResponses(400, 401, 403) },
      },
    },
    async (req, reply) => {
      const { name, visibility, access_password: accessPassword } = req.body;
      const project = await service.create(principalOf(req).accountId, {
        name,
        visibility,
        accessPassword,
        settings: settingsOf(req.body),
      });
      return reply.status(201).send(view(project));
    },
  );

  app.get<{ Params: { projectID: string } }>(
    '/projects/:projectID/',
    {
      schema: {
        tags: ['Projects'],
        summary: 'Read a project',
        description: 'A project of another account answers 404 exactly like a missing one.',
        security: bearer,
        params: ProjectParams,
        response: { 200: Project, ...errorResponses(401, 404) },
      },
    },
    async (req) => view(await service.get(principalOf(req).accountId, req.params.projectID)),
  );

  app.patch<{
    Params: { projectID: string };
    Body: SettingsBody & {
      name?: string;
      visibility?: string;
      access_password?: string | null;
      preview_visibility?: string;
    };
  }>(
    '/projects/:projectID/',
    {
      schema: {
        tags: ['Projects'],
        summary: 'Update a project',
        description:
          'Changes the name, the visibility, build settings, the access password and ' +
          'preview_visibility; absent ' +
          'fields stay, null clears a build setting or the password. ' +
          'The slug and URL never change. Making a private project draft or public keeps ' +
          'its access grants and password, unused, until it is private again.',
        security: bearer,
        params: ProjectParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            name,
            visibility,
            access_password: accessPassword,
            preview_visibility: previewVisibility,
            settings: SettingsInput,
            ...settingFields,
          },
        },
        response: { 200: Project, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const { name, visibility, access_password: accessPassword, preview_visibility: previewVisibility } = req.body;
      const project = await service.update(principalOf(req).accountId, req.params.projectID, {
        name,
        visibility,
        accessPassword,
        previewVisibility,
        settings: settingsOf(req.body),
      });
      return view(project);
    },
  );

  app.delete<{ Params: { projectID: string } }>(
    '/projects/:projectID/',
    {
      schema: {
        tags: ['Projects'],
        summary: 'Queue deletion of a project',
        description:
          'The project leaves the API at once and its slug is free for reuse; the teardown ' +
          'runs as an operation (kind delete_project). ' +
          'Poll GET /api/v1/operations/{operationID}.',
        security: bearer,
        params: ProjectParams,
        response: {
          202: {
            type: 'object',
            required: ['action', 'operation'],
            properties: {
              action: { type: 'string', enum: ['project_deletion_queued'] },
              operation: {
                type: 'object',
                required: ['id', 'status', 'progress'],
                properties: { id: Uuid, status: { type: 'string' }, progress: { type: 'integer' } },
              },
            },
          },
          ...errorResponses(401, 404),
        },
      },
    },
    async (req, reply) => {
      const op = await service.requestDeletion(principalOf(req).accountId, req.params.projectID);
      const finish = () => track(() => deleter.run(op.id));
      reply.then(finish, finish);
      return reply.status(202).send({
        action: 'project_deletion_queued',
        operation: { id: op.id, status: op.status, progress: op.progress },
      });
    },
  );
};

export default projects;
