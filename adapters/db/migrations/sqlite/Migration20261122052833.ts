import { Migration } from '@mikro-orm/migrations';

export class Migration20261122052833 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`upload_sessions\` (\`id\` text not null, \`account_id\` text not null, \`token_hash\` text not null, \`project_id\` text null, \`name\` text null, \`visibility\` text null, \`options\` json not null, \`filename\` text null, \`transport\` text not null, \`declared_size\` integer null, \`received_bytes\` integer not null default 0, \`parts\` json not null, \`storage_key\` text not null, \`multipart_upload_id\` text null, \`operation_id\` text null, \`expires_at\` datetime not null, \`used_at\` datetime null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`upload_sessions_token_hash_unique\` on \`upload_sessions\` (\`token_hash\`);`);
    this.addSql(`create index \`upload_sessions_account_id_expires_at_index\` on \`upload_sessions\` (\`account_id\`, \`expires_at\`);`);
  }

}
