import { Migration } from '@mikro-orm/migrations';

export class Migration20261128220637 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`deploy_hooks\` (\`id\` text not null, \`account_id\` text not null, \`project_id\` text not null, \`name\` text not null, \`token_hash\` text not null, \`created_at\` datetime not null, \`last_triggered_at\` datetime null, primary key (\`id\`));`);
    this.addSql(`create index \`deploy_hooks_project_id_index\` on \`deploy_hooks\` (\`project_id\`);`);
    this.addSql(`create unique index \`deploy_hooks_token_hash_unique\` on \`deploy_hooks\` (\`token_hash\`);`);
  }

}
