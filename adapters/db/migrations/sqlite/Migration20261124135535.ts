import { Migration } from '@mikro-orm/migrations';

export class Migration20261124135535 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`rate_hits\` (\`id\` text not null, \`key\` text not null, \`at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`rate_hits_key_at_index\` on \`rate_hits\` (\`key\`, \`at\`);`);
    this.addSql(`create index \`rate_hits_at_index\` on \`rate_hits\` (\`at\`);`);

    this.addSql(`drop table if exists \`rate_buckets\`;`);
  }

}
