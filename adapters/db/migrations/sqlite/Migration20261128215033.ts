import { Migration } from '@mikro-orm/migrations';

export class Migration20261128215033 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`webhooks\` (\`id\` text not null, \`account_id\` text not null, \`project_id\` text not null, \`url\` text not null, \`events\` text not null, \`secret_sealed\` text not null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`webhooks_project_id_index\` on \`webhooks\` (\`project_id\`);`);

    this.addSql(`create table \`webhook_deliveries\` (\`id\` text not null, \`webhook_id\` text not null, \`project_id\` text not null, \`operation_id\` text null, \`event\` text not null, \`payload\` text null, \`status\` text not null default 'pending', \`attempts\` integer not null default 0, \`next_attempt_at\` datetime null, \`response_status\` integer null, \`last_error\` text null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`webhook_deliveries_project_id_index\` on \`webhook_deliveries\` (\`project_id\`);`);
    this.addSql(`create index \`webhook_deliveries_webhook_id_created_at_index\` on \`webhook_deliveries\` (\`webhook_id\`, \`created_at\`);`);
    this.addSql(`create index \`webhook_deliveries_status_next_attempt_at_index\` on \`webhook_deliveries\` (\`status\`, \`next_attempt_at\`);`);
  }

}
