import { Migration } from '@mikro-orm/migrations';

export class Migration20261122081131 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`access_codes\` (\`id\` text not null, \`project_id\` text not null, \`grant_id\` text not null, \`code_hash\` text not null, \`attempts\` integer not null default 0, \`expires_at\` datetime not null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`access_codes_project_id_grant_id_index\` on \`access_codes\` (\`project_id\`, \`grant_id\`);`);

    this.addSql(`create table \`access_grants\` (\`id\` text not null, \`project_id\` text not null, \`email\` text not null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`access_grants_project_id_index\` on \`access_grants\` (\`project_id\`);`);
    this.addSql(`create unique index \`access_grants_project_id_email_unique\` on \`access_grants\` (\`project_id\`, \`email\`);`);

    this.addSql(`create table \`domains\` (\`id\` text not null, \`account_id\` text not null, \`project_id\` text not null, \`hostname\` text not null, \`status\` text not null default 'pending', \`token\` text not null, \`message\` text null, \`failures\` integer not null default 0, \`verified_at\` datetime null, \`activated_at\` datetime null, \`last_checked_at\` datetime null, \`next_check_at\` datetime not null, \`claimed_until\` datetime null, \`claimed_by\` text null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`domains_hostname_unique\` on \`domains\` (\`hostname\`);`);
    this.addSql(`create index \`domains_project_id_index\` on \`domains\` (\`project_id\`);`);
    this.addSql(`create index \`domains_account_id_index\` on \`domains\` (\`account_id\`);`);
    this.addSql(`create index \`domains_next_check_at_index\` on \`domains\` (\`next_check_at\`);`);

    this.addSql(`alter table \`projects\` add column \`access_password_hash\` text null;`);
  }

}
