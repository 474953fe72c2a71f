import { Migration } from '@mikro-orm/migrations';

export class Migration20261129020611 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`project_usage\` (\`project_id\` text not null, \`hour\` integer not null, \`requests\` integer not null default 0, \`bytes\` bigint not null default 0, \`status2xx\` integer not null default 0, \`status3xx\` integer not null default 0, \`status4xx\` integer not null default 0, \`status5xx\` integer not null default 0, primary key (\`project_id\`, \`hour\`));`);
  }

}
