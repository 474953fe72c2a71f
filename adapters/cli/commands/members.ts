import { Argument, Option, type Command } from 'commander';
import type { MemberRole } from '../../../client/hoist-client.js';
import { checkId, remoteAction, remoteOptions as remote, type RemoteOptions } from '../remote/remote-action.js';
import { printableDeep } from '../remote/terminal.js';
import { printTable } from './print-table.js';

const ROLES = ['owner', 'member'];
const checkMember = (id: string) => checkId(id, 'member', 'hoist members ls');

/** `hoist members ls | invite | role | rm`: the people of your account (owners manage them). */
export default function members(program: Command): void {
  const group = program
    .command('members')
    .description('manage the people of your account (every member works on all its projects; owners manage members)');

  remote(group.command('ls').description('list members: id, e-mail, role and whether they are active yet')).action(
    remoteAction<RemoteOptions, []>(async ({ client }, o) => {
      const list = await client.members();
      if (o.json) console.log(JSON.stringify(list));
      else
        printTable(
          ['id', 'email', 'role', 'status', 'since'],
          list.map((m) => [m.id, m.email, m.role, m.status, m.created_at]),
          'no members',
        );
    }),
  );

  remote(
    group
      .command('invite')
      .description('invite an e-mail address; it gets a token by mail to choose its password (owners only)')
      .argument('<email>', 'the address to invite')
      .addOption(new Option('--role <role>', 'owner or member').choices(ROLES).default('member')),
  ).action(
    remoteAction<RemoteOptions & { role: MemberRole }, [string]>(async ({ client }, o, email) => {
      const m = await client.inviteMember(email, o.role);
      if (o.json) return console.log(JSON.stringify(m));
      const { email: invited, role, id } = printableDeep(m);
      console.log(`Invited ${invited} as ${role} (${id}); the invitation mail carries a token for 7 days.`);
    }),
  );

  remote(
    group
      .command('role')
      .description("change a member's role (owners only)")
      .argument('<memberID>', 'member id (see hoist members ls)')
      .addArgument(new Argument('<role>', 'owner or member').choices(ROLES)),
  ).action(
    remoteAction<RemoteOptions, [string, MemberRole]>(
      async ({ client }, o, id, role) => {
        const m = await client.setMemberRole(id, role);
        if (o.json) return console.log(JSON.stringify(m));
        const shown = printableDeep(m);
        console.log(`${shown.email} is now ${shown.role}.`);
      },
      { check: (_o, id) => checkMember(id) },
    ),
  );

  remote(
    group
      .command('rm')
      .description('remove a member: their tokens stop at once (owners; a member may remove themselves)')
      .argument('<memberID>', 'member id (see hoist members ls)'),
  ).action(
    remoteAction<RemoteOptions, [string]>(
      async ({ client }, o, id) => {
        await client.removeMember(id);
        if (o.json) console.log(JSON.stringify({ removed: id }));
        else console.log(`Removed member ${id}; their tokens no longer work.`);
      },
      { check: (_o, id) => checkMember(id) },
    ),
  );
}
