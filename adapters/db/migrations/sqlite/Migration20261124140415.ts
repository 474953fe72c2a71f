import { Migration } from '@mikro-orm/migrations';

export class Migration20261124140415 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`drop index \`domains_project_id_index\`;`);
    this.addSql(`drop index \`domains_hostname_unique\`;`);

    this.addSql(`alter table \`domains\` add column \`owned_hostname\` text null;`);
    // Domains that were verified hold their hostname (it was unique until now).
    this.addSql(`update \`domains\` set \`owned_hostname\` = \`hostname\` where \`status\` in ('verified', 'active', 'misconfigured');`);
    this.addSql(`create unique index \`domains_owned_hostname_unique\` on \`domains\` (\`owned_hostname\`);`);
    this.addSql(`create index \`domains_hostname_index\` on \`domains\` (\`hostname\`);`);
    this.addSql(`create unique index \`domains_project_id_hostname_unique\` on \`domains\` (\`project_id\`, \`hostname\`);`);
  }

}
