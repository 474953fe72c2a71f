import type { Command } from 'commander';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../../../client/hoist-client.js';
import { usage } from '../remote/cli-error.js';
import { printable } from '../remote/terminal.js';
import { checkId, projectAction, type ProjectOptions } from '../remote/remote-action.js';
import { printTable, projectList } from './print-table.js';

/** `hoist webhooks ls | add | rm | ping | deliveries`: where a project's deployment events are posted. */
export default function webhooks(program: Command): void {
  const group = program
    .command('webhooks')
    .description("manage a project's webhooks (URLs Hoist posts signed deployment events to)");
  const withId = (c: Command) => c.argument('<webhookID>', 'webhook id (see hoist webhooks ls)');

  projectList(group, 'list ids, URLs, events, who made each and how the last delivery went (secrets are never shown)', {
    list: (client, projectId) => client.webhooks(projectId),
    headers: ['id', 'url', 'events', 'by', 'last delivery'],
    row: (w) => [w.id, w.url, w.events.join(','), w.created_by?.email ?? '-', w.last_delivery?.status ?? 'never'],
    none: 'webhooks',
  });

  projectAction<ProjectOptions & { events?: string }, [string]>(
    group
      .command('add')
      .description('add a webhook; its signing secret is printed this once (on stdout, the secret alone)')
      .argument('<url>', 'an http or https URL')
      .option(
        '--events <events>',
        `comma-separated, of ${WEBHOOK_EVENTS.join(', ')} (default: every one but deployment.started)`,
      ),
    async (client, project, o, url) => {
      const hook = await client.addWebhook(project.id, url, o.events === undefined ? undefined : eventsOf(o.events));
      if (o.json) return console.log(JSON.stringify(hook));
      console.error(
        `Added webhook ${hook.id} on ${printable(project.name)} for ${hook.events.join(', ')}. Its signing secret ` +
          'follows: keep it to verify deliveries, it is not shown again.',
      );
      console.log(hook.secret);
    },
    (o) => {
      if (o.events !== undefined) eventsOf(o.events);
    },
  );

  projectAction<ProjectOptions, [string]>(
    withId(group.command('rm').description('remove a webhook and its deliveries')),
    async (client, project, o, id) => {
      await client.removeWebhook(project.id, id);
      if (o.json) console.log(JSON.stringify({ removed: id, project: project.id }));
      else console.log(`Removed webhook ${id} from ${printable(project.name)}.`);
    },
    (_o, id) => validId(id),
  );

  projectAction<ProjectOptions, [string]>(
    withId(group.command('ping').description('queue a signed ping delivery (see how it went with deliveries)')),
    async (client, project, o, id) => {
      const delivery = await client.pingWebhook(project.id, id);
      if (o.json) console.log(JSON.stringify(delivery));
      else console.log(`Queued ping ${delivery.id}: \`hoist webhooks deliveries ${id}\` shows how it went.`);
    },
    (_o, id) => validId(id),
  );

  projectAction<ProjectOptions & { limit: string }, [string]>(
    withId(
      group
        .command('deliveries')
        .description('list deliveries of the last 30 days, newest first (status, tries, last answer)')
        .option('-n, --limit <n>', 'at most this many, 1 to 100', '20'),
    ),
    async (client, project, o, id) => {
      const list = await client.webhookDeliveries(project.id, id, Number(o.limit));
      if (o.json) console.log(JSON.stringify(list));
      else
        printTable(
          ['time', 'event', 'status', 'attempts', 'answer'],
          list.map((d) => [
            d.created_at,
            d.event,
            d.status,
            String(d.attempts),
            d.error ?? (d.response_status === null ? '-' : String(d.response_status)),
          ]),
          `no deliveries of webhook ${id} in the last 30 days`,
        );
    },
    (o, id) => {
      validId(id);
      if (!/^\d+$/.test(o.limit) || Number(o.limit) < 1 || Number(o.limit) > 100)
        throw usage('--limit takes a number from 1 to 100');
    },
  );
}

/** The events of `--events a,b`, each one known; throws bad usage naming one that is not. */
function eventsOf(list: string): WebhookEvent[] {
  const events = list
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  if (!events.length) throw usage(`--events takes a comma-separated list of: ${WEBHOOK_EVENTS.join(', ')}`);
  for (const e of events)
    if (!(WEBHOOK_EVENTS as string[]).includes(e))
      throw usage(`${JSON.stringify(e)} is not a webhook event (one of ${WEBHOOK_EVENTS.join(', ')})`);
  return events as WebhookEvent[];
}

const validId = (id: string) => checkId(id, 'webhook', 'hoist webhooks ls');
