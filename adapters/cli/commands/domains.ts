import type { Command } from 'commander';
import type { Domain, HoistClient, Project } from '../../../client/hoist-client.js';
import { CliError, usage } from '../remote/cli-error.js';
import { confirm, needConfirmation } from '../remote/confirm.js';
import { UUID } from '../remote/project-ref.js';
import { projectAction, type ProjectOptions } from '../remote/remote-action.js';
import { printable, printableDeep } from '../remote/terminal.js';
import { printTable } from './print-table.js';

/** What each state means for whoever reads it (core/domains/domain-states.ts has the rules). */
const STATES: Record<string, string> = {
  pending: 'pending: the TXT record does not hold the token yet; not served',
  verified: 'verified: the TXT record is right, the CNAME does not point at the project yet; not served',
  active: 'active: both records are right; served',
  misconfigured: 'misconfigured: a record went missing or wrong since it was verified; not served until it is right',
  failed: 'failed: another project holds the hostname; not served, and checked again only by verify',
};

/** `hoist domains ls | add | verify | rm`: a project's custom domains (subdomains you own) and their DNS records. */
export default function domains(program: Command): void {
  const group = program
    .command('domains')
    .description("manage a project's custom domains (subdomains you own, e.g. app.example.com)");
  const withRef = (c: Command) => c.argument('<domain>', 'hostname or domain id (see hoist domains ls)');

  projectAction<ProjectOptions, []>(
    group.command('ls').description('list custom domains: status, what is wrong, and the DNS records to create'),
    async (client, project, o) => {
      const list = await client.domains(project.id);
      if (o.json) return console.log(JSON.stringify(list));
      if (!list.length)
        return console.log(`no custom domains on ${project.name}: \`hoist domains add <hostname>\` adds one`);
      printableDeep(list).forEach((d, i) => {
        if (i) console.log('');
        show(d, project, `${d.hostname} (domain ${d.id})`);
      });
    },
  );

  projectAction<ProjectOptions, [string]>(
    group
      .command('add')
      .description('add a custom domain (a subdomain, not an apex); prints the DNS records to create')
      .argument('<hostname>', 'a subdomain you control, e.g. app.example.com'),
    async (client, project, o, hostname) => {
      const added = await client.addDomain(project.id, hostname.trim());
      if (o.json) return console.log(JSON.stringify(added));
      const d = printableDeep(added);
      show(d, project, `Added ${d.hostname} to ${printableDeep(project.name)} (domain ${d.id}).`);
    },
    (_o, hostname) => {
      if (!hostname.trim()) throw usage('a custom domain needs a hostname (a subdomain you control: app.example.com)');
    },
  );

  projectAction<ProjectOptions, [string]>(
    withRef(
      group
        .command('verify')
        .description('look the DNS records up now and say what was found and what is missing (exit 0 once active)'),
    ),
    async (client, project, o, ref) => {
      const found = await client.verifyDomain(project.id, (await findDomain(client, project, ref)).id);
      if (found.status !== 'active') process.exitCode = 1;
      if (o.json) return console.log(JSON.stringify(found));
      const d = printableDeep(found);
      show(d, project, verdict(d), false);
    },
    (_o, ref) => checkRef(ref),
  );

  projectAction<ProjectOptions & { yes?: boolean }, [string]>(
    withRef(
      group
        .command('rm')
        .description('remove a custom domain: Hoist stops serving it at once (asks first on a terminal)')
        .option('-y, --yes', 'remove without asking (needed when not on a terminal)'),
    ),
    async (client, project, o, ref) => {
      const d = await findDomain(client, project, ref);
      // As the question shows them: a hostname or a name cannot drive the terminal to pass for another.
      const [hostname, name] = printableDeep([d.hostname, project.name]);
      await confirm(o.yes, `Remove ${hostname} from ${name}? Hoist stops serving it there at once. [y/N]`);
      await client.removeDomain(project.id, d.id);
      if (o.json) console.log(JSON.stringify({ removed: d.id, hostname: d.hostname, project: project.id }));
      else console.log(`Removed ${hostname} from ${name}; Hoist no longer serves it (its DNS records can go).`);
    },
    (o, ref) => {
      checkRef(ref);
      needConfirmation(
        o.yes,
        `the custom domain ${ref}`,
        `hoist domains rm ${ref}${o.project ? ` --project ${o.project}` : ''}`,
      );
    },
  );
}

const checkRef = (ref: string) => {
  if (!ref.trim()) throw usage('name the custom domain: its hostname or id (hoist domains ls lists them)');
};

/** The project's domain `ref` names (its id, or its hostname in any case, a trailing dot or not); throws not_found. */
async function findDomain(client: HoistClient, project: Project, ref: string): Promise<Domain> {
  const wanted = ref.trim().toLowerCase().replace(/\.$/, '');
  const found = (await client.domains(project.id)).find((d) =>
    UUID.test(wanted) ? d.id === wanted : d.hostname === wanted,
  );
  if (found) return found;
  throw new CliError(
    `No custom domain ${JSON.stringify(ref)} on ${project.name}: ` +
      `\`hoist domains ls --project ${project.slug}\` lists them.`,
    1,
    'not_found',
  );
}

/** What a verify found, and what is still missing, in one line. */
function verdict(d: Domain): string {
  switch (d.status) {
    case 'active':
      return `${d.hostname} is active: found both DNS records.`;
    case 'verified':
      return (
        `${d.hostname} is verified: found the TXT record (the name is yours); ` +
        'still missing: the CNAME. Not served yet.'
      );
    case 'pending':
      return `${d.hostname} is still pending: the TXT record does not hold the token yet. Not served.`;
    default:
      return `${d.hostname} is ${STATES[d.status] ?? d.status}.`;
  }
}

/**
 * Prints `lead`, the state (unless `withState` is false: the lead says it), what is wrong (the server's message), the
 * DNS records and what to do next.
 */
function show(d: Domain, project: Project, lead: string, withState = true): void {
  console.log(lead);
  if (withState) console.log(`  Status: ${STATES[d.status] ?? d.status}`);
  if (d.message) console.log(`  ${printable(d.message)}`);
  if (d.status === 'active') console.log(`  Served at ${d.url}. Keep these DNS records (they are checked again):`);
  else console.log('  Create these DNS records at your DNS provider:');
  printTable(
    ['type', 'name', 'value'],
    d.records.map((r) => [r.type, r.name, r.value]),
    '',
    '    ',
  );
  const verify = `hoist domains verify ${d.hostname} --project ${printableDeep(project.slug)}`;
  if (d.status === 'failed') console.log(`  \`${verify}\` checks it again; or remove it with hoist domains rm.`);
  else if (d.status !== 'active')
    console.log(`  Then run \`${verify}\`, or wait: Hoist checks on its own (next at ${d.next_check_at}).`);
}
