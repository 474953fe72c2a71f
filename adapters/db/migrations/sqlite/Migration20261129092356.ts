import { Migration } from '@mikro-orm/migrations';

export class Migration20261129092356 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`agent_grants\` (\`id\` text not null, \`user_id\` text not null, \`name\` text not null, \`source\` text not null, \`client_id\` text null, \`created_at\` datetime not null, \`expires_at\` datetime not null, \`revoked_at\` datetime null, \`code_hash\` text null, \`redirect_uri\` text null, \`code_challenge\` text null, \`refresh_generation\` integer null, primary key (\`id\`));`);
    this.addSql(`create index \`agent_grants_user_id_index\` on \`agent_grants\` (\`user_id\`);`);
  }

}
