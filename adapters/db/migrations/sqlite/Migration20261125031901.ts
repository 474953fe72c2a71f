import { Migration } from '@mikro-orm/migrations';

export class Migration20261125031901 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`build_log_chunks\` add column \`in_storage\` integer not null default false;`);
    this.addSql(`create index \`build_log_chunks_in_storage_created_at_index\` on \`build_log_chunks\` (\`in_storage\`, \`created_at\`);`);
  }

}
