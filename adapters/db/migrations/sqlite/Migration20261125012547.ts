import { Migration } from '@mikro-orm/migrations';

export class Migration20261125012547 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`kept_files\` (\`id\` text not null, \`account_id\` text not null, \`sha256\` text not null, \`size\` integer not null, \`last_used_at\` datetime not null, \`stored\` integer not null default false, \`claim\` text null, primary key (\`id\`));`);
    this.addSql(`create index \`kept_files_account_id_last_used_at_index\` on \`kept_files\` (\`account_id\`, \`last_used_at\`);`);
    this.addSql(`create index \`kept_files_last_used_at_index\` on \`kept_files\` (\`last_used_at\`);`);
    this.addSql(`create unique index \`kept_files_account_id_sha256_unique\` on \`kept_files\` (\`account_id\`, \`sha256\`);`);
  }

}
